// The plan of a unit: which buffers are inputs, planned temps or fixed state; the one-time set
// (DESIGN rule 2); the arena plan (rule 3); every item's arguments resolved to entries and variable
// slots. A pure function of the recorded items: it makes no device call.
#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "encore/memory_planner.hpp"
#include "exec/kind.hpp"
#include "unit/flow_plan.hpp"
#include "unit/prune.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

namespace {

template <class F> void for_each_buffer(const ExecItem& it, F&& f) {
  std::vector<Operand> ops;
  kind_of(it).operands(it, ops);
  for (const Operand& o : ops) f(*o.buf);
}

// Some by-value argument comes from a host input (Arg::host_slot).
bool host_bytes(const ExecItem& it) {
  for (const Arg& a : it.args)
    if (a.kind == Arg::Kind::bytes && a.host_slot >= 0) return true;
  return false;
}

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
  for (const ExecItem& it : items) for_each_buffer(it, count);
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

bool Plan::is_internal(const BufferImpl* root) const { return std::find(internal.begin(), internal.end(), root) != internal.end(); }
bool Plan::is_fresh_output(const BufferImpl* root) const {
  return std::find(fresh_output_roots.begin(), fresh_output_roots.end(), root) != fresh_output_roots.end();
}

std::vector<Buffer> Plan::state_storages() const {
  std::vector<Buffer> out;
  std::unordered_set<BufferImpl*> seen;
  for (const PlanEntry& e : entries) {
    if (e.kind != PlanEntry::Kind::fixed) continue;
    BufferImpl* r = e.captured.impl()->root();
    if (!is_internal(r) && !is_fresh_output(r) && seen.insert(r).second) out.push_back(e.captured.base());
  }
  return out;
}

Plan make_plan(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs, UnitOptions opt,
               std::vector<BufferImpl*> internal, const std::vector<uint64_t>& capture_ids) {
  Plan u;
  u.opt = opt;
  u.items = std::move(items);
  u.inputs = std::move(inputs);
  u.outputs = std::move(outputs);
  const size_t n = u.items.size();
  for (const Buffer& b : u.inputs)
    if (!b) throw JitError("input buffer is null");
  const FlowShape shape = flow_shape(u.items);
  u.flow = shape.any;
  if (u.flow) check_flow(u.items, shape);

  // entries: one per distinct handle
  std::unordered_map<BufferImpl*, uint32_t> entry_of;
  std::vector<std::vector<ItemAccess>>& acc = u.access;
  acc.resize(n);
  auto entry = [&](const Buffer& b) {
    auto [it, fresh] = entry_of.emplace(b.impl(), static_cast<uint32_t>(u.entries.size()));
    if (fresh) u.entries.push_back(PlanEntry{PlanEntry::Kind::fixed, 0, 0, b, false});
    return it->second;
  };
  u.steps.resize(n);
  std::vector<Operand> ops;
  for (uint32_t i = 0; i < n; ++i) {
    const ExecItem& it = u.items[i];
    PlanStep& st = u.steps[i];
    ops.clear();
    kind_of(it).operands(it, ops);
    const DeviceImpl* q = kind_of(it).queue(it).get();
    for (const Operand& o : ops) {
      st.ops.push_back(entry(*o.buf));
      acc[i].push_back({st.ops.back(), o.access, o.arg});
      st.cross_device = st.cross_device || o.buf->impl()->dev.get() != q;
    }
  }

  // inputs: an entry inside an input's bytes follows that input (by root, so this stays linear)
  u.slot_entries.resize(u.inputs.size());
  {
    std::unordered_map<BufferImpl*, std::vector<uint32_t>> slots_of_root;
    for (uint32_t s = 0; s < u.inputs.size(); ++s) slots_of_root[u.inputs[s].impl()->root()].push_back(s);
    for (uint32_t ei = 0; ei < u.entries.size(); ++ei) {
      PlanEntry& e = u.entries[ei];
      BufferImpl* b = e.captured.impl();
      auto f = slots_of_root.find(b->root());
      if (f == slots_of_root.end()) continue;
      for (uint32_t s : f->second) {
        BufferImpl* in = u.inputs[s].impl();
        if (b->offset >= in->offset + in->nbytes || in->offset >= b->offset + b->nbytes) continue;
        if (b->offset < in->offset || b->offset + b->nbytes > in->offset + in->nbytes)
          throw JitError("the step uses " + e.captured.describe() + ", which lies partly inside input " + std::to_string(s) + " (" +
                         u.inputs[s].describe() + "): a buffer must lie wholly inside an input or outside all of them");
        e.kind = PlanEntry::Kind::input;
        e.slot = s;
        e.rel = b->offset - in->offset;
        u.slot_entries[s].push_back(ei);
        break;
      }
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
  // A pure read (`in`) of storage allocated during the call before any item has touched it reads
  // undefined bytes, in eager execution too; replay would read arena bytes, so the two would differ
  // with no diagnosis (DESIGN rule 6). A first access that may write (inout, out) is a pure write
  // (rule 2). Inputs are defined by the caller. By storage: a write to one part of it counts.
  {
    std::vector<uint8_t> touched(roots.size(), 0);
    for (uint32_t i = 0; i < n; ++i) {
      for (const ItemAccess& a : acc[i]) {
        uint32_t r = entry_root[a.entry];
        if (touched[r] || a.access != Access::in || !is_fresh(roots[r]) || u.entries[a.entry].kind == PlanEntry::Kind::input) continue;
        const ExecItem& it = u.items[i];
        const std::string what = kind_of(it).operand_name(it, a.arg);
        const std::string item = kind_of(it).title(it);
        throw JitError("item " + std::to_string(i) + " (" + item + ") reads " + u.entries[a.entry].captured.describe() + " through its " +
                       what + " before any item writes it: that buffer was allocated during the captured call, so its bytes are undefined "
                       "(eager execution reads whatever the new allocation holds, replay other bytes again). Write it first in the step "
                       "(a kernel, a copy or a copyin), or keep its contents across calls by allocating it outside the step (closure "
                       "state) or passing it as an input");
      }
      for (const ItemAccess& a : acc[i]) touched[entry_root[a.entry]] = 1;
    }
  }
  std::vector<PruneItem> pitems(n);
  std::vector<int64_t> first_use(roots.size(), -1);
  for (uint32_t i = 0; i < n; ++i) {
    bool touches_input = false;
    for (const ItemAccess& a : acc[i]) {
      uint32_t r = entry_root[a.entry];
      BufferImpl* b = u.entries[a.entry].captured.impl();
      bool read = has(a.access, Access::in), write = has(a.access, Access::out);
      // storage allocated during the call: its first access is a pure write even when inout,
      // since its earlier contents are undefined in eager execution too
      if ((first_use[r] == -1 || first_use[r] == i) && is_fresh(roots[r]) && write) read = false;
      if (first_use[r] == -1) first_use[r] = i;
      pitems[i].accesses.push_back({r, b->offset, b->offset + b->nbytes, read, write});
      if (u.entries[a.entry].kind == PlanEntry::Kind::input) touches_input = true;
    }
    // native work is opaque: never one-time (it may hold state of its own, or read the clock); an
    // upload from a host input, or a launch with by-value bytes from one, depends on the call like
    // a buffer input
    // an item inside a branch alternative or a loop body runs only when its parent says so
    pitems[i].volatile_ = touches_input || u.items[i].uses_variables() || kind_of(u.items[i]).opaque || u.items[i].host_slot >= 0 || host_bytes(u.items[i]) ||
                          (u.flow && shape.parent[i] >= 0);
  }
  if (opt.prune) {
    TraceSpan span("prune");
    PruneResult pr = prune(pitems);
    u.one_time = std::move(pr.one_time);
    // ENCORE_DEBUG=1: items that would be one-time but for exactly one condition, and which
    for (uint32_t i = 0; i < n && debug_level() >= 1; ++i) {
      const KeepWhy& w = pr.why[i];
      if (u.one_time[i] || w.reason == KeepReason::none || w.reason == KeepReason::volatile_) continue;
      std::string note = "item " + std::to_string(i) + " (" + u.items[i].describe() + "): " + describe(w.reason);
      if (w.other != no_item && w.other != i) note += " [item " + std::to_string(w.other) + ": " + u.items[w.other].describe() + "]";
      u.keep_notes.push_back(std::move(note));
    }
  } else {
    u.one_time.assign(n, false);
  }
  if (u.flow)
    for (uint32_t i = static_cast<uint32_t>(n); i-- > 0;)
      if (!u.one_time[i]) {
        const ItemKind k = u.items[i].kind;
        u.flow_tail = shape.parent[i] < 0 && k != ItemKind::host && k != ItemKind::branch && k != ItemKind::loop;
        break;
      }

  // planning: internal roots untouched by one-time items and cross-device copies, first written
  std::vector<bool> plannable(roots.size(), false);
  std::unordered_set<BufferImpl*> internal_set(internal.begin(), internal.end());
  for (uint32_t r = 0; r < roots.size(); ++r) plannable[r] = opt.plan && internal_set.count(roots[r]);
  for (uint32_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < acc[i].size(); ++k) {
      uint32_t r = entry_root[acc[i][k].entry];
      if (u.one_time[i] || u.steps[i].cross_device) plannable[r] = false;
      if (first_use[r] == i && pitems[i].accesses[k].read) plannable[r] = false;  // reads undefined bytes: keep as is
    }
  }
  std::unordered_map<DeviceImpl*, std::vector<uint32_t>> temps_by_dev;
  std::vector<DeviceImpl*> dev_order;
  for (uint32_t r = 0; r < roots.size(); ++r)
    if (plannable[r]) {
      auto& v = temps_by_dev[roots[r]->dev.get()];
      if (v.empty()) dev_order.push_back(roots[r]->dev.get());
      v.push_back(r);
    }
  std::vector<std::pair<uint32_t, uint64_t>> root_place(roots.size());  // (arena, offset)
  for (DeviceImpl* dev : dev_order) {
    const std::vector<uint32_t>& temps = temps_by_dev[dev];
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
    extend_loop_lives(shape, uses);
    uint64_t align = dev->info.base_align_bytes;
    MemoryPlan plan = plan_memory(bytes, uses, align);
#ifndef NDEBUG
    if (std::string why = check_plan(bytes, uses, align, plan); !why.empty()) throw Error("internal error: invalid memory plan: " + why);
#endif
    uint32_t arena = static_cast<uint32_t>(u.arenas.size());
    u.arenas.push_back({roots[temps[0]]->dev, plan.arena_bytes});
    for (uint32_t t = 0; t < temps.size(); ++t) root_place[temps[t]] = {arena, plan.offsets[t]};
    u.stats.temp_bytes_naive += plan.naive_bytes;
    u.stats.temp_bytes_planned += plan.arena_bytes;
    u.stats.temp_bytes_lower_bound += plan.lower_bound_bytes;
    u.stats.planned_temps += temps.size();
  }
  // Planned temps: the items keep unallocated placeholders, so the capture's temporaries are freed.
  std::vector<Buffer> placeholder(roots.size());
  std::unordered_map<BufferImpl*, Buffer> replacement;
  for (uint32_t ei = 0; ei < u.entries.size(); ++ei) {
    PlanEntry& e = u.entries[ei];
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
      p->name = name_of(*roots[r]);
      placeholder[r] = Buffer(std::move(p));
    }
    Buffer rep = old->base ? region(placeholder[r], old->dtype, old->offset, old->count) : placeholder[r];
    replacement[old] = rep;
    e.kind = PlanEntry::Kind::planned;
    e.slot = root_place[r].first;
    e.rel = root_place[r].second + old->offset;
    e.captured = rep;
  }
  if (!replacement.empty()) {
    for (ExecItem& it : u.items)
      for_each_buffer(it, [&](const Buffer& b) {
        if (auto f = replacement.find(b.impl()); f != replacement.end()) const_cast<Buffer&>(b) = f->second;
      });
    for (uint32_t r = 0; r < roots.size(); ++r)
      if (plannable[r]) u.internal.push_back(placeholder[r].impl());
  }
  for (BufferImpl* r : internal)  // unplanned internal roots stay internal (alive through the items)
    if (auto f = root_of.find(r); f != root_of.end() && !plannable[f->second]) u.internal.push_back(r);
  for (const Buffer& o : u.outputs)
    if (o && is_fresh(o.impl()->root())) u.fresh_output_roots.push_back(o.impl()->root());
  // what replayed items write, and which input slots the step writes
  u.slot_written.assign(u.inputs.size(), false);
  for (uint32_t i = 0; i < n; ++i)
    for (const ItemAccess& a : acc[i]) {
      if (!has(a.access, Access::out)) continue;
      if (!u.one_time[i]) u.entries[a.entry].written = true;
      if (u.entries[a.entry].kind == PlanEntry::Kind::input) u.slot_written[u.entries[a.entry].slot] = true;
    }
  u.captured_overlap.assign(u.inputs.size(), std::vector<uint8_t>(u.inputs.size(), 0));
  for (size_t i = 0; i < u.inputs.size(); ++i)
    for (size_t j = 0; j < u.inputs.size(); ++j) u.captured_overlap[i][j] = u.inputs[i].overlaps(u.inputs[j]);

  // variables, in order of first use; sizes and variable arguments as slots
  std::unordered_map<VarState*, uint32_t> var_of;
  auto var_slot = [&](const Variable& v) {
    auto [it, fresh] = var_of.emplace(v.state(), static_cast<uint32_t>(u.vars.size()));
    if (fresh) {
      u.vars.push_back(v);
      u.var_init.push_back(var_value(*v.state()));
    }
    return it->second;
  };
  // An expression that is not affine is checked over its variables' whole ranges here: a value
  // it may take that no launch accepts is refused at capture, not at a later bind.
  auto size_ref = [&](const ExecItem& it, const Size& s, bool local, uint32_t d) {
    if (s.is_affine()) return SizeRef{s.var() ? static_cast<int32_t>(var_slot(*s.var())) : -1, s.mul(), s.add(), -1};
    check_size_range(s, local, "capture: kernel " + it.kernel.name() + ", " + (local ? "local" : "global") + " size in dimension " +
                                   std::to_string(d));
    u.size_exprs.push_back(compile_size(s, var_slot));
    SizeRef r;
    r.expr = static_cast<int32_t>(u.size_exprs.size() - 1);
    return r;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const ExecItem& it = u.items[i];
    PlanStep& st = u.steps[i];
    st.var_ref.assign(it.args.size(), 0);
    for (uint32_t ai = 0; ai < it.args.size(); ++ai)
      if (it.args[ai].kind == Arg::Kind::variable) st.var_ref[ai] = var_slot(*it.args[ai].var);
    st.dims = it.global.n;
    st.has_local = !it.local.empty();
    for (uint32_t d = 0; d < st.dims; ++d) {
      st.g[d] = size_ref(it, it.global.v[d], false, d);
      if (st.has_local) st.l[d] = size_ref(it, it.local.v[d], true, d);
    }
  }

  std::unordered_set<DeviceImpl*> devs;
  for (const ExecItem& it : u.items) {
    const std::shared_ptr<DeviceImpl>& d = queue_of(it);
    if (devs.insert(d.get()).second) u.devices.push_back(d);
    for_each_buffer(it, [&](const Buffer& b) {
      if (devs.insert(b.impl()->dev.get()).second) u.devices.push_back(b.impl()->dev);
    });
  }

  u.sync = plan_sync(u);
  if (u.flow && u.devices.size() > 1)
    throw JitError("a step with host items, branches or loops runs on one device in this version; this one uses " + std::to_string(u.devices.size()) +
                   " (" + u.devices[0]->info.id + ", " + u.devices[1]->info.id + ", ...). Capture the work of each device as a step of its own");
  if (u.flow && u.sync.any_split)
    throw JitError("a step with host items, branches or loops cannot hold split-phase native calls (collectives) in this version: "
                   "capture the collective in a step of its own");

  u.stats.items = n;
  u.stats.items_pruned = static_cast<size_t>(std::count(u.one_time.begin(), u.one_time.end(), true));
  u.stats.items_replayed = n - u.stats.items_pruned;
  u.stats.inputs = u.inputs.size();
  u.stats.variables = u.vars.size();
  u.deps = plan_deps(u);
  u.stats.chains = u.deps.longest ? (u.stats.items_replayed + u.deps.longest - 1) / u.deps.longest : 0;
  return u;
}

}  // namespace encore::detail
