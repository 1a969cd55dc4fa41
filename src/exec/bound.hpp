#pragma once
// The bound form of a step, below the unit: what the item kinds' bind fills and their replay reads
// (src/exec/<kind>_item.cpp), and what the unit's replay loop walks (src/unit/). A kind's bind sees
// the plan and the unit only through two views (PlanView, UnitView), so the kinds never include
// the unit's own headers (tests/lint/check_layers.py).
//   BindContext c{plan.view(), unit_view(u), b, index};
//   kind_of(it).bind(c, it, plan.steps[i], b.items.back());
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "encore/exec_item.hpp"
#include "core/buffer_impl.hpp"
#include "core/owned_event.hpp"
#include "core/size_ref.hpp"
#include "core/var_state.hpp"
#include "exec/enqueue.hpp"
#include "exec/payloads.hpp"

namespace encore::detail {

inline bool has(Access a, Access bit) { return (static_cast<uint8_t>(a) & static_cast<uint8_t>(bit)) != 0; }

// One item as replay needs it: entries and variable slots instead of handles.
struct PlanStep {
  bool has_local = false;
  uint32_t dims = 0;
  std::array<SizeRef, 3> g{}, l{};
  std::span<const uint32_t> ops;  // per operand: its entry (in the plan's one array of them)
  std::vector<uint32_t> var_ref;  // per argument: its variable slot (variable arguments only)
  bool cross_device = false;      // some operand lives on another device than the queue (a copy between devices)
};

// A host, branch or loop item as bound (src/exec/flow_items.cpp binds it, src/unit/flow_replay.cpp
// runs it): everything its replay needs, allocated here.
struct Flow;
struct FlowBound {
  const Flow* flow = nullptr;
  // host: the bytes read (one buffer each, sized at bind), the buffers they come from now, the
  // declared Variables' slots and the values its function gives
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<const unsigned char*> data;
  std::vector<size_t> sizes;
  std::vector<BufferImpl*> src;
  std::vector<uint32_t> slots;
  std::vector<VarValue> values, old;
  std::vector<uint8_t> given;
  bool verdict = false;          // a loop condition's last answer
  // branch, loop: the slot of its Variable; the bound index where each child sequence starts, and its end
  uint32_t var = 0;
  std::vector<uint32_t> starts;
};

// One item ready to enqueue: a small header the replay loop reads (its replay, its queue, its order
// around it) and a payload of the kind's own type, read only in the kind's file
// (src/exec/<kind>_item.cpp; the kernel kind's is src/exec/kernel_bound.hpp), made in
// Binding::payloads in bind order.
//   auto& k = payload<KernelBound>(x);
struct KindOps;
struct Binding;
struct BoundItem {
  void (*replay)(Binding&, BoundItem&) = nullptr;  // the kind's replay
  void* payload = nullptr;                          // the kind's bound data
  DeviceImpl* dev = nullptr;                        // the queue it runs on
  int32_t ends_device = -1;  // the last replayed item on plan device d with an event of its own: it ends the replay there
  uint32_t item = 0;         // index in the plan
  const KindOps* ops = nullptr;
  // its replay on the device's lane `lane` after `waits` (n of them, may be 0), setting `*done`
  // (when given) to its event: set by the binds of kinds that can (kernels, fills, copies on one
  // queue); a unit with a replayed item without one replays in order (src/unit/concurrent.cpp)
  void (*replay_after)(BoundItem& x, uint32_t lane, NativeEvent* const* waits, uint32_t n, NativeEvent** done) = nullptr;
  // order around it
  int32_t split = -1;                // split-phase call (begin and finish items): its index in Binding::splits
  int32_t signal = -1;               // cross-device order: event slot set after it runs
  uint32_t wait_at = 0, wait_n = 0;  // its slots in Binding::wait_slots
  bool orders_itself = false;        // takes its waits and signal itself (set by its kind's bind: a peer copy)
  bool finishes = false;             // the finish item of a split-phase call (placed by plan.sync)
  bool flow = false;                 // host, branch, loop: a node of the flow walk (its payload a FlowBound)
};

template <class T> T& payload(const BoundItem& x) { return *static_cast<T*>(x.payload); }

// A bound item's use of an entry: its operand k, argument `arg` (ItemAccess::arg).
struct OperandUse {
  uint32_t bound, k, arg;
};
// A kernel argument or launch size that follows a Variable (set_var reaches it here, without the kernel's payload).
struct VarUse {
  BackendKernel* k;  // the kernel object it is an argument of
  uint32_t arg;
  DType as;
};
struct SizeUse {
  uint32_t bound;  // the launch's index in Binding::items: its sizes are re-resolved into its payload when the Variable changes
};
// A by-value kernel argument passed from a host input's bytes (Arg::host_slot): set from that
// slot's bytes bound now before each replay enqueues anything (OpenCL copies them at once).
struct HostArg {
  BackendKernel* kernel;
  uint32_t arg, slot;
  uint64_t off;
  size_t n;
};

// One replay's cross-device events (plan.sync's slots: markers, peer copies' own events), owned and
// released together when the replay ends. Raw pointers by slot, so a backend call sets a slot
// through a NativeEvent** and wait lists are gathered from them.
class SyncEvents {
 public:
  SyncEvents() = default;
  SyncEvents(const SyncEvents&) = delete;
  SyncEvents& operator=(const SyncEvents&) = delete;
  ~SyncEvents() { reset(); }
  // One slot per entry of `devices` (the device whose queue makes that slot's event).
  void init(std::vector<DeviceImpl*> devices) {
    reset();
    dev_ = std::move(devices);
    ev_.assign(dev_.size(), nullptr);
  }
  size_t size() const noexcept { return ev_.size(); }
  // A slot for a backend call to set (empty when set: each slot is set once per replay).
  NativeEvent*& operator[](size_t slot) noexcept { return ev_[slot]; }
  NativeEvent* operator[](size_t slot) const noexcept { return ev_[slot]; }
  void set(size_t slot, NativeEvent* e) noexcept {
    OwnedEvent old(dev_[slot], ev_[slot]);
    ev_[slot] = e;
  }
  void reset() noexcept {
    for (size_t i = 0; i < ev_.size(); ++i) OwnedEvent(dev_[i], std::exchange(ev_[i], nullptr));
  }

 private:
  std::vector<NativeEvent*> ev_;
  std::vector<DeviceImpl*> dev_;
};

// A concurrent replay's order on the device's lanes (concurrent.cpp), made at bind, so a replay
// only gathers wait lists into `gather`. Indexes are bound items'.
struct ConcurrentOrder {
  bool on = false;
  uint32_t lanes = 0;                     // lanes dealt (lane 0 is the device's queue)
  std::vector<uint32_t> used;             // the lanes other than 0 that hold items
  std::vector<uint32_t> order;            // replayed items in enqueue order (step order)
  std::vector<uint32_t> lane;             // per replayed item: its lane
  std::vector<uint32_t> wait_at, wait_n;  // per replayed item: its event waits in `waits`
  std::vector<uint32_t> waits;            // items of other lanes, or the start marker (UINT32_MAX)
  std::vector<uint8_t> signals;           // per replayed item: an item of another lane waits for its event
  std::vector<uint8_t> flush_before;      // per replayed item: lanes (bits) to submit before it
  std::vector<NativeEvent*> ev;           // per replayed item: its event in this replay (signals only)
  std::vector<NativeEvent*> gather;       // one wait list
  std::vector<NativeEvent*> lane_end;     // per used lane: its end marker in this replay
};

// Device objects for one plan. Replayed items come first in `items` (step order, with the finish
// items of split-phase calls where plan.sync places them), then one-time items (step order).
struct Binding {
  std::vector<Buffer> arenas;  // first: destroyed last, after the entries' buffers that may be views of them
  // What every replay reads, first and together (see Plan in src/unit/unit.hpp).
  std::vector<BoundItem> items;
  std::vector<Buffer> current;                  // per entry
  std::vector<HostArg> host_args;               // by-value arguments from host inputs
  std::vector<BufferImpl*> written_roots;       // bumped after each replay (fixed and planned storages)
  std::vector<uint32_t> written_entries;        // input entries written (their storage follows the inputs)
  // split-phase calls: their begin items (bound indexes), and which this replay began and has not
  // finished (a replay that fails cancels those)
  std::vector<uint32_t> splits;
  // where this replay's completion goes ([device]) while the kernels marked ends_device take their
  // own events as it; null: this replay takes no event, or markers after it instead
  OwnedEvent* end_events = nullptr;
  uint32_t n_replay = 0;
  uint32_t first_end = 0;  // the first bound item marked ends_device (n_replay: none)
  // this replay's place in the in-flight bound (InFlight::Turn::place): the staging copy its host
  // uploads use, whose previous user has completed
  uint32_t place = 0;
  ConcurrentOrder conc;                         // its first member, `on`, read by every replay
  std::vector<uint8_t> open;
  std::vector<std::vector<OperandUse>> uses;    // per entry: the bound operands that point at it
  std::vector<uint8_t> takes_handle;            // per entry: some use takes its kernel-argument handle
  Payloads payloads;                            // the items' per-kind data
  std::vector<std::vector<VarUse>> var_args;    // per variable: kernel arguments
  std::vector<std::vector<SizeUse>> var_sizes;  // per variable: launches whose sizes use it
  std::vector<std::unique_ptr<unsigned char[]>> staging;
  std::vector<NativeMem*> native_mems;          // native items' buffers (sized once: items point into it)
  // cross-device order (plan.sync): this replay's events by slot, and a buffer to gather wait lists
  std::vector<uint32_t> wait_slots;
  SyncEvents events;
  std::vector<NativeEvent*> gather;
};

// This replay's events at `slots`, gathered into one array (null where an item did not run).
inline NativeEvent* const* gather_events(Binding& bd, const uint32_t* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) bd.gather[i] = bd.events[slots[i]];
  return bd.gather.data();
}

// Cancels the split-phase calls this replay began and did not finish (after an error); never throws.
void cancel_open(Binding& b) noexcept;

// What a kind's bind reads of the plan (Plan::view()): the steps, the launch sizes' programs and
// variables, and the cross-device order's per-item marks.
struct PlanView {
  const std::vector<PlanStep>& steps;
  const std::vector<SizeProgram>& size_exprs;  // launch sizes that are not affine (SizeRef::expr)
  const std::vector<Variable>& vars;           // the plan's variables, by slot
  std::span<const uint8_t> peer;               // per item: a copy enqueued by copy_peer (CrossSync::peer)
  std::span<const uint8_t> split;              // per item: a split-phase native call (CrossSync::split)
};

// What a kind's bind reads of the unit: its variable values now, where its host inputs' bytes are
// bound now (the array stays put while the unit lives: an upload keeps a pointer into it), and the
// replays it keeps in flight (staging copies per upload from a host input).
struct UnitView {
  const std::vector<VarValue>& values;
  const unsigned char* const* host_now;
  uint32_t flight_depth;
};

// What a kind's bind step works with: the two views, the binding under construction and the index
// the bound item has in Binding::items.
struct BindContext {
  PlanView p;
  UnitView u;
  Binding& b;
  uint32_t bound;
};

// Resolves launch `x`'s sizes (src/exec/kernel_item.cpp) under variable values `vals` (ArgumentError
// when invalid): into its payload when `apply`, else only checked.
void resolve_sizes(const PlanView& p, BoundItem& x, const std::vector<VarValue>& vals, bool apply);

}  // namespace encore::detail
