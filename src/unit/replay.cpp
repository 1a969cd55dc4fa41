// The replay loop: a flat pass over the bound items through the shared enqueue path. Every check
// happened before (at bind, bind_input, bind_var, check_inputs): a replay enqueues the whole step.
// No allocation, lookup or compile here.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "testing.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

void check_inputs(UnitImpl& u) {
  const Plan& p = u.plan;
  const size_t n = u.inputs.size();
  // aliasing: only pairs with a slot bound since the last check
  for (uint32_t s : u.changed_slots)
    for (size_t t = 0; t < n; ++t) {
      if (t == s) continue;
      bool now = u.inputs[s].overlaps(u.inputs[t]);
      if (now != static_cast<bool>(p.captured_overlap[s][t])) {
        size_t i = std::min<size_t>(s, t), j = std::max<size_t>(s, t);
        throw JitError(now ? "inputs " + std::to_string(i) + " and " + std::to_string(j) + " share storage (" + u.inputs[i].describe() + ", " +
                                 u.inputs[j].describe() + ") but were different buffers at capture; replaying would alias them silently"
                           : "inputs " + std::to_string(i) + " and " + std::to_string(j) + " were the same storage at capture but are different buffers now (" +
                                 u.inputs[i].describe() + ", " + u.inputs[j].describe() + ")");
      }
    }
  // an input that is this unit's own fresh output: eager execution would read it before writing a
  // new output buffer, so replay reads a private copy taken first
  for (uint32_t s : u.changed_slots) {
    bool alias = p.is_fresh_output(u.inputs[s].impl()->root());
    if (alias && p.slot_written[s])
      throw JitError("input " + std::to_string(s) + " is " + u.inputs[s].describe() +
                     ", an output of this same step, and the step writes that input: in eager execution the output would be a new buffer, "
                     "so replay cannot give both results in one buffer. Pass a copy, or set fresh_outputs");
    if (alias && !u.staging[s]) {
      u.staging[s] = Buffer(u.inputs[s].device(), u.inputs[s].dtype(), u.inputs[s].count());
      u.staging[s].impl()->ensure_allocated();
    }
  }
  for (uint32_t s : u.changed_slots) {
    bool alias = p.is_fresh_output(u.inputs[s].impl()->root());
    u.staged[s] = alias;
    const Buffer& in = alias ? u.staging[s] : u.inputs[s];
    for (uint32_t e : p.slot_entries[s]) point_entry(u, e, entry_buffer(u, e, in));
    u.slot_changed[s] = 0;
  }
  u.changed_slots.clear();
}

// This replay's events at `slots`, gathered into one array (null where an item did not run).
static NativeEvent* const* gather(Binding& bd, const uint32_t* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) bd.gather[i] = bd.events[slots[i]];
  return bd.gather.data();
}

// An upload from a host input: the bytes bound for this call, copied into this replay's staging
// copy (the replay that used it last, in_flight_depth calls ago, has completed: run_unit waited for
// it), so the caller may change them as soon as the run returns. Unbounded: a blocking upload.
static void upload_host(const Binding& bd, const BoundItem& b) {
  const unsigned char* src = *b.host + b.host_off;
  if (!b.staging) return enqueue_upload(*b.dst, src, b.n, true);
  unsigned char* copy = b.staging + static_cast<size_t>(bd.ring) * b.n;
  std::memcpy(copy, src, b.n);
  enqueue_upload(*b.dst, copy, b.n, false);
}

static void run_item(Binding& bd, BoundItem& b) {
  switch (b.kind) {
    case ItemKind::kernel:
      enqueue_launch(*b.dev, *b.kernel, b.ld, nullptr);
      return;
    case ItemKind::copy:
      if (b.peer)  // its dependencies (sync.cpp) as its wait list, its own event as its signal
        enqueue_peer_copy(*b.dst, *b.src, b.n, gather(bd, &bd.wait_slots[b.wait_at], b.wait_n), b.wait_n,
                          b.signal >= 0 ? &bd.events[b.signal] : nullptr);
      else
        enqueue_copy(*b.dst, *b.src, b.n, b.staging);
      return;
    case ItemKind::upload:
      if (b.host) return upload_host(bd, b);
      enqueue_upload(*b.dst, b.data, b.n, false);
      return;
    case ItemKind::native:
      if (b.split) b.call->begin(*b.dev, b.mems, b.n);  // finished by run_items_ordered
      else enqueue_native(*b.dev, *b.call, b.mems, b.n);
      return;
  }
}

// Tracing (encore/profile.hpp): kernels with their own events, copies and uploads at host times.
static void run_item_traced(const Plan& p, Binding& bd, BoundItem& b) {
  if (b.kind == ItemKind::kernel) {
    if (b.ld.empty) return;
    trace_item(*b.dev, b.dev->launch_traced(*b.kernel, b.ld.dims, b.ld.gws, b.ld.lws), p.items[b.item], "replay", b.ld.dims, b.ld.gws);
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
  debug_print_item(p.items[b.item], b.ld.dims, b.ld.gws, b.ld.lws, 0,
                   std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

template <class Run> static void run_items(UnitImpl& u, Binding& b, Run run) {
  bool stale = false;
  if (!ENCORE_TESTING_IS(ignore_versions))
    for (auto& [r, ver] : u.once_versions) stale = stale || r->version.load(std::memory_order_acquire) != ver;
  if (!stale) {
    // the items from first_end on may end their device's replay with their own event (the loop
    // before them stays as plain as it was: a branch per item there cost ~3 ns of ~8 on NULL)
    const uint32_t plain = b.end_events ? b.first_end : b.n_replay;
    for (uint32_t i = 0; i < plain; ++i) run(b, b.items[i]);
    for (uint32_t i = plain; i < b.n_replay; ++i) {
      BoundItem& x = b.items[i];
      if (x.ends_device >= 0 && !x.ld.empty) b.end_events[x.ends_device] = x.dev->launch_traced(*x.kernel, x.ld.dims, x.ld.gws, x.ld.lws);
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

// plan.sync around each item (see sync.cpp): barriers and markers between devices of one context,
// and split-phase native items finished where their results are first needed. This replay's
// markers are released at the end, or when an enqueue fails; begun split items are then cancelled.
static void barrier(DeviceImpl& dev, Binding& b, const uint32_t* slots, size_t n) {
  dev.enqueue_barrier(gather(b, slots, n), static_cast<uint32_t>(n));
}

// Finishes begun split items in begin order through bound item `last` (all of them: UINT32_MAX).
static void finish_through(Binding& b, uint32_t last) {
  if (last != UINT32_MAX && std::find(b.pending.begin() + static_cast<std::ptrdiff_t>(b.pending_head), b.pending.end(), last) == b.pending.end())
    return;  // not begun in this replay (one-time), or finished already
  while (b.pending_head < b.pending.size()) {
    uint32_t f = b.pending[b.pending_head++];
    BoundItem& y = b.items[f];
    y.call->finish(*y.dev, y.mems, y.n);
    if (f == last) return;
  }
}

template <class Run> static void run_items_ordered(UnitImpl& u, Binding& b, Run run) {
  const CrossSync& s = u.plan.sync;
  struct Release {
    UnitImpl& u;
    Binding& b;
    ~Release() {
      for (size_t i = 0; i < b.events.size(); ++i)
        if (b.events[i]) u.plan.devices[u.plan.sync.slot_device[i]]->release_event(std::exchange(b.events[i], nullptr));
      for (; b.pending_head < b.pending.size(); ++b.pending_head) {
        BoundItem& y = b.items[b.pending[b.pending_head]];
        y.call->cancel(*y.dev);
      }
      b.pending.clear();
      b.pending_head = 0;
    }
  } release{u, b};
  for (auto [d, slot] : s.start) b.events[slot] = u.plan.devices[d]->enqueue_marker();
  run_items(u, b, [&](Binding&, BoundItem& x) {
    for (uint32_t k = 0; k < x.finish_n; ++k) finish_through(b, b.finish_list[x.finish_at + k]);
    if (x.wait_n && !x.peer) barrier(*x.dev, b, &b.wait_slots[x.wait_at], x.wait_n);
    run(b, x);
    if (x.split) b.pending.push_back(static_cast<uint32_t>(&x - b.items.data()));
    if (x.signal >= 0 && !x.peer) b.events[x.signal] = x.dev->enqueue_marker();
  });
  finish_through(b, UINT32_MAX);
  for (size_t d = 0; d < s.end.size(); ++d)
    if (!s.end[d].empty()) barrier(*u.plan.devices[d], b, s.end[d].data(), s.end[d].size());
}

UnitImpl::~UnitImpl() { wait_in_flight(); }

void UnitImpl::wait_in_flight() noexcept {
  const size_t nd = plan.devices.size();
  for (size_t i = 0; i < in_flight.size(); ++i)
    if (in_flight[i]) try {
        plan.devices[i % nd]->wait_release(std::exchange(in_flight[i], nullptr));
      } catch (...) {  // a failed replay was reported when it was enqueued or waited for
      }
}

// The units replaying on this thread, innermost first: frames on the stack, so marking one costs
// a thread-local store and allocates nothing.
namespace {
struct ReplayFrame {
  const UnitImpl* unit;
  const ReplayFrame* outer;
};
thread_local const ReplayFrame* tl_replaying = nullptr;
struct ReplayMark {
  ReplayFrame frame;
  explicit ReplayMark(const UnitImpl& u) noexcept : frame{&u, tl_replaying} { tl_replaying = &frame; }
  ~ReplayMark() { tl_replaying = frame.outer; }
};
}  // namespace

void check_not_replaying(const UnitImpl& u, const char* op) {
  for (const ReplayFrame* f = tl_replaying; f; f = f->outer)
    if (f->unit == &u)
      throw JitError(std::string("ExecutionUnit::") + op +
                     " called from inside the same unit's replay (a native call of the unit calling back into it): a replay uses the "
                     "unit's binding, arena and values until it returns. Call it after the run returns");
}

void run_unit(UnitImpl& u) {
  static const bool debug = debug_level() >= 2;
  check_not_replaying(u, "run");
  ReplayMark mark(u);
  if (u.bound && u.arena_pool && u.arena_gen != u.arena_pool->gen) {
    u.wait_in_flight();  // its replays still read the smaller arena
    u.bound.reset();
  }
  if (!u.bound) bind_unit(u);
  if (!u.changed_slots.empty()) check_inputs(u);
  Binding& b = *u.bound;
  // bounded work in flight: wait for the replay in_flight_depth calls ago
  const size_t nd = u.plan.devices.size();
  NativeEvent** slot = u.in_flight.empty() ? nullptr : &u.in_flight[u.in_flight_next * nd];
  if (slot)
    for (size_t d = 0; d < nd; ++d)
      if (slot[d]) u.plan.devices[d]->wait_release(std::exchange(slot[d], nullptr));
  for (uint32_t s = 0; s < u.staged.size(); ++s)
    if (u.staged[s]) enqueue_copy(*u.staging[s].impl(), *u.inputs[s].impl(), u.staging[s].nbytes(), nullptr);
  b.ring = u.in_flight_next;
  // the plain loop ends each device's replay with its last kernel's event; the others with markers
  b.end_events = slot && !debug && !trace_active() && !u.plan.sync.ordered() ? slot : nullptr;
  try {
    if (debug) run_items_ordered(u, b, [&](Binding& bd, BoundItem& x) { run_item_debug(u.plan, bd, x); });
    else if (trace_active()) run_items_ordered(u, b, [&](Binding& bd, BoundItem& x) { run_item_traced(u.plan, bd, x); });
    else if (u.plan.sync.ordered()) run_items_ordered(u, b, run_item);
    else run_items(u, b, run_item);
  } catch (...) {
    // a failed enqueue leaves this replay without its in-flight events: let what it queued finish,
    // so the next replay may reuse this replay's staging copies (host uploads read them)
    for (auto& d : u.plan.devices) try {
        d->finish();
      } catch (...) {
      }
    throw;
  }
  for (BufferImpl* r : b.written_roots) r->version.fetch_add(1, std::memory_order_acq_rel);
  for (uint32_t e : b.written_entries) b.current[e].impl()->bump();
  if (slot) {
    b.end_events = nullptr;
    for (size_t d = 0; d < nd; ++d)
      if (!slot[d]) slot[d] = u.plan.devices[d]->enqueue_marker();
    u.in_flight_next = (u.in_flight_next + 1) % u.in_flight_depth;
  }
}

}  // namespace encore::detail
