// Binding a plan to its devices: the arena, one kernel object per item with its arguments set,
// the buffer every entry uses now, staging memory. Everything a replay needs is made here, so the
// replay loop allocates nothing.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "exec/kind.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

const Buffer& entry_buffer(UnitImpl& u, uint32_t e, const Buffer& in) {
  const PlanEntry& pe = u.plan.entries[e];
  BufferImpl* cap = pe.captured.impl();
  return u.views[e].get(in, cap->dtype, pe.rel, cap->count);
}

void point_entry(UnitImpl& u, uint32_t e, const Buffer& b) {
  Binding* bd = u.bound.get();
  if (!bd || bd->current[e].impl() == b.impl()) return;
  b.impl()->ensure_allocated();
  // a handle (a sub-buffer for a view) only where a kind takes one (kernel and native arguments):
  // the others address root + offset, and a partial upload's region may sit at an unaligned offset
  NativeMem* h = bd->takes_handle[e] ? b.impl()->handle() : nullptr;
  // operands first: if setting one fails, `current` still differs from b and a retry sets them all
  for (const OperandUse& use : bd->uses[e]) {
    BoundItem& it = bd->items[use.bound];
    it.ops->point(it, use.k, use.arg, b.impl(), h);
  }
  bd->current[e] = b;
}

void set_var(UnitImpl& u, uint32_t slot, VarValue v, bool in_replay) {
  Binding* bd = u.bound.get();
  if (!bd) {
    u.vars[slot] = v;
    return;
  }
  const VarState& vs = *u.plan.vars[slot].state();
  // checks first: argument types, then launch sizes under the new value
  for (const VarUse& use : bd->var_args[slot]) (void)var_arg_bits(vs, v.i, v.f, use.as);
  VarValue old = u.vars[slot];
  u.vars[slot] = v;
  try {
    for (const SizeUse& s : bd->var_sizes[slot]) resolve_sizes(u.plan.view(), bd->items[s.bound], u.vars, false);
  } catch (...) {
    u.vars[slot] = old;
    throw;
  }
  try {
    for (const VarUse& use : bd->var_args[slot]) {
      uint64_t bits = var_arg_bits(vs, v.i, v.f, use.as);
      use.k->set_arg(use.arg, size(use.as), &bits);
    }
  } catch (...) {
    // some kernels may hold the new value and some the old: the next run binds afresh (a host
    // item's set inside a replay: once that replay has let go of the binding)
    u.vars[slot] = old;
    if (in_replay) {
      u.rebind = true;
      throw;
    }
    u.flight.wait();
    u.bound.reset();
    throw;
  }
  for (const SizeUse& s : bd->var_sizes[slot]) resolve_sizes(u.plan.view(), bd->items[s.bound], u.vars, true);
}

Buffer ArenaPool::get(const std::shared_ptr<DeviceImpl>& dev, uint64_t bytes) {
  for (Buffer& a : arenas)
    if (a.impl()->dev == dev) {
      if (a.nbytes() >= bytes) return a;
      a = Buffer(Device(dev), DType::u8, bytes);  // units bound to the smaller one let it go when they rebind
      ++gen;
      return a;
    }
  arenas.push_back(Buffer(Device(dev), DType::u8, bytes));
  return arenas.back();
}

// Arenas: the plan's, from a TinyJit's pool where the unit has one (its units run one at a time,
// so they share the bytes).
static void bind_arenas(UnitImpl& u, Binding& b) {
  for (const Plan::Arena& a : u.plan.arenas) {
    bool shared = u.arena_pool != nullptr;
    for (const Buffer& earlier : b.arenas) shared = shared && earlier.impl()->dev != a.dev;  // one pool arena per device and unit
    b.arenas.push_back(shared ? u.arena_pool->get(a.dev, std::max<uint64_t>(a.bytes, 1))
                              : Buffer(Device(a.dev), DType::u8, std::max<uint64_t>(a.bytes, 1)));
    b.arenas.back().impl()->ensure_allocated();
  }
  if (u.arena_pool) u.arena_gen = u.arena_pool->gen;
}

// The buffer every entry uses now: as captured, its place in the arena, or its input's (staged) bytes.
static void bind_entries(UnitImpl& u, Binding& b) {
  const Plan& p = u.plan;
  // Temps placed at the same bytes share one view: each view is a sub-buffer, and PoCL's cost per
  // enqueue grows with the number of sub-buffers of a parent.
  std::map<std::tuple<uint32_t, uint64_t, DType, size_t>, Buffer> views;
  b.current.resize(p.entries.size());
  for (uint32_t e = 0; e < p.entries.size(); ++e) {
    const PlanEntry& pe = p.entries[e];
    BufferImpl* c = pe.captured.impl();
    switch (pe.kind) {
      case PlanEntry::Kind::fixed: b.current[e] = pe.captured; break;
      case PlanEntry::Kind::planned: {
        Buffer& v = views[{pe.slot, pe.rel, c->dtype, c->count}];
        if (!v) v = region(b.arenas[pe.slot], c->dtype, pe.rel, c->count);
        b.current[e] = v;
        break;
      }
      case PlanEntry::Kind::input: b.current[e] = entry_buffer(u, e, u.copied[pe.slot] ? u.alias_copy[pe.slot] : u.inputs[pe.slot]); break;
    }
    b.current[e].impl()->ensure_allocated();
  }
}

// A split-phase call's finish item, before step item `i` (n: at the end), sharing its begin's call.
static void add_finishes(const Plan& p, Binding& b, const std::vector<uint32_t>& bound_of, uint32_t i) {
  if (p.sync.finish_before.empty()) return;
  for (uint32_t cidx : p.sync.finish_before[i]) {
    if (bound_of[cidx] == UINT32_MAX) continue;  // never: native calls are not one-time
    BoundItem& f = b.items.emplace_back();  // reserved: `from` stays valid
    const BoundItem& from = b.items[bound_of[cidx]];
    f.ops = from.ops;
    f.replay = replay_finish;
    f.item = cidx;  // its trace and debug line name the call; the re-run of one-time items keeps step order around it
    f.dev = from.dev;
    f.payload = from.payload;
    f.split = from.split;
    f.finishes = true;
    ++b.n_replay;
  }
}

// Every item bound by its kind: replayed items first, then one-time items, each in step order
// (reserved: `x` stays valid), so the replay loop walks one range.
static void bind_items(UnitImpl& u, Binding& b) {
  const Plan& p = u.plan;
  b.uses.resize(p.entries.size());
  b.var_args.resize(p.vars.size());
  b.var_sizes.resize(p.vars.size());
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  size_t operands = 0;
  for (const PlanStep& st : p.steps) operands += st.ops.size();
  b.native_mems.reserve(operands);
  size_t finishes = 0;
  for (const auto& f : p.sync.finish_before) finishes += f.size();
  b.items.reserve(n + finishes);
  std::vector<uint32_t> bound_of(n, UINT32_MAX);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      if (pass == 0) add_finishes(p, b, bound_of, i);
      if (p.one_time[i] != (pass == 1)) continue;
      bound_of[i] = static_cast<uint32_t>(b.items.size());
      const ExecItem& it = p.items[i];
      const KindOps& kind = kind_of(it);
      BindContext c{p.view(), UnitView{u.vars, u.host_now.data(), u.flight.depth()}, b, static_cast<uint32_t>(b.items.size())};
      BoundItem& x = b.items.emplace_back();
      x.ops = &kind;
      x.replay = kind.replay;
      x.item = i;
      x.dev = kind.queue(it).get();
      kind.bind(c, it, p.steps[i], x);
      b.n_replay += pass == 0;
    }
    if (pass == 0) add_finishes(p, b, bound_of, n);
  }
}

// Which entries some item takes as a handle (a sub-buffer for a view): point_entry makes one only there.
static void mark_handles(const Plan& p, Binding& b) {
  b.takes_handle.assign(p.entries.size(), 0);
  for (uint32_t e = 0; e < p.entries.size(); ++e)
    for (const OperandUse& use : b.uses[e]) b.takes_handle[e] = b.takes_handle[e] || b.items[use.bound].ops->handles;
}

// The last replayed item on each device: when it has an event of its own (a kernel), that event
// completes the replay there (the queue is in order), so bounding work in flight costs no extra command.
static void find_ends(const Plan& p, Binding& b) {
  b.first_end = b.n_replay;
  for (size_t d = 0; d < p.devices.size(); ++d)
    for (uint32_t bi = b.n_replay; bi-- > 0;)
      if (b.items[bi].dev == p.devices[d].get()) {
        if (b.items[bi].ops->replay_event) {
          b.items[bi].ends_device = static_cast<int32_t>(d);
          b.first_end = std::min(b.first_end, bi);
        }
        break;
      }
}

// Cross-device order: each item's marker and barrier slots, and the events and gather list sized
// here, so the replay loop allocates none.
static void bind_sync(const Plan& p, Binding& b) {
  if (!p.sync.slots) return;
  size_t most = 0;
  for (BoundItem& x : b.items) {
    if (x.finishes) continue;  // a split-phase call's order between devices is its begin item's
    const std::vector<uint32_t>& w = p.sync.waits[x.item];
    x.signal = p.sync.signal[x.item];
    x.wait_at = static_cast<uint32_t>(b.wait_slots.size());
    x.wait_n = static_cast<uint32_t>(w.size());
    b.wait_slots.insert(b.wait_slots.end(), w.begin(), w.end());
    most = std::max(most, w.size());
  }
  for (const auto& e : p.sync.end) most = std::max(most, e.size());
  std::vector<DeviceImpl*> slot_devices;
  for (uint32_t d : p.sync.slot_device) slot_devices.push_back(p.devices[d].get());
  b.events.init(std::move(slot_devices));
  b.gather.assign(most, nullptr);
}

// What a replay writes: storages of fixed and planned entries (each once), and input entries.
static void find_written(const Plan& p, Binding& b) {
  std::unordered_set<BufferImpl*> seen_roots;
  for (uint32_t e = 0; e < p.entries.size(); ++e) {
    if (!p.entries[e].written) continue;
    if (p.entries[e].kind == PlanEntry::Kind::input) b.written_entries.push_back(e);
    else if (BufferImpl* r = b.current[e].impl()->root(); seen_roots.insert(r).second) b.written_roots.push_back(r);
  }
}

// Versions of what one-time items touch (fixed entries by construction), taken once: a rebind
// after free_intermediates must still see writes made since the capture.
static void take_versions(UnitImpl& u, const Binding& b) {
  if (u.versions_taken) return;
  const Plan& p = u.plan;
  std::unordered_map<BufferImpl*, uint32_t> index;
  std::unordered_set<BufferImpl*> seen_w;
  for (uint32_t bi = b.n_replay; bi < b.items.size(); ++bi)
    for (const ItemAccess& a : p.access[b.items[bi].item]) {
      BufferImpl* storage = p.entries[a.entry].captured.impl()->root();
      auto [f, fresh] = index.emplace(storage, static_cast<uint32_t>(u.once_versions.size()));
      // (~version: a value the storage does not have, so the first run finds it changed)
      const uint64_t v = storage->version.load(std::memory_order_acquire);
      if (fresh) u.once_versions.push_back({storage, u.once_unrun ? ~v : v});
      if (has(a.access, Access::out) && seen_w.insert(storage).second) u.once_written.push_back(f->second);
    }
  u.versions_taken = true;
}

void bind_unit(UnitImpl& u) {
  auto bd = std::make_unique<Binding>();
  Binding& b = *bd;
  bind_arenas(u, b);
  bind_entries(u, b);
  bind_items(u, b);
  mark_handles(u.plan, b);
  find_ends(u.plan, b);
  bind_sync(u.plan, b);
  find_written(u.plan, b);
  take_versions(u, b);
  bind_concurrent(u, b);
  u.bound = std::move(bd);
  u.rebind = false;
}

}  // namespace encore::detail
