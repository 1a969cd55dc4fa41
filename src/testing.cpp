// Definitions of the test-only switches (src/testing.hpp); compiled into the test build only.
#include "testing.hpp"

namespace encore::testing {
bool prune_like_tinygrad = false;
bool ignore_versions = false;
bool break_planner = false;
bool flow_other_branch = false;
bool flow_stale_host = false;
bool flow_loop_short = false;
bool force_concurrent = false;
bool concurrent_reorder = false;
bool drop_dependency = false;
std::atomic<uint64_t> concurrent_binds{0};
std::atomic<uint64_t> null_arg_sets{0};
std::atomic<int64_t> null_live_allocations{0};
std::atomic<uint64_t> access_trial_runs{0};
std::atomic<size_t> access_check_window{0};
std::atomic<uint64_t> access_check_settles{0};
std::atomic<size_t> null_kernel_work_group_limit{0};
std::atomic<void*> fail_context_device{nullptr};
std::atomic<bool> fail_cache_insert{false};
std::atomic<bool> fail_thread_start{false};
std::atomic<uint64_t> beside_deferred{0};
std::atomic<uint64_t> cl_metadata_builds{0};
}  // namespace encore::testing
