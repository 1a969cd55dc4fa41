// Binding a built unit (one kernel object per item, arguments set once) and replaying it with
// only the changed arguments re-set: no allocation, lookup or compile on this path.
#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "prune.hpp"
#include "unit_impl.hpp"

namespace encore::detail {

// Bound items are numbered replay items first, then one-time items.
static BoundItem& bound_at(UnitImpl& u, uint32_t i) { return i < u.replay.size() ? u.replay[i] : u.once[i - u.replay.size()]; }

void set_kernel_var(UnitImpl& u, const VarUse& use, uint32_t slot) {
  uint64_t bits = var_arg_bits(*u.vars[slot].state(), u.var_i[slot], u.var_f[slot], use.as);
  bound_at(u, use.bound).kernel->set_arg(use.arg, size(use.as), &bits);
}

// Re-point every kernel argument of entry e at its current buffer.
static void refresh_entry(UnitImpl& u, Entry& e) {
  if (!u.bound) return;
  void* h = e.current.impl()->handle();
  for (auto [bi, arg] : e.kernel_uses) bound_at(u, bi).kernel->set_buffer(arg, h);
}

// The buffer an input-derived entry uses for input buffer `in`: the input itself, or a rebased view.
static Buffer rebase(Entry& e, const Buffer& in) {
  BufferImpl* cap = e.captured.impl();
  return e.views.get(in, cap->dtype, e.rel, cap->count);
}

void set_slot_buffer(UnitImpl& u, uint32_t slot, const Buffer& b) {
  b.impl()->ensure_allocated();
  for (uint32_t ei : u.slot_entries[slot]) {
    Entry& e = u.entries[ei];
    Buffer nb = rebase(e, b);
    if (nb.impl() == e.current.impl()) continue;
    e.current = nb;
    refresh_entry(u, e);
  }
}

static void run_bound(UnitImpl& u, BoundItem& b) {
  switch (b.kind) {
    case ItemKind::kernel: {
      if (b.dynamic) {
        size_t gws[3], lws[3];
        for (uint32_t d = 0; d < b.dims; ++d) {
          const SizeRef& g = b.g[d];
          int64_t v = g.var < 0 ? g.add : g.mul * u.var_i[static_cast<size_t>(g.var)] + g.add;
          if (v < 0) throw ArgumentError("replay of " + u.items[b.item].describe() + ": global size " + std::to_string(v) + " is negative");
          gws[d] = static_cast<size_t>(v);
        }
        if (b.has_local) {
          for (uint32_t d = 0; d < b.dims; ++d) {
            const SizeRef& l = b.l[d];
            int64_t v = l.var < 0 ? l.add : l.mul * u.var_i[static_cast<size_t>(l.var)] + l.add;
            if (v <= 0) throw ArgumentError("replay of " + u.items[b.item].describe() + ": local size must be positive");
            lws[d] = static_cast<size_t>(v);
          }
        } else {
          choose_local(b.dims, gws, b.dev->info.max_work_group_size, lws);
        }
        if (!check_launch(b.dims, gws, lws, "replay")) return;
        b.dev->launch(*b.kernel, b.dims, gws, lws, nullptr);
      } else if (!b.empty) {
        b.dev->launch(*b.kernel, b.dims, b.gws.data(), b.lws.data(), nullptr);
      }
      return;
    }
    case ItemKind::copy: {
      BufferImpl& d = *u.entries[b.dst].current.impl();
      BufferImpl& s = *u.entries[b.src].current.impl();
      if (d.dev == s.dev) {
        d.dev->copy(d.root()->mem, d.offset, s.root()->mem, s.offset, b.n);
      } else if (!d.dev->copy_from(*s.dev, d.root()->mem, d.offset, s.root()->mem, s.offset, b.n)) {
        throw DeviceError("replay: copy between devices of different platforms is not supported in a unit (" + s.dev->info.id + " -> " +
                          d.dev->info.id + ")");
      }
      return;
    }
    case ItemKind::upload: {
      BufferImpl& d = *u.entries[b.dst].current.impl();
      d.dev->write(d.root()->mem, d.offset, b.data, b.n, false);
      return;
    }
  }
}


void bind_unit(UnitImpl& u) {
  // arenas and planned entries
  for (auto& a : u.arenas)
    if (!a.buf) {
      a.buf = Buffer(Device(a.dev), DType::u8, std::max<uint64_t>(a.bytes, 1));
      a.buf.impl()->ensure_allocated();
    }
  // Temps placed at the same bytes share one view: each view is a sub-buffer, and PoCL's cost per
  // enqueue grows with the number of sub-buffers of a parent (a 1000-kernel chain of temps planned
  // into two slots would otherwise make 1000 sub-buffers of the arena).
  std::map<std::tuple<uint32_t, uint64_t, DType, size_t>, Buffer> views;
  for (auto& [ei, place] : u.planned) {
    Entry& e = u.entries[ei];
    BufferImpl* c = e.captured.impl();
    Buffer& v = views[{place.first, place.second, c->dtype, c->count}];
    if (!v) v = u.arenas[place.first].buf.view_as(c->dtype, place.second, c->count);
    e.current = v;
  }
  for (uint32_t s = 0; s < u.inputs.size(); ++s)
    for (uint32_t ei : u.slot_entries[s]) u.entries[ei].current = rebase(u.entries[ei], u.staged[s] ? u.staging[s] : u.inputs[s]);
  for (Entry& e : u.entries) {
    e.kernel_uses.clear();
    e.current.impl()->ensure_allocated();
  }
  for (auto& uses : u.var_uses) uses.clear();
  u.replay.clear();
  u.once.clear();
  std::unordered_map<BufferImpl*, uint32_t> entry_of;
  for (uint32_t ei = 0; ei < u.entries.size(); ++ei) entry_of[u.entries[ei].captured.impl()] = ei;
  std::unordered_map<VarState*, int32_t> var_of;
  for (uint32_t v = 0; v < u.vars.size(); ++v) var_of[u.vars[v].state()] = static_cast<int32_t>(v);

  size_t n_replay = 0;
  for (bool o : u.one_time) n_replay += !o;
  u.replay.reserve(n_replay);
  u.once.reserve(u.items.size() - n_replay);
  std::vector<bool> written(u.entries.size(), false);
  std::vector<std::tuple<bool, uint32_t, uint32_t, uint32_t>> pending_vars;  // (once, index, arg, var)
  for (uint32_t i = 0; i < u.items.size(); ++i) {
    const ExecItem& it = u.items[i];
    bool once = u.one_time[i];
    std::vector<BoundItem>& list = once ? u.once : u.replay;
    BoundItem b;
    b.kind = it.kind;
    b.item = i;
    uint32_t index = static_cast<uint32_t>(list.size());
    if (it.kind == ItemKind::kernel) {
      KernelImpl& k = *it.kernel.impl();
      b.dev = k.program->dev.get();
      {
        std::lock_guard<std::mutex> lock(k.program->mu);
        b.kernel = k.program->backend->create_kernel(k.sig->name);
      }
      for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
        const Arg& a = it.args[ai];
        switch (a.kind) {
          case Arg::Kind::buffer: {
            uint32_t ei = entry_of.at(a.buf.impl());
            b.kernel->set_buffer(ai, u.entries[ei].current.impl()->handle());
            u.entries[ei].kernel_uses.push_back({index | (once ? 0x80000000u : 0u), ai});
            if (!once && has(a.access, Access::out)) written[ei] = true;
            break;
          }
          case Arg::Kind::scalar: b.kernel->set_arg(ai, size(a.dtype), &a.bits); break;
          case Arg::Kind::local: b.kernel->set_local(ai, a.local_bytes); break;
          case Arg::Kind::variable: {
            int32_t v = var_of.at(a.var->state());
            pending_vars.emplace_back(once, index, ai, v);
            break;
          }
        }
      }
      b.dims = it.global.n;
      b.has_local = !it.local.empty();
      b.dynamic = it.global.uses_variable() || it.local.uses_variable();
      for (uint32_t d = 0; d < b.dims; ++d) {
        const Size& g = it.global.v[d];
        b.g[d] = {g.var() ? var_of.at(g.var()->state()) : -1, g.mul(), g.add()};
        if (b.has_local) {
          const Size& l = it.local.v[d];
          b.l[d] = {l.var() ? var_of.at(l.var()->state()) : -1, l.mul(), l.add()};
        }
      }
      if (!b.dynamic) {
        for (uint32_t d = 0; d < b.dims; ++d) {
          if (it.global.v[d].add() < 0) throw ArgumentError("launch: negative global size");
          b.gws[d] = static_cast<size_t>(it.global.v[d].add());
          if (b.has_local) b.lws[d] = static_cast<size_t>(it.local.v[d].add());
        }
        if (!b.has_local) choose_local(b.dims, b.gws.data(), b.dev->info.max_work_group_size, b.lws.data());
        b.empty = !check_launch(b.dims, b.gws.data(), b.lws.data(), "bind");
      }
    } else {
      b.dst = entry_of.at(it.dst.impl());
      b.dev = it.dst.impl()->dev.get();
      if (!once) written[b.dst] = true;
      b.n = it.dst.nbytes();
      if (it.kind == ItemKind::copy) b.src = entry_of.at(it.src.impl());
      else b.data = it.data->data();
    }
    list.push_back(std::move(b));
  }
  // bound item ids: replay items first, then one-time items
  for (Entry& e : u.entries)
    for (auto& [bi, arg] : e.kernel_uses)
      if (bi & 0x80000000u) bi = static_cast<uint32_t>(u.replay.size()) + (bi & 0x7fffffffu);
  for (auto& [once, index, arg, v] : pending_vars) {
    uint32_t bi = once ? static_cast<uint32_t>(u.replay.size()) + index : index;
    const Arg& a = u.items[bound_at(u, bi).item].args[arg];
    u.var_uses[static_cast<size_t>(v)].push_back({bi, arg, a.dtype});
  }
  u.bound = true;
  for (uint32_t v = 0; v < u.vars.size(); ++v)
    for (const VarUse& use : u.var_uses[v]) set_kernel_var(u, use, v);
  u.written_entries.clear();
  u.written_roots.clear();
  {
    std::unordered_set<BufferImpl*> seen_roots;
    for (uint32_t ei = 0; ei < written.size(); ++ei) {
      if (!written[ei]) continue;
      if (u.entries[ei].kind == Entry::Kind::input) u.written_entries.push_back(ei);
      else if (BufferImpl* r = u.entries[ei].current.impl()->root(); seen_roots.insert(r).second) u.written_roots.push_back(r);
    }
  }
  // versions of what one-time items touch (all fixed entries by construction), taken once: a
  // rebind after free_intermediates must still see writes made since the capture
  if (!u.versions_taken) {
    std::unordered_set<BufferImpl*> seen, seen_w;
    for (const BoundItem& b : u.once)
      for (const StorageAccess& a : u.items[b.item].accesses()) {
        if (seen.insert(a.storage).second) u.once_versions.push_back({a.storage, a.storage->version.load(std::memory_order_relaxed)});
        if (has(a.access, Access::out) && seen_w.insert(a.storage).second) u.once_written.push_back(a.storage);
      }
    u.versions_taken = true;
  }
}

void check_inputs(UnitImpl& u) {
  const size_t n = u.inputs.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      bool now = u.inputs[i].overlaps(u.inputs[j]);
      if (now != static_cast<bool>(u.captured_overlap[i][j]))
        throw JitError(now ? "inputs " + std::to_string(i) + " and " + std::to_string(j) + " share storage (" + u.inputs[i].describe() + ", " +
                                 u.inputs[j].describe() + ") but were different buffers at capture; replaying would alias them silently"
                           : "inputs " + std::to_string(i) + " and " + std::to_string(j) + " were the same storage at capture but are different buffers now (" +
                                 u.inputs[i].describe() + ", " + u.inputs[j].describe() + ")");
    }
  for (uint32_t s = 0; s < n; ++s) {
    bool alias = false;
    BufferImpl* in = u.inputs[s].impl();
    for (BufferImpl* r : u.fresh_output_roots) alias = alias || in->root() == r;
    if (alias && u.slot_written[s])
      throw JitError("input " + std::to_string(s) + " is " + u.inputs[s].describe() +
                     ", an output of this same step, and the step writes that input: in eager execution the output would be a new buffer, "
                     "so replay cannot give both results in one buffer. Pass a copy, or set fresh_outputs");
    if (alias != static_cast<bool>(u.staged[s])) {
      if (alias && !u.staging[s]) u.staging[s] = Buffer(u.inputs[s].device(), u.inputs[s].dtype(), u.inputs[s].count());
      u.staged[s] = alias;
      set_slot_buffer(u, s, alias ? u.staging[s] : u.inputs[s]);
    }
  }
  u.inputs_changed = false;
}

// DEBUG=2: run one item synchronously and print its line (slow by design: debugging only).
static void run_bound_debug(UnitImpl& u, BoundItem& b) {
  auto t0 = std::chrono::steady_clock::now();
  run_bound(u, b);
  b.dev->finish();
  debug_print_item(u.items[b.item], 0, nullptr, nullptr, 0,
                   std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

template <class Run> static void run_items(UnitImpl& u, Run run);

void run_unit(UnitImpl& u) {
  static const bool debug = debug_level() >= 2;
  if (!u.bound) bind_unit(u);
  if (u.inputs_changed) check_inputs(u);
  // an input that is this step's own output: eager execution would read it before writing a new
  // output buffer, so replay reads a private copy taken first
  for (uint32_t s = 0; s < u.staged.size(); ++s)
    if (u.staged[s]) {
      BufferImpl& d = *u.staging[s].impl();
      BufferImpl& src = *u.inputs[s].impl();
      d.dev->copy(d.root()->mem, d.offset, src.root()->mem, src.offset, d.nbytes);
    }
  if (debug) run_items(u, run_bound_debug);
  else run_items(u, run_bound);
  for (BufferImpl* r : u.written_roots) r->version.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t ei : u.written_entries) u.entries[ei].current.impl()->bump();
}

template <class Run> static void run_items(UnitImpl& u, Run run) {
  bool stale = false;
  if (!testing::ignore_versions)
    for (auto& [r, ver] : u.once_versions) stale = stale || r->version.load(std::memory_order_relaxed) != ver;
  if (stale) {
    // Re-run the one-time items at their places in step order, not first: an earlier replayed item
    // may read bytes a one-time item writes (a closure table read early and rebuilt late in the
    // step), and in eager execution it sees them as they were before the rebuild.
    size_t k = 0;
    for (BoundItem& b : u.replay) {
      for (; k < u.once.size() && u.once[k].item < b.item; ++k) run(u, u.once[k]);
      run(u, b);
    }
    for (; k < u.once.size(); ++k) run(u, u.once[k]);
    for (BufferImpl* r : u.once_written) r->bump();
    for (auto& [r, ver] : u.once_versions) ver = r->version.load(std::memory_order_relaxed);
  } else {
    for (BoundItem& b : u.replay) run(u, b);
  }
}

}  // namespace encore::detail
