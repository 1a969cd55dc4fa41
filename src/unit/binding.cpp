// Binding a plan to its devices: the arena, one kernel object per item with its arguments set,
// the buffer every entry uses now, staging memory. Everything a replay needs is made here, so the
// replay loop allocates nothing.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "unit/unit.hpp"

namespace encore::detail {

Buffer entry_buffer(UnitImpl& u, uint32_t e, const Buffer& in) {
  const PlanEntry& pe = u.plan.entries[e];
  BufferImpl* cap = pe.captured.impl();
  return u.views[e].get(in, cap->dtype, pe.rel, cap->count);
}

void point_entry(UnitImpl& u, uint32_t e, const Buffer& b) {
  Binding* bd = u.bound.get();
  if (!bd || bd->current[e].impl() == b.impl()) return;
  b.impl()->ensure_allocated();
  // a handle (a sub-buffer for a view) only where a kernel or native item takes one: copies and
  // uploads address root + offset, and a partial upload's region may sit at an unaligned offset
  NativeMem* h = bd->uses[e].empty() ? nullptr : b.impl()->handle();
  // arguments first: if setting one fails, `current` still differs from b and a retry sets them all
  for (const KernelUse& k : bd->uses[e]) {
    BoundItem& it = bd->items[k.bound];
    if (it.kind == ItemKind::native) it.mems[k.arg] = h;
    else it.kernel->set_buffer(k.arg, h);
  }
  bd->current[e] = b;
  for (uint32_t bi : bd->copy_uses[e]) {
    BoundItem& it = bd->items[bi];
    const PlanStep& st = u.plan.steps[it.item];
    if (st.dst == e) it.dst = b.impl();
    if (it.kind == ItemKind::copy && st.src == e) it.src = b.impl();
  }
}

// Overflow-checked, so a wrap to a small positive size cannot pass unnoticed. Sizes are resolved
// here at bind and at every set_var, never in the replay loop: that loop needs no check.
static int64_t eval(const Plan& p, const SizeRef& s, const std::vector<VarValue>& vars) {
  if (s.var < 0) return s.add;
  const int64_t v = vars[static_cast<size_t>(s.var)].i;
  int64_t r;
  if (__builtin_mul_overflow(s.mul, v, &r) || __builtin_add_overflow(r, s.add, &r))
    throw ArgumentError("replay launch: size " + std::to_string(s.mul) + " * " + p.vars[static_cast<size_t>(s.var)].name() + " + " +
                        std::to_string(s.add) + " overflows int64 for " + p.vars[static_cast<size_t>(s.var)].name() + " = " +
                        std::to_string(v) + " (choose a smaller value or tighter variable bounds)");
  return r;
}

void resolve_sizes(const Plan& p, const BoundItem& b, const std::vector<VarValue>& vars, LaunchDims& out) {
  const PlanStep& st = p.steps[b.item];
  int64_t g[3], l[3];
  for (uint32_t d = 0; d < st.dims; ++d) {
    g[d] = eval(p, st.g[d], vars);
    if (st.has_local) l[d] = eval(p, st.l[d], vars);
  }
  resolve_launch(st.dims, g, st.has_local ? l : nullptr, *b.dev, *b.kernel, out, "replay launch");
}

void set_var(UnitImpl& u, uint32_t slot, VarValue v) {
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
    LaunchDims ld;
    for (uint32_t bi : bd->var_sizes[slot]) resolve_sizes(u.plan, bd->items[bi], u.vars, ld);
  } catch (...) {
    u.vars[slot] = old;
    throw;
  }
  try {
    for (const VarUse& use : bd->var_args[slot]) {
      uint64_t bits = var_arg_bits(vs, v.i, v.f, use.as);
      bd->items[use.bound].kernel->set_arg(use.arg, size(use.as), &bits);
    }
  } catch (...) {
    // some kernels may hold the new value and some the old: the next run binds afresh
    u.vars[slot] = old;
    u.wait_in_flight();
    u.bound.reset();
    throw;
  }
  for (uint32_t bi : bd->var_sizes[slot]) resolve_sizes(u.plan, bd->items[bi], u.vars, bd->items[bi].ld);
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

void bind_unit(UnitImpl& u) {
  const Plan& p = u.plan;
  auto bd = std::make_unique<Binding>();
  Binding& b = *bd;
  for (const Plan::Arena& a : p.arenas) {
    bool shared = u.arena_pool != nullptr;
    for (const Buffer& earlier : b.arenas) shared = shared && earlier.impl()->dev != a.dev;  // one pool arena per device and unit
    b.arenas.push_back(shared ? u.arena_pool->get(a.dev, std::max<uint64_t>(a.bytes, 1))
                              : Buffer(Device(a.dev), DType::u8, std::max<uint64_t>(a.bytes, 1)));
    b.arenas.back().impl()->ensure_allocated();
  }
  if (u.arena_pool) u.arena_gen = u.arena_pool->gen;
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
      case PlanEntry::Kind::input: b.current[e] = entry_buffer(u, e, u.staged[pe.slot] ? u.staging[pe.slot] : u.inputs[pe.slot]); break;
    }
    b.current[e].impl()->ensure_allocated();
  }
  b.uses.resize(p.entries.size());
  b.copy_uses.resize(p.entries.size());
  b.var_args.resize(p.vars.size());
  b.var_sizes.resize(p.vars.size());

  // replayed items first, then one-time items, each in step order (reserved: `x` stays valid)
  const uint32_t n = static_cast<uint32_t>(p.items.size());
  b.items.reserve(n);
  size_t native_args = 0;
  for (const ExecItem& it : p.items)
    if (it.kind == ItemKind::native) native_args += it.args.size();
  b.native_mems.reserve(native_args);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      if (p.one_time[i] != (pass == 1)) continue;
      const ExecItem& it = p.items[i];
      const PlanStep& st = p.steps[i];
      const uint32_t bi = static_cast<uint32_t>(b.items.size());
      BoundItem& x = b.items.emplace_back();
      x.kind = it.kind;
      x.item = i;
      x.dev = queue_of(it).get();
      if (it.kind == ItemKind::native) {
        x.call = it.native.get();
        x.n = it.args.size();
        x.mems = b.native_mems.data() + b.native_mems.size();
        for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
          b.native_mems.push_back(b.current[st.arg_ref[ai]].impl()->handle());
          b.uses[st.arg_ref[ai]].push_back({bi, ai});
        }
        b.n_replay += pass == 0;
      } else if (it.kind == ItemKind::kernel) {
        KernelImpl& k = *it.kernel.impl();
        {
          std::lock_guard<std::mutex> lock(k.program->mu);
          x.kernel = k.program->backend->create_kernel(k.sig->name);
        }
        for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
          const Arg& a = it.args[ai];
          switch (a.kind) {
            case Arg::Kind::buffer:
              x.kernel->set_buffer(ai, b.current[st.arg_ref[ai]].impl()->handle());
              b.uses[st.arg_ref[ai]].push_back({bi, ai});
              break;
            case Arg::Kind::scalar: x.kernel->set_arg(ai, size(a.dtype), &a.bits); break;
            case Arg::Kind::local: x.kernel->set_local(ai, a.local_bytes); break;
            case Arg::Kind::bytes: x.kernel->set_arg(ai, a.value->size(), a.value->data()); break;
            case Arg::Kind::variable: {
              uint32_t v = st.arg_ref[ai];
              uint64_t bits = var_arg_bits(*p.vars[v].state(), u.vars[v].i, u.vars[v].f, a.dtype);
              x.kernel->set_arg(ai, size(a.dtype), &bits);
              b.var_args[v].push_back({bi, ai, a.dtype});
              break;
            }
          }
        }
        for (uint32_t d = 0; d < st.dims; ++d)
          for (const SizeRef* s : {&st.g[d], &st.l[d]})
            if (s->var >= 0 && (s == &st.g[d] || st.has_local)) {
              auto& users = b.var_sizes[static_cast<size_t>(s->var)];
              if (users.empty() || users.back() != bi) users.push_back(bi);
            }
        resolve_sizes(p, x, u.vars, x.ld);
        b.n_replay += pass == 0;
      } else {
        x.dst = b.current[st.dst].impl();
        x.n = it.dst.nbytes();
        b.copy_uses[st.dst].push_back(bi);
        if (it.kind == ItemKind::copy) {
          x.src = b.current[st.src].impl();
          b.copy_uses[st.src].push_back(bi);
          if (st.cross_device) {
            b.staging.push_back(std::make_unique<unsigned char[]>(x.n));
            x.staging = b.staging.back().get();
          }
        } else {
          x.data = it.data->data();
        }
        b.n_replay += pass == 0;
      }
    }
  }
  // the last replayed item on each device: when it is a kernel, its own event completes the replay
  // there (the queue is in order), so bounding work in flight costs no extra command
  b.first_end = b.n_replay;
  for (size_t d = 0; d < p.devices.size(); ++d)
    for (uint32_t bi = b.n_replay; bi-- > 0;)
      if (b.items[bi].dev == p.devices[d].get()) {
        if (b.items[bi].kind == ItemKind::kernel) {
          b.items[bi].ends_device = static_cast<int32_t>(d);
          b.first_end = std::min(b.first_end, bi);
        }
        break;
      }
  // split-phase items
  if (p.sync.ordered()) {
    std::vector<uint32_t> bound_of(n);
    for (uint32_t bi = 0; bi < b.items.size(); ++bi) bound_of[b.items[bi].item] = bi;
    size_t splits = 0;
    for (BoundItem& x : b.items) {
      x.split = p.sync.split[x.item] != 0;
      splits += x.split;
      x.finish_at = static_cast<uint32_t>(b.finish_list.size());
      x.finish_n = static_cast<uint32_t>(p.sync.finish_before[x.item].size());
      for (uint32_t c : p.sync.finish_before[x.item]) b.finish_list.push_back(bound_of[c]);
    }
    b.pending.reserve(splits);
  }
  // cross-device order
  if (p.sync.slots) {
    size_t most = 0;
    for (BoundItem& x : b.items) {
      const std::vector<uint32_t>& w = p.sync.waits[x.item];
      x.peer = p.sync.peer[x.item] != 0;
      x.signal = p.sync.signal[x.item];
      x.wait_at = static_cast<uint32_t>(b.wait_slots.size());
      x.wait_n = static_cast<uint32_t>(w.size());
      b.wait_slots.insert(b.wait_slots.end(), w.begin(), w.end());
      most = std::max(most, w.size());
    }
    for (const auto& e : p.sync.end) most = std::max(most, e.size());
    b.events.assign(p.sync.slots, nullptr);
    b.gather.assign(most, nullptr);
  }
  // what a replay writes: storages of fixed and planned entries (each once), and input entries
  std::unordered_set<BufferImpl*> seen_roots;
  for (uint32_t e = 0; e < p.entries.size(); ++e) {
    if (!p.entries[e].written) continue;
    if (p.entries[e].kind == PlanEntry::Kind::input) b.written_entries.push_back(e);
    else if (BufferImpl* r = b.current[e].impl()->root(); seen_roots.insert(r).second) b.written_roots.push_back(r);
  }
  // versions of what one-time items touch (fixed entries by construction), taken once: a rebind
  // after free_intermediates must still see writes made since the capture
  if (!u.versions_taken) {
    std::unordered_map<BufferImpl*, uint32_t> index;
    std::unordered_set<BufferImpl*> seen_w;
    for (uint32_t bi = b.n_replay; bi < b.items.size(); ++bi)
      for (const StorageAccess& a : p.items[b.items[bi].item].accesses()) {
        auto [f, fresh] = index.emplace(a.storage, static_cast<uint32_t>(u.once_versions.size()));
        if (fresh) u.once_versions.push_back({a.storage, a.storage->version.load(std::memory_order_acquire)});
        if (has(a.access, Access::out) && seen_w.insert(a.storage).second) u.once_written.push_back(f->second);
      }
    u.versions_taken = true;
  }
  u.bound = std::move(bd);
}

}  // namespace encore::detail
