#pragma once
// Switches for tests: mutations the property tests must catch, and NULL-device counters. They exist
// only in the test build (ENCORE_TESTING, src/testing.cpp): in the library each reads as off.
#include <atomic>
#include <cstddef>
#include <cstdint>

#ifdef ENCORE_TESTING
namespace encore::testing {
// Prune with tinygrad's rule (one-time = not depending on the inputs), which freezes RNG state and
// state cycles.
extern bool prune_like_tinygrad;
// A replay ignores changed versions of what one-time items read or write (never re-runs them).
extern bool ignore_versions;
// plan_memory places the second temp at the first one's offset even when their lives overlap.
extern bool break_planner;
// Steps that decide, replayed wrongly: a two-way branch takes the other alternative; a host item
// neither reads nor sets anything (its Variables keep their last values); a counted loop runs one
// iteration fewer (when it runs any).
extern bool flow_other_branch;
extern bool flow_stale_host;
extern bool flow_loop_short;
// Concurrent replay (src/unit/concurrent.cpp), at bind: on for a step of one chain too; its items
// run, one after another on the in-order queue, in the order their dependencies allow that strays
// farthest from the step's; the last item with a dependency loses its first.
extern bool force_concurrent;
extern bool concurrent_reorder;
extern bool drop_dependency;
// Binds that turned concurrent replay on, so far.
extern std::atomic<uint64_t> concurrent_binds;
// Kernel arguments set on NULL-device kernel objects so far (replay re-sets only changes).
extern std::atomic<uint64_t> null_arg_sets;
// Trial runs of the capture's access check so far (a launch run again on scratch copies to try its
// encore::out claims: src/exec/access_check.cpp).
extern std::atomic<uint64_t> access_trial_runs;
// The bytes of snapshots the access check holds before a launch waits for them (0: its 64 MiB), and
// how many times a launch did so far (the capture's end not counted).
extern std::atomic<size_t> access_check_window;
extern std::atomic<uint64_t> access_check_settles;
// Allocations NULL devices made and have not given back (raw_alloc less raw_free).
extern std::atomic<int64_t> null_live_allocations;
// Work-group limit of NULL-device kernel objects made from now on (0: the device's maximum).
extern std::atomic<size_t> null_kernel_work_group_limit;
// An OpenCL device (a cl_device_id) that no context takes from now on; platform contexts are then
// made afresh for every device opened, outside the cache (null: none).
extern std::atomic<void*> fail_context_device;
// The device allocator cannot remember a freed allocation (as when the host is out of memory): it
// gives it back to the device instead (Allocator::free).
extern std::atomic<bool> fail_cache_insert;
// OpenCL programs whose parameter types came from a metadata build (-cl-kernel-arg-info) because
// the source could not be read (not counting ENCORE_CHECK_SIGNATURES's comparison builds).
extern std::atomic<uint64_t> cl_metadata_builds;
// No thread can be started for work beside the caller's (as at the process's thread limit):
// detail::async_beside defers it to get() instead; and how many times it did so far.
extern std::atomic<bool> fail_thread_start;
extern std::atomic<uint64_t> beside_deferred;
}  // namespace encore::testing
#define ENCORE_TESTING_IS(name) (::encore::testing::name)
#define ENCORE_TESTING_DO(...) __VA_ARGS__
#else
#define ENCORE_TESTING_IS(name) false
#define ENCORE_TESTING_DO(...)
#endif
