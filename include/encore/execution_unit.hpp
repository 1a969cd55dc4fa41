#pragma once
// ExecutionUnit: a captured step, bound and ready to replay. One-time items are pruned, internal
// temporaries planned into one arena, kernel arguments pre-set; a replay re-sets only what changed.
//   encore::Capture cap;                       // record this frame
//   size_t in = cap.add_input(frame_input);
//   engine_step(dev, frame_input, state);      // issue work normally
//   encore::ExecutionUnit unit = cap.end();
//   unit.bind_input(in, next_input).bind_var(0, 17)();   // hot path: by slot, no allocation
// Threads: one unit is used by one thread at a time (binding and running change its state): guard
// it, or give each thread its own. A run, bind or free_intermediates while another thread runs,
// binds or frees the same unit is refused with a JitError (never a silent mix of two threads'
// bindings). Different units replay concurrently, on one device too. A Capture records only the
// work of the thread that made it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/event.hpp"
#include "encore/exec_item.hpp"
#include "encore/variable.hpp"

namespace encore {

// How a captured step replays (a Capture's unit, and TinyJit's through JitOptions::unit).
//   encore::Capture cap(encore::UnitOptions{.prune = false});
struct UnitOptions {
  bool prune = true;           // drop one-time items from replay (docs/capture-and-replay.md)
  bool plan = true;            // plan internal temporaries into one arena (the same page)
  // Replays in flight at most (0: unbounded). A replay first waits for the completion of the one
  // this many calls before, so a loop that never reads back cannot run ahead of the device without
  // bound (host memory for queued work grows with the queue). So a replay can block: never queue
  // more than this many replays behind an event that the same thread completes only later.
  uint32_t max_in_flight = 3;
  // A short step keeps more replays in flight: at least this many items' worth (at most 256
  // replays), because waiting on a replay only a few launches back lets the device run dry while
  // the host wakes up (a one-kernel step: 3.0x a hand-written loop at a bound of 3 replays, 0.9x at
  // 16, on PoCL here). 0: exactly max_in_flight replays. The deeper bound costs no event per replay
  // (replays share waits in groups), and a loop that waits for the whole queue every call takes no
  // event at all: docs/engines-and-c-api.md ("bounded work in flight").
  uint32_t min_items_in_flight = 64;
  // Replay independent items of a step concurrently (docs/performance.md): on a device that gives
  // more than one in-order queue (PoCL does; NULL has one), a step whose replayed items form at
  // least two independent chains (UnitStats::chains) is dealt over up to one queue per compute unit
  // (2 to 8), each chain on one queue in step order, an item waiting through events only for the
  // items of other queues it depends on over byte ranges (reads after writes, writes after reads
  // and writes, temps that share arena bytes included), all ordered after the work queued before
  // the run and before the work queued after it. A step of one chain, a step that decides (host
  // items, branches, loops), one over several devices, with an upload or a native call, a replay
  // that re-runs one-time items, and ENCORE_DEBUG=2 or a trace keep the in-order path. The results
  // are the same either way. The arena then keeps independent chains' temps apart (more bytes,
  // UnitStats::temp_bytes_planned), so that the chains need not wait for each other. Off by default: on PoCL 3.1 (2 cores) it pays only where kernels carry
  // work a second core can take (8 chains of 10 one-group kernels of 128 multiply-adds per item:
  // 0.42x a hand-written loop) and costs a little on launch-bound steps (the same of 1: 1.07x,
  // 1.04x in order).
  bool concurrent = false;
  // Throws ArgumentError naming the field, what is allowed and what was found: max_in_flight at
  // most 1024 (each replay in flight holds an event per device: a garbage bound would allocate
  // gigabytes). Capture, TinyJit (JitOptions::validate) and the C API's encore_capture_begin and
  // encore_jit_create all call it, so both APIs accept the same options.
  ENCORE_API void validate() const;
};

// What a capture accepts and checks while it records (Capture, TinyJit through JitOptions::capture).
//   encore::Capture cap({}, encore::CaptureOptions{.allow_copyout = true});
struct CaptureOptions {
  bool allow_copyout = false;  // permit copyout during capture (its value is frozen into the capture)
  // TinyJit: call 0 is recorded too, and at the end of call 1 compared with it; a kernel scalar,
  // launch size or closure buffer that changed is a JitError at capture (see encore/jit.hpp). Off:
  // for a step meant to change once after call 0 (the capture then keeps call 1's step). A Capture
  // records one call: it compares with an earlier capture of the step given by Capture::check_against.
  bool check_closure = true;
  // At capture (a Capture, a TinyJit's call 1), each launch argument whose access lets replay prune
  // or reorder the launch is tried on that call's data: an in (or unreferenced) argument whose
  // source has no const must come out of the launch unchanged, and the kernel is run a second time
  // on scratch copies with each encore::out buffer's bytes changed, which must not change what it
  // writes (not where the source proves it: a parameter the body only stores into,
  // KernelParam::inferred_store_only). A failed claim is a JitError naming the kernel and the
  // argument: an in claim's from Capture::end (TinyJit: call 1), its reads compared once the
  // capture is done; an out claim's from the launch. Costs the reads, one wait at the end, and a
  // waited second run of each launch with an unproven out argument, at capture only; off: claims
  // are trusted.
  bool check_access = true;
  // Record without running: the work issued during the capture is recorded only (nothing runs,
  // nothing is compiled at launch), and the unit's first run runs every item, one-time ones
  // included. For a step rebuilt from a description whose buffers already hold its state
  // (workload::load_unit); the first run then gives what a replay after the capture would. A step
  // with host items, branches or loops is refused at end() (JitError): those must run to be
  // captured. Capture only: TinyJit's calls 0 and 1 must run (JitOptions::validate refuses it).
  bool record_only = false;
  // Every combination is valid today; called wherever UnitOptions::validate is, so a bound added
  // to a later field is checked in the C++ and the C API alike.
  ENCORE_API void validate() const;
};

struct UnitStats {
  size_t items = 0, items_pruned = 0, items_replayed = 0;
  size_t inputs = 0, variables = 0;
  // Planned temporaries (aligned bytes): their sum, the arena's size, and the peak of those live at
  // once, which no arena can be under. Lives are as the planner sees them: a temp used in a loop
  // lives through the loop, and in a concurrent unit (UnitOptions::concurrent) the temps of
  // independent chains live side by side, so there the bound can be above the in-order one.
  uint64_t temp_bytes_naive = 0, temp_bytes_planned = 0, temp_bytes_lower_bound = 0;
  size_t planned_temps = 0;
  // Independent chains of the replayed items: their count over the longest chain of dependencies
  // among them, rounded up (1: one chain, every item waiting for the one before). Rounding hides
  // how much is off that chain (6 items around a chain of 5 are 2 chains): longest_chain says it.
  size_t chains = 0;
  // The replayed items on the longest chain of dependencies (0 with none replayed). At most
  // items_replayed - longest_chain items can run beside it: what concurrent replay may overlap.
  size_t longest_chain = 0;
};

namespace detail { struct UnitImpl; struct UnitAccess; struct CaptureAccess; }

class ENCORE_API ExecutionUnit {
 public:
  ExecutionUnit();
  ~ExecutionUnit();
  ExecutionUnit(ExecutionUnit&&) noexcept;
  ExecutionUnit& operator=(ExecutionUnit&&) noexcept;

  const std::vector<ExecItem>& items() const;  // as captured, in order
  std::vector<bool> one_time() const;          // per item: pruned from replay
  const UnitStats& stats() const;
  // The devices whose queues a run uses (each once): where to order it after other work, and
  // what to mark for its completion.
  std::span<const Device> devices() const;
  size_t num_inputs() const;
  const Buffer& captured_input(size_t slot) const;
  const Buffer& input(size_t slot) const;      // currently bound
  size_t num_variables() const;
  const Variable& variable(size_t slot) const;
  // Slot of a variable the items use; JitError when they do not use it.
  size_t variable_slot(const Variable& v) const;
  // The value bound now for variable `slot` (what the next run uses).
  BoundVar variable_value(size_t slot) const;
  // Buffers handed out to the caller at capture (never planned).
  const std::vector<Buffer>& outputs() const;
  // Whether b's storage is internal to the step: created during the capture and referred to by
  // nothing outside the recorded items (planned temporaries and unplanned internal buffers).
  bool is_internal(const Buffer& b) const;
  // Whether b's storage is an output created during the capture (replay overwrites it in place).
  bool is_fresh_output(const Buffer& b) const;

  // Hot path: swap an input (same dtype, count, device; JitError otherwise) / set a variable.
  // An input that is one of the unit's own buffers (a fresh output fed back, an internal buffer
  // taken from items()) is read through a private copy taken before the items, as eager execution
  // reads it before making those buffers anew; the next run is a JitError if the step writes it.
  ExecutionUnit& bind_input(size_t slot, const Buffer& b);
  ExecutionUnit& bind_var(size_t slot, int64_t value);
  ExecutionUnit& bind_var_f(size_t slot, double value);
  ExecutionUnit& bind(const BoundVar& v);
  // Host inputs (Capture::add_host_input; a TinyJit's span arguments): the bytes the next runs
  // upload where the capture copied in from host input `slot`, and pass as by-value arguments made
  // from it (encore::bytes_from), exactly as many as at capture (JitError otherwise). A run copies them while it enqueues (into staging made at bind, one copy
  // per replay in flight; a unit with max_in_flight 0 uploads them blocking), so they may change
  // or go once run returns; bind again before a run that must see other bytes, and never let a run
  // see freed ones. Until bound, a slot holds the bytes seen at capture.
  size_t num_host_inputs() const;
  ExecutionUnit& bind_host_input(size_t slot, const void* data, size_t bytes);
  template <class T> ExecutionUnit& bind_host_input(size_t slot, std::span<const T> s) { return bind_host_input(slot, s.data(), s.size_bytes()); }
  // Convenient form: captured input -> new buffer, variables by handle.
  ExecutionUnit& update(const std::map<Buffer, Buffer>& buffers, std::span<const BoundVar> var_vals = {});

  // Enqueues the step; asynchronous (copyout of a result waits for it).
  void operator()();
  // Enqueues the step after `wait_for` completed (events of any device, an engine's cl_events
  // through encore/opencl.hpp) and returns its completion: per device, the step's last kernel's own
  // event, or a marker where the replay does not end with a kernel on that device (or runs item by
  // item: ENCORE_DEBUG=2, ENCORE_PROFILE); flushed. For the in-flight bound both run forms keep the
  // same events at the last replay of each group (see UnitOptions::min_items_in_flight; every
  // replay for a long step); operator() takes none at the others, nor ever when unbounded.
  Event run(std::span<const Event> wait_for = {});
  // Runs the step, waits for it, and returns how long it took in seconds: device time (the device
  // clock from before the step's first item to after its last) where times_on_device(), else the
  // host's wall time from enqueue to completion.
  double run_and_wait();
  // Whether run_and_wait reports device time: one device, queue with profiling (ENCORE_PROFILING=1,
  // or an adopted queue created with CL_QUEUE_PROFILING_ENABLE).
  bool times_on_device() const;

  // Concatenation: pruning and planning are re-run over the whole.
  ExecutionUnit operator+(const ExecutionUnit& o) const;
  // Releases the arena of temporaries; the next run allocates it again. A TinyJit's units share
  // one arena per device: this drops this unit's hold on it, and the arena goes back to the device
  // when no other unit of the jit is bound to it (call it on each, while no call of the jit runs).
  void free_intermediates();
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  friend struct detail::UnitImpl;
  friend struct detail::UnitAccess;
  std::unique_ptr<detail::UnitImpl> impl_;
};

// An explicit capture scope on the calling thread: every launch, copy and copyin issued on this
// thread between construction and end() is recorded (and also runs eagerly).
class ENCORE_API Capture {
 public:
  explicit Capture(UnitOptions unit = {}, CaptureOptions capture = {});
  ~Capture();  // abandons the capture if end() was not called
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  size_t add_input(const Buffer& b);   // returns the input's slot
  // A host input, returns its slot: a copyin issued after this whose source lies inside these
  // bytes is replayed from the bytes bound to the slot (ExecutionUnit::bind_host_input), not from a
  // snapshot; so is a by-value argument made from bytes inside them (encore::bytes_from). The bytes
  // must stay alive until end(), which keeps a copy as the slot's first binding. Any other copyin
  // or by-value argument is replayed with the bytes it had at capture.
  size_t add_host_input(const void* data, size_t bytes);
  template <class T> size_t add_host_input(std::span<const T> s) { return add_host_input(s.data(), s.size_bytes()); }
  void add_output(const Buffer& b);
  size_t items_recorded() const;
  // The capture check for this path: end() compares this capture with `previous`, a unit an earlier
  // Capture of the same step made (frame N-1 for frame N), item by item as TinyJit compares its
  // calls 0 and 1, and throws a JitError at the first kernel scalar, launch size, by-value value,
  // closure buffer or upload that differs: replay would freeze it. Without it nothing is compared
  // (a Capture sees one frame): a plain dt passed to a kernel becomes a constant of the unit.
  // Called before the frame's work, it also sizes the record for `previous`'s items.
  //   encore::Capture c0; frame(dt0); auto prev = c0.end();
  //   encore::Capture c1; c1.check_against(prev); frame(dt1); auto unit = c1.end();  // JitError: dt
  void check_against(const ExecutionUnit& previous);
  // Ends recording and builds the unit. JitError when nothing was recorded, or when check_against's
  // comparison finds a difference.
  ExecutionUnit end();

 private:
  friend struct detail::CaptureAccess;  // TinyJit captures through this class (src/unit/jit.cpp)
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace encore
