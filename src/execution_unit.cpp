// ExecutionUnit: classify the captured buffers, prune one-time items, plan temporaries into an
// arena, bind one kernel object per item, and replay with only the changed arguments re-set.
#include "encore/execution_unit.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "encore/memory_planner.hpp"
#include "prune.hpp"
#include "unit_impl.hpp"

namespace encore {

using namespace detail;

namespace detail {

namespace {

bool has(Access a, Access bit) { return (static_cast<uint8_t>(a) & static_cast<uint8_t>(bit)) != 0; }

template <class F> void for_each_buffer(ExecItem& it, F&& f) {
  if (it.dst) f(it.dst);
  if (it.src) f(it.src);
  for (Arg& a : it.args)
    if (a.kind == Arg::Kind::buffer) f(a.buf);
}

struct ItemAccess {
  uint32_t entry;
  Access access;
};

}  // namespace

std::vector<BufferImpl*> find_internal(const std::vector<ExecItem>& items, uint64_t capture_id) {
  if (capture_id == 0) return {};
  // Count the handles the items hold (by reference: a copy would change the counts).
  std::unordered_map<BufferImpl*, std::pair<long, const std::shared_ptr<BufferImpl>*>> refs;
  auto count = [&](const Buffer& b) {
    if (!b) return;
    auto& r = refs[b.impl()];
    ++r.first;
    r.second = &b.shared_impl();
  };
  for (const ExecItem& it : items) {
    count(it.dst);
    count(it.src);
    for (const Arg& a : it.args)
      if (a.kind == Arg::Kind::buffer) count(a.buf);
  }
  std::unordered_map<BufferImpl*, std::pair<long, const std::shared_ptr<BufferImpl>*>> view_refs;  // root -> views in items
  for (auto& [impl, r] : refs)
    if (impl->base) {
      auto& v = view_refs[impl->base.get()];
      ++v.first;
      v.second = &impl->base;
    }
  std::unordered_set<BufferImpl*> external;
  for (auto& [impl, r] : refs) {
    long expected = r.first + (impl->base ? 0 : view_refs.count(impl) ? view_refs[impl].first : 0);
    if (r.second->use_count() > expected) external.insert(impl->root());
  }
  for (auto& [root, v] : view_refs)
    if (!refs.count(root) && v.second->use_count() > v.first) external.insert(root);
  std::vector<BufferImpl*> out;
  std::unordered_set<BufferImpl*> seen;
  for (auto& [impl, r] : refs) {
    BufferImpl* root = impl->root();
    if (root->capture_id == capture_id && !external.count(root) && seen.insert(root).second) out.push_back(root);
  }
  return out;
}

namespace {

void set_kernel_var(UnitImpl& u, const VarUse& use, uint32_t slot) {
  uint64_t bits = var_arg_bits(*u.vars[slot].state(), u.var_i[slot], u.var_f[slot], use.as);
  BoundItem& b = use.bound < u.replay.size() ? u.replay[use.bound] : u.once[use.bound - u.replay.size()];
  b.kernel->set_arg(use.arg, size(use.as), &bits);
}

BoundItem& bound_at(UnitImpl& u, uint32_t i) { return i < u.replay.size() ? u.replay[i] : u.once[i - u.replay.size()]; }

// Re-point every kernel argument of entry e at its current buffer.
void refresh_entry(UnitImpl& u, Entry& e) {
  if (!u.bound) return;
  void* h = e.current.impl()->handle();
  for (auto [bi, arg] : e.kernel_uses) bound_at(u, bi).kernel->set_buffer(arg, h);
}

// The buffer an input-derived entry uses for input buffer `in`: the input itself, or a rebased
// view of it, cached so steady-state replays with rotating inputs allocate nothing.
Buffer rebase(Entry& e, const Buffer& in) {
  BufferImpl* cap = e.captured.impl();
  if (e.rel == 0 && cap->nbytes == in.nbytes() && cap->dtype == in.dtype()) return in;
  for (auto& [k, v] : e.view_cache)
    if (k == in.impl()) return v;
  Buffer v = in.view_as(cap->dtype, e.rel, cap->count);
  e.view_cache[e.view_cache_next] = {in.impl(), v};
  e.view_cache_next = (e.view_cache_next + 1) % e.view_cache.size();
  return v;
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

void run_bound(UnitImpl& u, BoundItem& b) {
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

}  // namespace

static void bind_unit(UnitImpl& u);

std::unique_ptr<UnitImpl> make_unit(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs,
                                    UnitOptions opt, std::vector<BufferImpl*> internal, std::vector<uint64_t> capture_ids) {
  auto up = std::make_unique<UnitImpl>();
  UnitImpl& u = *up;
  u.opt = opt;
  u.items = std::move(items);
  u.inputs_captured = inputs;
  u.inputs = std::move(inputs);
  u.outputs = std::move(outputs);
  const size_t n = u.items.size();
  for (const Buffer& b : u.inputs_captured)
    if (!b) throw JitError("input buffer is null");

  // entries: one per distinct handle
  std::unordered_map<BufferImpl*, uint32_t> entry_of;
  std::vector<std::vector<ItemAccess>> acc(n);
  auto entry = [&](const Buffer& b) {
    auto [it, fresh] = entry_of.emplace(b.impl(), static_cast<uint32_t>(u.entries.size()));
    if (fresh) {
      Entry e;
      e.captured = b;
      e.current = b;
      u.entries.push_back(std::move(e));
    }
    return it->second;
  };
  for (uint32_t i = 0; i < n; ++i) {
    ExecItem& it = u.items[i];
    switch (it.kind) {
      case ItemKind::kernel:
        for (const Arg& a : it.args)
          if (a.kind == Arg::Kind::buffer) acc[i].push_back({entry(a.buf), a.access});
        break;
      case ItemKind::copy:
        acc[i].push_back({entry(it.src), Access::in});
        acc[i].push_back({entry(it.dst), Access::out});
        break;
      case ItemKind::upload: acc[i].push_back({entry(it.dst), Access::out}); break;
    }
  }

  // inputs: an entry inside an input's bytes follows that input
  u.slot_entries.resize(u.inputs_captured.size());
  for (uint32_t ei = 0; ei < u.entries.size(); ++ei) {
    Entry& e = u.entries[ei];
    BufferImpl* b = e.captured.impl();
    for (uint32_t s = 0; s < u.inputs_captured.size(); ++s) {
      BufferImpl* in = u.inputs_captured[s].impl();
      if (b->root() != in->root() || b->offset >= in->offset + in->nbytes || in->offset >= b->offset + b->nbytes) continue;
      if (b->offset < in->offset || b->offset + b->nbytes > in->offset + in->nbytes)
        throw JitError("the step uses " + e.captured.describe() + ", which lies partly inside input " + std::to_string(s) + " (" +
                       u.inputs_captured[s].describe() + "): a buffer must lie wholly inside an input or outside all of them");
      e.kind = Entry::Kind::input;
      e.slot = s;
      e.rel = b->offset - in->offset;
      u.slot_entries[s].push_back(ei);
      break;
    }
  }

  // storages (roots) for pruning and planning
  std::unordered_map<BufferImpl*, uint32_t> root_of;
  std::vector<BufferImpl*> roots;
  std::vector<uint32_t> entry_root(u.entries.size());
  for (uint32_t ei = 0; ei < u.entries.size(); ++ei) {
    BufferImpl* r = u.entries[ei].captured.impl()->root();
    auto [it, fresh] = root_of.emplace(r, static_cast<uint32_t>(roots.size()));
    if (fresh) roots.push_back(r);
    entry_root[ei] = it->second;
  }
  auto is_fresh = [&](BufferImpl* r) {
    return r->capture_id != 0 && std::find(capture_ids.begin(), capture_ids.end(), r->capture_id) != capture_ids.end();
  };
  std::vector<PruneItem> pitems(n);
  std::vector<int64_t> first_use(roots.size(), -1);
  std::vector<bool> touches_input(n, false);
  for (uint32_t i = 0; i < n; ++i) {
    for (const ItemAccess& a : acc[i]) {
      uint32_t r = entry_root[a.entry];
      BufferImpl* b = u.entries[a.entry].captured.impl();
      bool read = has(a.access, Access::in), write = has(a.access, Access::out);
      // storage allocated during the call: its first access is a pure write even when inout,
      // since its earlier contents are undefined in eager execution too
      if ((first_use[r] == -1 || first_use[r] == i) && is_fresh(roots[r]) && write) read = false;
      if (first_use[r] == -1) first_use[r] = i;
      pitems[i].accesses.push_back({r, b->offset, b->offset + b->nbytes, read, write});
      if (u.entries[a.entry].kind == Entry::Kind::input) touches_input[i] = true;
    }
    pitems[i].volatile_ = touches_input[i] || u.items[i].uses_variables();
  }
  u.one_time = opt.prune ? one_time_items(pitems) : std::vector<bool>(n, false);

  // planning: internal roots untouched by one-time items and cross-device copies, first written
  std::vector<bool> plannable(roots.size(), false);
  std::unordered_set<BufferImpl*> internal_set(internal.begin(), internal.end());
  for (uint32_t r = 0; r < roots.size(); ++r) plannable[r] = opt.plan && internal_set.count(roots[r]);
  std::vector<bool> first_read(roots.size(), false);
  for (uint32_t i = 0; i < n; ++i) {
    bool cross = u.items[i].kind == ItemKind::copy && u.items[i].dst.impl()->dev != u.items[i].src.impl()->dev;
    for (size_t k = 0; k < acc[i].size(); ++k) {
      uint32_t r = entry_root[acc[i][k].entry];
      if (u.one_time[i] || cross) plannable[r] = false;
      if (first_use[r] == i && pitems[i].accesses[k].read) plannable[r] = false;  // reads undefined bytes: keep as is
    }
  }
  std::unordered_map<DeviceImpl*, std::vector<uint32_t>> temps_by_dev;
  for (uint32_t r = 0; r < roots.size(); ++r)
    if (plannable[r]) temps_by_dev[roots[r]->dev.get()].push_back(r);
  std::vector<Buffer> placeholder(roots.size());
  std::vector<std::pair<uint32_t, uint64_t>> root_place(roots.size());  // (arena, offset)
  for (auto& [dev, temps] : temps_by_dev) {
    std::vector<uint64_t> bytes;
    std::vector<uint32_t> temp_of(roots.size(), UINT32_MAX);
    for (uint32_t t = 0; t < temps.size(); ++t) {
      temp_of[temps[t]] = t;
      bytes.push_back(roots[temps[t]]->nbytes);
    }
    std::vector<TempUse> uses;
    for (uint32_t i = 0; i < n; ++i)
      for (const ItemAccess& a : acc[i])
        if (uint32_t t = temp_of[entry_root[a.entry]]; t != UINT32_MAX) uses.push_back({i, t});
    uint64_t align = dev->info.base_align_bytes;
    MemoryPlan plan = plan_memory(bytes, uses, align);
#ifndef NDEBUG
    if (std::string why = check_plan(bytes, uses, align, plan); !why.empty()) throw Error("internal error: invalid memory plan: " + why);
#endif
    uint32_t arena = static_cast<uint32_t>(u.arenas.size());
    u.arenas.push_back({roots[temps[0]]->dev, plan.arena_bytes, {}});
    for (uint32_t t = 0; t < temps.size(); ++t) root_place[temps[t]] = {arena, plan.offsets[t]};
    u.stats.temp_bytes_naive += plan.naive_bytes;
    u.stats.temp_bytes_planned += plan.arena_bytes;
    u.stats.temp_bytes_lower_bound += plan.lower_bound_bytes;
    u.stats.planned_temps += temps.size();
  }
  // Planned temps: the items keep unallocated placeholders, so the capture's temporaries are freed.
  std::unordered_map<BufferImpl*, Buffer> replacement;
  for (uint32_t ei = 0; ei < u.entries.size(); ++ei) {
    Entry& e = u.entries[ei];
    uint32_t r = entry_root[ei];
    if (!plannable[r]) continue;
    BufferImpl* old = e.captured.impl();
    if (!placeholder[r]) {
      auto p = std::make_shared<BufferImpl>();
      p->dev = roots[r]->dev;
      p->dtype = roots[r]->dtype;
      p->count = roots[r]->count;
      p->nbytes = roots[r]->nbytes;
      p->capture_id = roots[r]->capture_id;
      p->name = roots[r]->name;
      placeholder[r] = Buffer(std::move(p));
    }
    Buffer rep = old->base ? placeholder[r].view_as(old->dtype, old->offset, old->count) : placeholder[r];
    replacement[old] = rep;
    e.kind = Entry::Kind::planned;
    u.planned.push_back({ei, {root_place[r].first, root_place[r].second + old->offset}});
    e.captured = rep;
    e.current = Buffer();
  }
  if (!replacement.empty()) {
    for (ExecItem& it : u.items)
      for_each_buffer(it, [&](Buffer& b) {
        if (auto f = replacement.find(b.impl()); f != replacement.end()) b = f->second;
      });
    for (uint32_t r = 0; r < roots.size(); ++r)
      if (plannable[r]) u.internal.push_back(placeholder[r].impl());
  }
  for (BufferImpl* r : internal)  // unplanned internal roots stay internal (alive through the items)
    if (auto f = root_of.find(r); f != root_of.end() && !plannable[f->second]) u.internal.push_back(r);
  // fresh outputs: outputs created during the capture (replay overwrites them in place)
  for (const Buffer& o : u.outputs)
    if (o && is_fresh(o.impl()->root())) u.fresh_output_roots.push_back(o.impl()->root());
  // which input slots the step writes
  u.slot_written.assign(u.inputs_captured.size(), false);
  for (uint32_t i = 0; i < n; ++i)
    for (const ItemAccess& a : acc[i])
      if (u.entries[a.entry].kind == Entry::Kind::input && has(a.access, Access::out)) u.slot_written[u.entries[a.entry].slot] = true;
  u.captured_overlap.assign(u.inputs_captured.size(), std::vector<uint8_t>(u.inputs_captured.size(), 0));
  for (size_t i = 0; i < u.inputs_captured.size(); ++i)
    for (size_t j = 0; j < u.inputs_captured.size(); ++j) u.captured_overlap[i][j] = u.inputs_captured[i].overlaps(u.inputs_captured[j]);
  u.staging.resize(u.inputs_captured.size());
  u.staged.assign(u.inputs_captured.size(), 0);

  // variables, in order of first use
  std::unordered_map<VarState*, uint32_t> var_of;
  auto var_slot = [&](const Variable& v) {
    auto [it, fresh] = var_of.emplace(v.state(), static_cast<uint32_t>(u.vars.size()));
    if (fresh) {
      u.vars.push_back(v);
      u.var_i.push_back(v.value());
      u.var_f.push_back(v.fvalue());
    }
    return it->second;
  };
  for (const ExecItem& it : u.items) {
    if (it.kind != ItemKind::kernel) continue;
    for (const Arg& a : it.args)
      if (a.kind == Arg::Kind::variable) var_slot(*a.var);
    for (uint8_t d = 0; d < it.global.n; ++d)
      if (it.global.v[d].var()) var_slot(*it.global.v[d].var());
    for (uint8_t d = 0; d < it.local.n; ++d)
      if (it.local.v[d].var()) var_slot(*it.local.v[d].var());
  }
  u.var_uses.resize(u.vars.size());

  std::unordered_set<DeviceImpl*> devs;
  for (const ExecItem& it : u.items) {
    auto d = it.kind == ItemKind::kernel ? it.kernel.impl()->program->dev : it.dst.impl()->dev;
    if (devs.insert(d.get()).second) u.devices.push_back(d);
  }

  u.stats.items = n;
  u.stats.items_pruned = static_cast<size_t>(std::count(u.one_time.begin(), u.one_time.end(), true));
  u.stats.items_replayed = n - u.stats.items_pruned;
  u.stats.inputs = u.inputs_captured.size();
  u.stats.variables = u.vars.size();
  u.stats.batches = 0;
  if (debug_level() >= 1)
    std::fprintf(stderr, "encore: captured %zu items: %zu pruned, %zu replayed; %zu inputs, %zu variables; temps %zu planned: %llu -> %llu bytes (lower bound %llu); batches %zu\n",
                 n, u.stats.items_pruned, u.stats.items_replayed, u.stats.inputs, u.stats.variables, u.stats.planned_temps,
                 static_cast<unsigned long long>(u.stats.temp_bytes_naive), static_cast<unsigned long long>(u.stats.temp_bytes_planned),
                 static_cast<unsigned long long>(u.stats.temp_bytes_lower_bound), u.stats.batches);
  bind_unit(u);
  return up;
}

static void bind_unit(UnitImpl& u) {
  // arenas and planned entries
  for (auto& a : u.arenas)
    if (!a.buf) {
      a.buf = Buffer(Device(a.dev), DType::u8, std::max<uint64_t>(a.bytes, 1));
      a.buf.impl()->ensure_allocated();
    }
  for (auto& [ei, place] : u.planned) {
    Entry& e = u.entries[ei];
    BufferImpl* c = e.captured.impl();
    e.current = u.arenas[place.first].buf.view_as(c->dtype, place.second, c->count);
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

static void check_inputs(UnitImpl& u) {
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

static void run_unit(UnitImpl& u) {
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

}  // namespace detail

ExecutionUnit::ExecutionUnit() = default;
ExecutionUnit::~ExecutionUnit() {
  if (impl_)
    for (auto& d : impl_->devices) try {
        d->finish();  // pending uploads read the unit's snapshots
      } catch (...) {
      }
}
ExecutionUnit::ExecutionUnit(ExecutionUnit&&) noexcept = default;
ExecutionUnit& ExecutionUnit::operator=(ExecutionUnit&& o) noexcept {
  if (this != &o) {
    ExecutionUnit old(std::move(*this));
    impl_ = std::move(o.impl_);
  }
  return *this;
}

static UnitImpl& need(const std::unique_ptr<UnitImpl>& u) {
  if (!u) throw JitError("use of an empty ExecutionUnit");
  return *u;
}

ExecutionUnit ExecutionUnit::build(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs, UnitOptions options) {
  ExecutionUnit u;
  u.impl_ = make_unit(std::move(items), std::move(inputs), std::move(outputs), options, {}, {});
  return u;
}

UnitImpl& UnitImpl::of(const ExecutionUnit& u) { return need(u.impl_); }
ExecutionUnit detail::UnitAccess::wrap(std::unique_ptr<UnitImpl> p) {
  ExecutionUnit u;
  u.impl_ = std::move(p);
  return u;
}

const std::vector<ExecItem>& ExecutionUnit::items() const { return need(impl_).items; }
std::vector<bool> ExecutionUnit::one_time() const { return need(impl_).one_time; }
const UnitStats& ExecutionUnit::stats() const { return need(impl_).stats; }
size_t ExecutionUnit::num_inputs() const { return need(impl_).inputs.size(); }
const Buffer& ExecutionUnit::captured_input(size_t slot) const {
  UnitImpl& u = need(impl_);
  if (slot >= u.inputs.size()) throw JitError("input slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.inputs.size()) + ")");
  return u.inputs_captured[slot];
}
const Buffer& ExecutionUnit::input(size_t slot) const {
  captured_input(slot);
  return impl_->inputs[slot];
}
size_t ExecutionUnit::num_variables() const { return need(impl_).vars.size(); }
const Variable& ExecutionUnit::variable(size_t slot) const {
  UnitImpl& u = need(impl_);
  if (slot >= u.vars.size()) throw JitError("variable slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.vars.size()) + ")");
  return u.vars[slot];
}
size_t ExecutionUnit::variable_slot(const Variable& v) const {
  UnitImpl& u = need(impl_);
  for (size_t i = 0; i < u.vars.size(); ++i)
    if (u.vars[i] == v) return i;
  throw JitError("variable \"" + v.name() + "\" is not used by the unit's items");
}

ExecutionUnit& ExecutionUnit::bind_input(size_t slot, const Buffer& b) {
  UnitImpl& u = need(impl_);
  if (slot >= u.inputs.size())
    throw JitError("input slot " + std::to_string(slot) + " out of range: the capture has " + std::to_string(u.inputs.size()) + " inputs");
  if (!b) throw JitError("input " + std::to_string(slot) + ": null buffer");
  if (b.impl() == u.inputs[slot].impl()) return *this;
  const Buffer& c = u.inputs_captured[slot];
  BufferImpl& bi = *b.impl();
  BufferImpl& ci = *c.impl();
  if (bi.dtype != ci.dtype || bi.count != ci.count || bi.dev != ci.dev)
    throw JitError("input " + std::to_string(slot) + ": captured " + c.describe() + ", given " + b.describe() +
                   (bi.dev != ci.dev ? " (different device)" : bi.dtype != ci.dtype ? " (different dtype)" : " (different element count)"));
  u.inputs[slot] = b;
  u.inputs_changed = true;
  u.staged[slot] = 0;
  if (u.bound) set_slot_buffer(u, static_cast<uint32_t>(slot), b);
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var(size_t slot, int64_t value) {
  UnitImpl& u = need(impl_);
  const Variable& v = variable(slot);
  if (v.is_float()) return bind_var_f(slot, static_cast<double>(value));
  if (value < v.min() || value > v.max())
    throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds [" + std::to_string(v.min()) + ", " +
                   std::to_string(v.max()) + "]");
  if (u.var_i[slot] == value) return *this;
  int64_t old = u.var_i[slot];
  u.var_i[slot] = value;
  u.var_f[slot] = static_cast<double>(value);
  try {
    if (u.bound)
      for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
  } catch (...) {
    u.var_i[slot] = old;
    u.var_f[slot] = static_cast<double>(old);
    for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
    throw;
  }
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var_f(size_t slot, double value) {
  UnitImpl& u = need(impl_);
  const Variable& v = variable(slot);
  if (!v.is_float()) {
    if (value != static_cast<double>(static_cast<int64_t>(value))) throw JitError("variable \"" + v.name() + "\" is an integer variable");
    return bind_var(slot, static_cast<int64_t>(value));
  }
  if (!(value >= v.fmin() && value <= v.fmax())) throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds");
  if (u.var_f[slot] == value) return *this;
  u.var_f[slot] = value;
  u.var_i[slot] = static_cast<int64_t>(value);
  if (u.bound)
    for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
  return *this;
}

ExecutionUnit& ExecutionUnit::bind(const BoundVar& bv) {
  size_t slot = variable_slot(bv.var);
  return bv.var.is_float() ? bind_var_f(slot, bv.f) : bind_var(slot, bv.i);
}

ExecutionUnit& ExecutionUnit::update(const std::map<Buffer, Buffer>& buffers, std::span<const BoundVar> var_vals) {
  UnitImpl& u = need(impl_);
  for (const auto& [from, to] : buffers) {
    size_t slot = SIZE_MAX;
    for (size_t s = 0; s < u.inputs_captured.size() && slot == SIZE_MAX; ++s)
      if (u.inputs_captured[s] == from) slot = s;
    if (slot == SIZE_MAX) throw JitError("update: " + from.describe() + " is not an input of this unit");
    bind_input(slot, to);
  }
  for (const BoundVar& v : var_vals) bind(v);
  return *this;
}

void ExecutionUnit::operator()() { run_unit(need(impl_)); }

double ExecutionUnit::run_and_wait() {
  UnitImpl& u = need(impl_);
  for (auto& d : u.devices) d->finish();
  auto t0 = std::chrono::steady_clock::now();
  run_unit(u);
  for (auto& d : u.devices) d->finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ExecutionUnit ExecutionUnit::operator+(const ExecutionUnit& o) const {
  UnitImpl& a = need(impl_);
  UnitImpl& b = need(o.impl_);
  std::vector<ExecItem> items = a.items;
  items.insert(items.end(), b.items.begin(), b.items.end());
  std::vector<Buffer> inputs = a.inputs_captured;
  for (const Buffer& x : b.inputs_captured)
    if (std::find(inputs.begin(), inputs.end(), x) == inputs.end()) inputs.push_back(x);
  std::vector<Buffer> outputs = a.outputs;
  outputs.insert(outputs.end(), b.outputs.begin(), b.outputs.end());
  std::vector<BufferImpl*> internal = a.internal;
  internal.insert(internal.end(), b.internal.begin(), b.internal.end());
  std::vector<uint64_t> ids;
  for (BufferImpl* r : internal) ids.push_back(r->capture_id);
  for (const Buffer& x : outputs)
    if (x) ids.push_back(x.impl()->root()->capture_id);
  ExecutionUnit r;
  r.impl_ = make_unit(std::move(items), std::move(inputs), std::move(outputs), a.opt, std::move(internal), std::move(ids));
  return r;
}

void ExecutionUnit::free_intermediates() {
  UnitImpl& u = need(impl_);
  for (auto& d : u.devices) d->finish();
  u.bound = false;
  u.replay.clear();
  u.once.clear();
  for (auto& [ei, place] : u.planned) u.entries[ei].current = Buffer();
  for (auto& a : u.arenas) a.buf = Buffer();
  for (Entry& e : u.entries) e.kernel_uses.clear();
}

}  // namespace encore
