// The replay loop: a flat pass over the bound items through the shared enqueue path. Every check
// happened before (at bind, bind_input, bind_var, check_inputs): a replay enqueues the whole step.
// No allocation, lookup or compile here.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "testing.hpp"
#include "exec/flow.hpp"
#include "exec/kernel_bound.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

void check_inputs(UnitImpl& u) {
  const Plan& p = u.plan;
  const size_t n = u.inputs.size();
  // aliasing: only pairs with a slot bound since the last check, each pair once (both slots of a
  // ping-pong pair change every call)
  for (uint32_t s : u.changed_slots)
    for (size_t t = 0; t < n; ++t) {
      if (t == s || (t < s && u.slot_changed[t])) continue;
      bool now = u.inputs[s].overlaps(u.inputs[t]);
      if (now != static_cast<bool>(p.captured_overlap[s][t])) {
        size_t i = std::min<size_t>(s, t), j = std::max<size_t>(s, t);
        throw JitError(now ? "inputs " + std::to_string(i) + " and " + std::to_string(j) + " share storage (" + u.inputs[i].describe() + ", " +
                                 u.inputs[j].describe() + ") but were different buffers at capture; replaying would alias them silently"
                           : "inputs " + std::to_string(i) + " and " + std::to_string(j) + " were the same storage at capture but are different buffers now (" +
                                 u.inputs[i].describe() + ", " + u.inputs[j].describe() + ")");
      }
    }
  // an input that is this unit's own storage (a fresh output, or an internal buffer taken from
  // items()): eager execution would read it before writing a new buffer in its place, so replay
  // reads a private copy taken first (a step without either, or an input from elsewhere, looks
  // nothing up: Plan::is_own checks the capture id first)
  const bool any_own = !p.fresh_output_roots.empty() || !p.internal.empty();
  // (copied[] may change before a later slot is refused: it is read only by a replay, which this
  // refusal stops, and by a bind, which takes each slot's input as copied[] says)
  for (uint32_t s : u.changed_slots) {
    const bool alias = any_own && p.is_own(u.inputs[s].impl()->root());
    if (alias && p.slot_written[s]) {
      const bool output = p.is_fresh_output(u.inputs[s].impl()->root());
      throw JitError("input " + std::to_string(s) + " is " + u.inputs[s].describe() +
                     (output ? ", an output of this same step, and the step writes that input: in eager execution the output would be a new buffer, "
                               "so replay cannot give both results in one buffer. Pass a copy, or set fresh_outputs"
                             : ", a buffer this same step makes and uses inside it (ExecutionUnit::items), and the step writes that input: "
                               "in eager execution that buffer would be a new one, so replay cannot give both results in one buffer. Pass a copy"));
    }
    if (alias && !u.alias_copy[s]) {
      u.alias_copy[s] = Buffer(u.inputs[s].device(), u.inputs[s].dtype(), u.inputs[s].count());
      u.alias_copy[s].impl()->ensure_allocated();
    }
    u.copied[s] = alias;
  }
  for (uint32_t s : u.changed_slots) {
    const Buffer& in = u.copied[s] ? u.alias_copy[s] : u.inputs[s];
    for (uint32_t e : p.slot_entries[s]) point_entry(u, e, entry_buffer(u, e, in));
    u.slot_changed[s] = 0;
  }
  u.changed_slots.clear();
}

// The replay of one bound item: its kind's (src/exec/<kind>_item.cpp), a launch taken inline.
static inline void run_item(Binding& bd, BoundItem& b) {
  if (b.replay == replay_launch) [[likely]] replay_launch(bd, b);
  else b.replay(bd, b);
}

// Tracing (encore/profile.hpp): items with events of their own (kernels) by them, others at host times.
static void run_item_traced(const Plan& p, Binding& bd, BoundItem& b) {
  if (b.ops->replay_event) {
    // its own event, or none (the NULL device: traced at host times); nothing when it ran nothing
    OwnedEvent ev;
    const LaunchDims* ld = b.ops->launch ? b.ops->launch(b) : nullptr;
    if (b.ops->replay_event(b, ev.out(b.dev))) trace_item(*b.dev, std::move(ev), p.items[b.item], "replay", ld ? ld->dims : 0, ld ? ld->gws : nullptr);
    return;
  }
  run_item(bd, b);
  trace_item(*b.dev, nullptr, p.items[b.item], "replay", 0, nullptr);
}

// ENCORE_DEBUG=2: one item at a time, synchronously, with its line (slow by design).
static void run_item_debug(const Plan& p, Binding& bd, BoundItem& b) {
  auto t0 = std::chrono::steady_clock::now();
  run_item(bd, b);
  b.dev->finish();
  static constexpr LaunchDims none{};
  const LaunchDims& ld = b.ops->launch ? *b.ops->launch(b) : none;
  debug_print_item(p.items[b.item], ld.dims, ld.gws, ld.lws, 0,
                   std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

// Whether something one-time items read or write changed since they last ran (they run again).
static bool once_stale(const UnitImpl& u) {
  bool stale = false;
  if (!ENCORE_TESTING_IS(ignore_versions))
    for (auto& [r, ver] : u.once_versions) stale = stale || r->version.load(std::memory_order_acquire) != ver;
  return stale;
}

template <class Run> static void run_items(UnitImpl& u, Binding& b, Run run) {
  if (!once_stale(u)) {
    // the items from first_end on may end their device's replay with their own event (the loop
    // before them stays as plain as it was: a branch per item there cost ~3 ns of ~8 on NULL)
    const uint32_t plain = b.end_events ? b.first_end : b.n_replay;
    for (uint32_t i = 0; i < plain; ++i) run(b, b.items[i]);
    for (uint32_t i = plain; i < b.n_replay; ++i) {
      BoundItem& x = b.items[i];
      if (x.ends_device >= 0) x.ops->replay_event(x, b.end_events[x.ends_device].out(x.dev));
      else run(b, x);
    }
    return;
  }
  b.end_events = nullptr;  // one-time items may run after a device's last replayed item: markers end this replay
  // The versions this re-run answers for are taken before it: a write another thread makes while
  // the one-time items run bumps past them, so the next replay sees it and runs them again.
  for (auto& [r, ver] : u.once_versions) ver = r->version.load(std::memory_order_acquire);
  // One-time items re-run at their places in step order: an earlier replayed item may read bytes a
  // one-time item writes later in the step, and in eager execution it sees them before the rebuild.
  const uint32_t n = static_cast<uint32_t>(b.items.size());
  uint32_t k = b.n_replay;
  for (uint32_t i = 0; i < b.n_replay; ++i) {
    for (; k < n && b.items[k].item < b.items[i].item; ++k) run(b, b.items[k]);
    run(b, b.items[i]);
  }
  for (; k < n; ++k) run(b, b.items[k]);
  // our own writes: the remembered version follows each bump we make
  for (uint32_t w : u.once_written) {
    auto& [r, ver] = u.once_versions[w];
    if (r->version.fetch_add(1, std::memory_order_acq_rel) == ver) ++ver;
  }
}

// A step that decides (encore/control.hpp): the same walk, as a tree. A branch replays the child
// sequence its Variable picks, a counted loop its body that many times, a loop_while its body
// until its condition item (the body's last) says stop; host items run in place. Children follow
// their item contiguously (they are never one-time), so a child sequence is a range of `items`.
// One-time items (top level only) re-run at their places as in run_items.
// `show` (ENCORE_DEBUG=2, a trace): each decision is also told (trace_decision, debug_print_decision).
static void show_decision(const ExecItem& it, DeviceImpl& dev, std::string what, double t0) {
  // the label is the unit's to give: trace/ sits below the item kinds
  if (debug_level() >= 2) debug_print_decision(it.device().id(), kind_of(it).label(it), what, trace_now_us() - t0);
  if (trace_active()) trace_decision(dev, kind_of(it).label(it), std::move(what), t0);
}

template <class Run> static void run_seq(UnitImpl& u, Binding& b, uint32_t i, uint32_t end, Run& run, uint32_t* once, bool show) {
  const uint32_t n = static_cast<uint32_t>(b.items.size());
  while (i < end) {
    BoundItem& x = b.items[i];
    if (once)
      for (; *once < n && b.items[*once].item < x.item; ++*once) run(b, b.items[*once]);
    if (!x.flow) {
      // the last item at top level may end its device's replay with its own event (plan.flow_tail)
      if (x.ends_device >= 0 && b.end_events) x.ops->replay_event(x, b.end_events[x.ends_device].out(x.dev));
      else run(b, x);
      ++i;
      continue;
    }
    FlowBound& f = payload<FlowBound>(x);
    const ExecItem& it = u.plan.items[x.item];
    const double t0 = show ? trace_now_us() : 0;
    if (it.kind == ItemKind::host) {
      if (!ENCORE_TESTING_IS(flow_stale_host) || it.flow->cond) replay_host_item(u, b, x);
      if (show) show_decision(it, *x.dev, host_decision(u, x), t0);
      ++i;
      continue;
    }
    const int64_t v = it.args.empty() ? 0 : u.vars[f.var].i;
    if (it.kind == ItemKind::branch) {
      size_t a = f.flow->when ? (v != 0 ? 0 : 1) : static_cast<size_t>(v);
      if (ENCORE_TESTING_IS(flow_other_branch) && f.flow->when) a = 1 - a;
      if (v < 0 || a + 1 >= f.starts.size()) throw JitError(kind_of(it).title(it) + ": value " + std::to_string(v) + " picks no alternative");
      if (show)
        show_decision(it, *x.dev, f.flow->when ? (a == 0 ? "then (" : "else (") + it.args[0].var->name() + " = " + std::to_string(v) + ")"
                                              : "alternative " + std::to_string(a), t0);
      run_seq(u, b, f.starts[a], f.starts[a + 1], run, nullptr, show);
    } else if (f.flow->counted) {
      const int64_t times = ENCORE_TESTING_IS(flow_loop_short) && v > 0 ? v - 1 : v;
      if (show) show_decision(it, *x.dev, std::to_string(times) + " iterations", t0);
      // a body of plain items (the common case) runs as the plain loop does: the walk per
      // iteration cost ~3 ns of ~6 per one-kernel iteration on NULL
      bool flat = true;
      for (uint32_t j = f.starts[0]; j < f.starts[1] && flat; ++j) flat = !b.items[j].flow && b.items[j].ends_device < 0;
      if (flat)
        for (int64_t k = 0; k < times; ++k)
          for (uint32_t j = f.starts[0]; j < f.starts[1]; ++j) run(b, b.items[j]);
      else
        for (int64_t k = 0; k < times; ++k) run_seq(u, b, f.starts[0], f.starts[1], run, nullptr, show);
    } else {
      for (int64_t k = 1;; ++k) {
        run_seq(u, b, f.starts[0], f.starts[1], run, nullptr, show);
        if (!payload<FlowBound>(b.items[f.starts[1] - 1]).verdict) {
          if (show) show_decision(it, *x.dev, std::to_string(k) + " iterations", t0);
          break;
        }
        if (k == f.flow->max_iterations)
          throw ArgumentError(kind_of(it).title(it) + ": its condition still held after max_iterations = " + std::to_string(k) +
                              " iterations (raise the bound, or check the condition)");
      }
    }
    i = f.starts.back();
  }
}

template <class Run> static void run_flow(UnitImpl& u, Binding& b, Run run) {
  const bool show = debug_level() >= 2 || trace_active();
  if (!once_stale(u)) {
    run_seq(u, b, 0, b.n_replay, run, nullptr, show);
    return;
  }
  b.end_events = nullptr;  // one-time items may run after the last replayed item: markers end this replay
  for (auto& [r, ver] : u.once_versions) ver = r->version.load(std::memory_order_acquire);
  uint32_t k = b.n_replay;
  run_seq(u, b, 0, b.n_replay, run, &k, show);
  for (; k < b.items.size(); ++k) run(b, b.items[k]);
  for (uint32_t w : u.once_written) {
    auto& [r, ver] = u.once_versions[w];
    if (r->version.fetch_add(1, std::memory_order_acq_rel) == ver) ++ver;
  }
}

// plan.sync around each item (see sync.cpp): barriers and markers between devices of one context.
// This replay's events are released at the end, or when an enqueue fails.
static void barrier(DeviceImpl& dev, Binding& b, const uint32_t* slots, size_t n) {
  dev.enqueue_barrier(gather_events(b, slots, n), static_cast<uint32_t>(n));
}

template <class Run> static void run_items_ordered(UnitImpl& u, Binding& b, Run run) {
  const CrossSync& s = u.plan.sync;
  struct ThisReplay {  // its events are this replay's alone
    SyncEvents& events;
    ~ThisReplay() { events.reset(); }
  } scope{b.events};
  for (auto [d, slot] : s.start) b.events.set(slot, u.plan.devices[d]->enqueue_marker());
  run_items(u, b, [&](Binding&, BoundItem& x) {
    if (x.wait_n && !x.orders_itself) barrier(*x.dev, b, &b.wait_slots[x.wait_at], x.wait_n);
    run(b, x);
    if (x.signal >= 0 && !x.orders_itself) b.events.set(static_cast<size_t>(x.signal), x.dev->enqueue_marker());
  });
  for (size_t d = 0; d < s.end.size(); ++d)
    if (!s.end[d].empty()) barrier(*u.plan.devices[d], b, s.end[d].data(), s.end[d].size());
}

UnitImpl::~UnitImpl() {
  try {
    flight.settle(plan.devices);
  } catch (...) {
  }
}

// The binding this run replays: bound afresh where it went stale, its entries pointed at the inputs
// bound since the last run, and its by-value arguments from host inputs set from this call's bytes.
static Binding& ready_binding(UnitImpl& u) {
  // a TinyJit's shared arena grew (its replays still read the smaller one), or a host item's set
  // failed part way through a replay
  if (u.bound && ((u.arena_pool && u.arena_gen != u.arena_pool->gen) || u.rebind)) {
    u.flight.wait();
    u.bound.reset();
  }
  if (!u.bound) bind_unit(u);
  if (!u.changed_slots.empty()) check_inputs(u);
  Binding& b = *u.bound;
  for (const HostArg& h : b.host_args) h.kernel->set_arg(h.arg, h.n, u.host_now[h.slot] + h.off);
  return b;
}

// One pass over the items, by the loop this replay needs.
static void replay_items(UnitImpl& u, Binding& b, bool debug) {
  if (u.plan.flow) {
    // one device, no cross-device order (make_plan refuses the rest)
    if (debug) run_flow(u, b, [&](Binding& bd, BoundItem& x) { run_item_debug(u.plan, bd, x); });
    else if (trace_active()) run_flow(u, b, [&](Binding& bd, BoundItem& x) { run_item_traced(u.plan, bd, x); });
    else run_flow(u, b, [](Binding& bd, BoundItem& x) { run_item(bd, x); });  // a lambda: inlined, where a function pointer is called through
  } else if (debug) run_items_ordered(u, b, [&](Binding& bd, BoundItem& x) { run_item_debug(u.plan, bd, x); });
  else if (trace_active()) run_items_ordered(u, b, [&](Binding& bd, BoundItem& x) { run_item_traced(u.plan, bd, x); });
  // concurrent (concurrent.cpp) but where one-time items run again: then in order, in step order
  else if (b.conc.on && !once_stale(u)) run_concurrent(u, b);
  else if (u.plan.sync.ordered()) run_items_ordered(u, b, run_item);
  else run_items(u, b, run_item);
}

// What the replay may have written is not what it was (also after a part of it ran).
static void count_writes(Binding& b) {
  for (BufferImpl* r : b.written_roots) r->version.fetch_add(1, std::memory_order_acq_rel);
  for (uint32_t e : b.written_entries) b.current[e].impl()->bump();
}

// A replay that failed part way: let what it queued finish (the next replay may then reuse its
// staging copies, which host uploads read), and leave it no completion events.
static void after_failed_replay(UnitImpl& u, Binding& b, OwnedEvent* ends) noexcept {
  b.end_events = nullptr;
  count_writes(b);
  for (auto& d : u.plan.devices) try {
      d->finish();
    } catch (...) {
    }
  if (ends)
    for (size_t d = 0; d < u.plan.devices.size(); ++d) ends[d].reset();
}

// The thread replaying a unit, marked in the unit itself (UnitMark, unit.hpp): a thread id
// compare-exchanged, where a chain of thread-local frames cost a __tls_get_addr per check in a
// shared library (five per TinyJit call). Another thread replaying or binding the same unit at the
// same time is refused there, and so is a native call of this replay calling back into it.
void run_unit(UnitImpl& u, OwnedEvent* done) {
  static const bool debug = debug_level() >= 2;
  UnitMark mark(u, "run");
  Binding& b = ready_binding(u);
  const InFlight::Turn turn = u.flight.begin(u.plan.devices);
  for (uint32_t s = 0; s < u.copied.size(); ++s)
    if (u.copied[s]) enqueue_copy(*u.alias_copy[s].impl(), *u.inputs[s].impl(), u.alias_copy[s].nbytes(), nullptr);
  b.place = turn.place;
  OwnedEvent* ends = done ? done : turn.ends;
  // the plain loop ends each device's replay with its last kernel's event; the others with markers
  b.end_events = ends && !debug && !trace_active() && !u.plan.sync.ordered() && (!u.plan.flow || u.plan.flow_tail) && !b.conc.on ? ends : nullptr;
  struct CancelOpen {  // the split-phase calls a failed replay began and did not finish
    Binding& b;
    ~CancelOpen() {
      if (!b.splits.empty()) cancel_open(b);
    }
  } cancel{b};
  try {
    replay_items(u, b, debug);
  } catch (...) {
    after_failed_replay(u, b, ends);
    throw;
  }
  count_writes(b);
  if (ends) {
    b.end_events = nullptr;
    for (size_t d = 0; d < u.plan.devices.size(); ++d)
      if (!ends[d]) ends[d] = OwnedEvent(u.plan.devices[d].get(), u.plan.devices[d]->enqueue_marker());
  }
  u.flight.end(turn, done, u.plan.devices);
}

}  // namespace encore::detail
