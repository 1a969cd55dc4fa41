#pragma once
// The unit's private structure, shared by the files of src/unit/ (jit.cpp among them: TinyJit builds its
// units, shares their arenas and binds their slots), the item kinds' bind and replay (through
// src/exec/kind.hpp, which sees the plan and the unit through views: src/exec/bound.hpp) and the internal tests:
//   Plan     — what to run: a pure function of (items, inputs, outputs, options); no device calls.
//   Binding  — how to run it on its devices now: kernel objects with arguments set, the arena,
//              the current buffer of every entry, staging memory. Rebuilt after free_intermediates.
//   UnitImpl — a plan, its binding, and what persists across rebinding (bound inputs, variable
//              values, the versions one-time items last saw).
#include <array>
#include <atomic>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "encore/memory_planner.hpp"
#include "encore/execution_unit.hpp"
#include "core/owned_event.hpp"
#include "exec/enqueue.hpp"
#include "core/buffer_impl.hpp"
#include "core/var_state.hpp"
#include "unit/in_flight.hpp"
#include "unit/view_cache.hpp"
#include "core/size_ref.hpp"
#include "exec/bound.hpp"

namespace encore::detail {


// An item's use of an entry, one per operand (the buffers an item touches, src/exec/kind.hpp),
// computed once by the plan for pruning, planning, sync and the binding.
struct ItemAccess {
  uint32_t entry;
  Access access;
  uint32_t arg;  // the operand's place in its item (Operand::arg)
};

// A list per item, kept as one array and each item's offset into it: a vector per item was one
// host allocation per captured item when planned and one free when the unit went.
template <class T> struct PerItem {
  std::vector<T> all;
  std::vector<uint32_t> at{0};  // item i's list is all[at[i], at[i + 1])
  std::span<const T> operator[](size_t i) const { return {all.data() + at[i], at[i + 1] - at[i]}; }
  size_t size() const { return at.size() - 1; }
};

// One distinct buffer handle used by the items, and where its bytes live on replay.
struct PlanEntry {
  enum class Kind : uint8_t { fixed, input, planned } kind = Kind::fixed;
  uint32_t slot = 0;    // input: its slot; planned: its arena
  uint64_t rel = 0;     // input: byte offset inside the input; planned: byte offset in the arena
  Buffer captured;      // as recorded (an unallocated placeholder for planned temps)
  bool written = false; // a replayed item writes it
  // fixed: its storage is the unit's own (an internal buffer or a fresh output), so no input's
  // bytes are ever its bytes on replay (check_inputs reads such an input through a private copy)
  bool unit_private = false;
};

// Order between devices on replay (sync.cpp): markers after some items, barriers before others,
// so that a copy between two devices of one context waits only for what it depends on.
struct CrossSync {
  uint32_t slots = 0;                                // events per replay (0: nothing to order)
  std::vector<int32_t> signal;                       // per item: slot of a marker enqueued after it, or -1
  std::vector<std::vector<uint32_t>> waits;          // per item: slots a barrier before it waits for
  std::vector<uint8_t> peer;                         // per item: a copy enqueued by copy_peer
  std::vector<std::pair<uint32_t, uint32_t>> start;  // (device index, slot): markers before the items
  std::vector<std::vector<uint32_t>> end;            // per device index: slots a barrier after the items waits for
  std::vector<uint32_t> slot_device;                 // per slot: index of the device that makes its event
  // split-phase native items (collectives): a begin item at their place and a finish item placed
  // before the first later item that touches their buffers (finish_before[n]: at the end)
  std::vector<uint8_t> split;                        // per item
  std::vector<std::vector<uint32_t>> finish_before;  // per item, and one past the last: split items to finish there, in order
  bool any_split = false;
  bool ordered() const { return slots != 0; }
};

// Order among the replayed items of one device, for replaying them concurrently (concurrent.cpp):
// each item's dependencies over byte ranges, reduced to those no other path implies.
struct ItemDeps {
  bool eligible = false;                 // one device, no flow, no split-phase or cross-device items
  uint32_t longest = 0;                  // items on the longest chain of dependencies
  std::vector<std::vector<uint32_t>> on; // per item (plan index): the earlier replayed items it waits for
  const char* why = "";                  // when not eligible: the reason (ENCORE_DEBUG=1)
};

struct Plan {
  UnitOptions opt;
  bool flow = false;            // some host, branch or loop item: replayed by run_flow (flow_replay.cpp)
  bool flow_tail = false;       // ... and its last replayed item is a plain item at top level (its event may end a replay)
  // What every replay and every input check reads, first and together: between two calls of a
  // launch-bound loop the device's work evicts them, and each cache line is a miss for the next
  // call (with Binding's and UnitImpl's, 100 -> 91 lines a call under cachegrind in bench-replay's
  // stencil_null_cold; the call's time did not change measurably). sync's first member is its `slots`.
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  std::vector<std::vector<uint32_t>> slot_entries; // per input slot: its entries
  std::vector<std::vector<uint8_t>> captured_overlap;  // [i][j]: captured inputs i and j overlap
  std::vector<uint64_t> capture_ids;               // the captures its items come from (BufferImpl::capture_id)
  std::vector<BufferImpl*> fresh_output_roots;     // outputs created during the capture
  std::vector<BufferImpl*> internal;               // roots created in the capture that nothing outside refers to
  CrossSync sync;
  std::vector<bool> slot_written;
  std::vector<ExecItem> items;  // as captured, planned temps replaced by placeholders
  std::vector<PlanStep> steps;  // per item
  std::vector<bool> one_time;
  std::vector<PlanEntry> entries;
  PerItem<ItemAccess> access;                      // per item: the entries it reads and writes
  std::vector<uint32_t> operand_entries;           // per operand of every item: its entry (what steps[i].ops views)
  std::vector<Buffer> inputs, outputs;            // captured
  std::vector<Variable> vars;                      // in order of first use
  std::vector<VarValue> var_init;                  // their values at capture
  std::vector<SizeProgram> size_exprs;             // launch sizes that are not affine (SizeRef::expr)
  struct Arena {
    std::shared_ptr<DeviceImpl> dev;
    uint64_t bytes = 0;
  };
  std::vector<Arena> arenas;
  ItemDeps deps;
  std::vector<std::string> keep_notes;             // ENCORE_DEBUG=1: why items that look one-time are kept
  UnitStats stats;

  Plan() = default;
  Plan(Plan&&) = default;
  Plan& operator=(Plan&&) = default;
  Plan(const Plan&) = delete;  // steps' operand lists view operand_entries: a copy's would view the original's
  Plan& operator=(const Plan&) = delete;

  bool is_internal(const BufferImpl* root) const;
  PlanView view() const { return {steps, size_exprs, vars, sync.peer, sync.split}; }
  bool is_fresh_output(const BufferImpl* root) const;
  // The storage `root` is this unit's own: made during its capture, and internal or a fresh output.
  bool is_own(const BufferImpl* root) const;
  // Storages the items touch that outlive a call and are not inputs (closure state), as base buffers.
  std::vector<Buffer> state_storages() const;
};

// Pure: classification, the one-time set, the arena plan, resolved arguments. JitError on a step
// that cannot be replayed (refused here, never at a later call).
Plan make_plan(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs, UnitOptions opt,
               std::vector<BufferImpl*> internal, const std::vector<uint64_t>& capture_ids);

// sync.cpp: the device whose queue runs an item, and the cross-device order of a plan.
const std::shared_ptr<DeviceImpl>& queue_of(const ExecItem& it);
CrossSync plan_sync(const Plan& p);
// concurrent.cpp: the replayed items' dependencies (after plan_sync: it reads p.sync).
ItemDeps plan_deps(const Plan& p);

// Roots created during capture `capture_id` that no handle outside `items` refers to.
std::vector<BufferImpl*> find_internal(const std::vector<ExecItem>& items, uint64_t capture_id);



// The arenas of a TinyJit's units, one per device, shared: only one of its units runs at a time, and
// each device's queue runs in order, so they may use the same bytes. An arena grows to the largest a
// unit asks for; units bound to an older, smaller one rebind before their next run (`gen`).
struct ArenaPool {
  std::vector<Buffer> arenas;
  uint64_t gen = 0;
  Buffer get(const std::shared_ptr<DeviceImpl>& dev, uint64_t bytes);
  // Releases the arenas no unit is bound to any more (a unit's free_intermediates): the next unit to
  // bind allocates one again.
  void release_unused();
};

struct CallRecord;
struct UnitImpl {
  static UnitImpl& of(const ExecutionUnit& u);
  Plan plan;  // first: destroyed last, so the devices outlive the binding and the events below
  // What every call reads (run_unit, check_inputs, a TinyJit's binding), together, as in Plan.
  // The thread using the unit now (none: a default id): inside run_unit, or inside a call that binds
  // or frees it. Taken by one compare-exchange (UnitMark), so a second thread is refused, and so are
  // the unit's own calls from a native item of its replay
  std::atomic<std::thread::id> replaying_on{};
  std::unique_ptr<Binding> bound;  // null until bound, and after free_intermediates
  std::shared_ptr<ArenaPool> arena_pool; // a TinyJit's shared arenas (null: arenas of its own)
  uint64_t arena_gen = 0;                // the pool's generation when bound
  bool rebind = false;                   // a host item's set failed part way: bind afresh before the next run
  bool versions_taken = false;           // at the first bind: later binds must still see writes since
  // CaptureOptions::record_only: the one-time items never ran, so the first run runs them (their
  // versions are taken as changed)
  bool once_unrun = false;
  // what persists across rebinding
  std::vector<uint32_t> changed_slots;   // bound since the last aliasing check
  std::vector<uint8_t> slot_changed;
  std::vector<uint8_t> copied;           // per slot: replay reads alias_copy (taken first) instead of the input
  std::vector<Buffer> inputs;            // bound now, per slot
  std::vector<ViewCache> views;          // per entry: views of recent inputs
  // host inputs, per slot: the bytes the next run uploads from (bind_host_input; the size is the
  // capture's)
  std::vector<const unsigned char*> host_now;
  std::vector<std::pair<BufferImpl*, uint64_t>> once_versions;  // what one-time items read or write
  std::vector<uint32_t> once_written;    // indexes into once_versions of the storages they write
  InFlight flight;                       // the bound on replays in flight (in_flight.hpp)
  std::vector<std::vector<unsigned char>> host_captured;  // per host input slot: the capture's bytes (uploaded until the slot is bound)
  std::vector<Buffer> alias_copy;        // per slot: private copy of an input that is this unit's own fresh output
  std::vector<VarValue> vars;
  // An explicit Capture's items in the capture check's compact form, for the next capture of the
  // same step to compare with (Capture::check_against); null for TinyJit's and concatenated units.
  std::shared_ptr<const CallRecord> recorded;
  std::vector<Device> device_handles;    // plan.devices as public handles (ExecutionUnit::devices)
  ~UnitImpl();  // settles the replays in flight first (InFlight::settle): they read its memory
};

// binding.cpp
void bind_unit(UnitImpl& u);
// The buffer entry `e` uses when its input slot is bound to `in`: `in` itself or the entry's view
// of it (ViewCache::get), good until the entry's next call.
const Buffer& entry_buffer(UnitImpl& u, uint32_t e, const Buffer& in);
void point_entry(UnitImpl& u, uint32_t e, const Buffer& b);
// Sets variable `slot` to `v`: every check (bounds of argument types, launch sizes) before any
// change, so a failure leaves the unit as it was.
// `in_replay`: a host item's set (flow_replay.cpp): a failure marks the binding for a rebind
// (UnitImpl::rebind) instead of dropping it under the replay that uses it.
void set_var(UnitImpl& u, uint32_t slot, VarValue v, bool in_replay = false);
// flow_replay.cpp: a host item's replay (its reads, its function, its Variables set all or none).
void replay_host_item(UnitImpl& u, Binding& b, BoundItem& x);
// What a host item just decided, for the trace and ENCORE_DEBUG=2 ("live = 37", "again").
std::string host_decision(const UnitImpl& u, const BoundItem& x);
// concurrent.cpp: whether bound unit `u` replays concurrently (sets b.conc; at the end of bind_unit),
// and one such replay (one-time items not stale). `ends` given: set to the replay's completion.
void bind_concurrent(UnitImpl& u, Binding& b);
// concurrent.cpp: for a unit that may replay concurrently, the lives of planned temps (`uses`, by
// item and temp) lengthened so that temps of independent chains never share arena bytes.
// group_of_entry: per plan entry, the buffer whose bytes it names (entries of one group conflict).
void extend_concurrent_lives(const Plan& p, const std::vector<uint32_t>& group_of_entry, std::vector<TempUse>& uses);
void run_concurrent(UnitImpl& u, Binding& b);
// replay.cpp
void check_inputs(UnitImpl& u);
// Replays once. `done` given ([device]): set to the replay's completion on each device (its last
// kernel's own event, or a marker; null on NULL), whatever its place in its group.
void run_unit(UnitImpl& u, OwnedEvent* done = nullptr);
// JitError when u is in use (UnitMark), by this thread (a native call inside its replay calls back
// into it) or by another: a replay reads its binding, arena and variables throughout, so `op`
// cannot change them meanwhile.
void check_not_replaying(const UnitImpl& u, const char* op);
[[noreturn]] void unit_in_use(const char* op, std::thread::id holder);

// One thread's use of a unit, for the length of a replay or of a call that binds or frees it: one
// compare-exchange on replaying_on takes it (of two threads entering at once, one is refused with
// a JitError), a release store gives it back. No lock, no allocation: what a replay adds to its cost.
struct UnitMark {
  UnitImpl& u;
  UnitMark(UnitImpl& x, const char* op) : u(x) {
    std::thread::id none{};
    if (!u.replaying_on.compare_exchange_strong(none, std::this_thread::get_id(), std::memory_order_acquire,
                                                std::memory_order_relaxed)) [[unlikely]]
      unit_in_use(op, none);
  }
  ~UnitMark() { u.replaying_on.store(std::thread::id(), std::memory_order_release); }
  UnitMark(const UnitMark&) = delete;
  UnitMark& operator=(const UnitMark&) = delete;
};

// Verify mode's query: storages the unit touches that outlive a call and are not inputs.
std::vector<Buffer> unit_state_storages(const ExecutionUnit& unit);
// TinyJit's input binding: every slot as bind_input, the buffers moved in (execution_unit.cpp).
void take_inputs(ExecutionUnit& unit, std::vector<Buffer>& ins);

struct UnitAccess {
  static ExecutionUnit wrap(std::unique_ptr<UnitImpl> p);
};
// UnitOptions::validate, the field named as the caller spells it ("UnitOptions::max_in_flight" for
// a Capture, "JitOptions::unit.max_in_flight" for a TinyJit; c_words.cpp has both).
void check_unit_options(const UnitOptions& o, const char* max_in_flight_name);
std::unique_ptr<UnitImpl> make_unit(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs,
                                    UnitOptions opt, std::vector<BufferImpl*> internal, const std::vector<uint64_t>& capture_ids,
                                    std::shared_ptr<ArenaPool> pool = {}, std::vector<std::vector<unsigned char>> host_inputs = {});

}  // namespace encore::detail
