// The plan of a unit: which buffers are inputs, planned temps or fixed state; the one-time set
// (DESIGN rule 2); the arena plan (rule 3); every item's arguments resolved to entries and variable
// slots. A pure function of the recorded items: it makes no device call.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "encore/memory_planner.hpp"
#include "exec/kind.hpp"
#include "testing.hpp"
#include "unit/flow_plan.hpp"
#include "unit/prune.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

namespace {

// ops: the caller's scratch, reused over the items (a vector per item was a third of a large
// capture's allocations).
template <class F> void for_each_buffer(const ExecItem& it, std::vector<Operand>& ops, F&& f) {
  ops.clear();
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
  std::vector<Operand> ops;
  for (const ExecItem& it : items) for_each_buffer(it, ops, count);
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

namespace {

// The entries' storages (roots): pruning, the fresh-read check and the arena plan work by storage.
struct Roots {
  std::vector<BufferImpl*> list;
  std::unordered_map<BufferImpl*, uint32_t> index;  // root -> its place in list
  std::vector<uint32_t> of_entry;                   // per entry: its root's place
};

// Allocated during the captured call: its bytes are undefined until an item writes them.
bool is_fresh(const BufferImpl* r, const std::vector<uint64_t>& capture_ids) {
  return r->capture_id != 0 && std::find(capture_ids.begin(), capture_ids.end(), r->capture_id) != capture_ids.end();
}

// Entries: one per distinct handle, so every later phase works on indices, not handles.
void classify_entries(Plan& p) {
  const size_t n = p.items.size();
  std::unordered_map<BufferImpl*, uint32_t> entry_of;
  auto entry = [&](const Buffer& b) {  // (try_emplace: emplace made a node for every lookup)
    auto [it, fresh] = entry_of.try_emplace(b.impl(), static_cast<uint32_t>(p.entries.size()));
    if (fresh) p.entries.push_back(PlanEntry{PlanEntry::Kind::fixed, 0, 0, b, false});
    return it->second;
  };
  p.steps.resize(n);
  p.access.at.reserve(n + 1);
  std::vector<Operand> ops;
  for (uint32_t i = 0; i < n; ++i) {
    const ExecItem& it = p.items[i];
    PlanStep& st = p.steps[i];
    ops.clear();
    kind_of(it).operands(it, ops);
    const DeviceImpl* q = kind_of(it).queue(it).get();
    for (const Operand& o : ops) {
      p.operand_entries.push_back(entry(*o.buf));
      p.access.all.push_back({p.operand_entries.back(), o.access, o.arg});
      st.cross_device = st.cross_device || o.buf->impl()->dev.get() != q;
    }
    p.access.at.push_back(static_cast<uint32_t>(p.access.all.size()));
  }
  // (once the array no longer grows; a Plan is moved, never copied, so the views stay valid)
  for (uint32_t i = 0; i < n; ++i)
    p.steps[i].ops = std::span<const uint32_t>(p.operand_entries).subspan(p.access.at[i], p.access.at[i + 1] - p.access.at[i]);
}

// Inputs: an entry inside an input's bytes follows that input on replay (by root, so this stays
// linear); one across an input's edge could follow neither, so it is refused.
void follow_inputs(Plan& p) {
  p.slot_entries.resize(p.inputs.size());
  std::unordered_map<BufferImpl*, std::vector<uint32_t>> slots_of_root;
  for (uint32_t s = 0; s < p.inputs.size(); ++s) slots_of_root[p.inputs[s].impl()->root()].push_back(s);
  for (uint32_t ei = 0; ei < p.entries.size(); ++ei) {
    PlanEntry& e = p.entries[ei];
    BufferImpl* b = e.captured.impl();
    auto f = slots_of_root.find(b->root());
    if (f == slots_of_root.end()) continue;
    for (uint32_t s : f->second) {
      BufferImpl* in = p.inputs[s].impl();
      if (b->offset >= in->offset + in->nbytes || in->offset >= b->offset + b->nbytes) continue;
      if (b->offset < in->offset || b->offset + b->nbytes > in->offset + in->nbytes)
        throw JitError("the step uses " + e.captured.describe() + ", which lies partly inside input " + std::to_string(s) + " (" +
                       p.inputs[s].describe() + "): a buffer must lie wholly inside an input or outside all of them");
      e.kind = PlanEntry::Kind::input;
      e.slot = s;
      e.rel = b->offset - in->offset;
      p.slot_entries[s].push_back(ei);
      break;
    }
  }
}

// Storages (roots) for pruning and planning, in order of first use.
Roots find_roots(const Plan& p) {
  Roots r;
  r.of_entry.resize(p.entries.size());
  for (uint32_t ei = 0; ei < p.entries.size(); ++ei) {
    BufferImpl* root = p.entries[ei].captured.impl()->root();
    auto [it, fresh] = r.index.try_emplace(root, static_cast<uint32_t>(r.list.size()));
    if (fresh) r.list.push_back(root);
    r.of_entry[ei] = it->second;
  }
  return r;
}

// A pure read (`in`) of storage allocated during the call before any item has touched it reads
// undefined bytes, in eager execution too; replay would read arena bytes, so the two would differ
// with no diagnosis (DESIGN rule 6). A first access that may write (inout, out) is a pure write
// (rule 2). Inputs are defined by the caller. By storage: a write to one part of it counts.
void check_fresh_reads(const Plan& p, const Roots& roots, const std::vector<uint64_t>& capture_ids) {
  std::vector<uint8_t> touched(roots.list.size(), 0);
  for (uint32_t i = 0; i < p.items.size(); ++i) {
    for (const ItemAccess& a : p.access[i]) {
      uint32_t r = roots.of_entry[a.entry];
      if (touched[r] || a.access != Access::in || !is_fresh(roots.list[r], capture_ids) || p.entries[a.entry].kind == PlanEntry::Kind::input)
        continue;
      const ExecItem& it = p.items[i];
      const std::string what = kind_of(it).operand_name(it, a.arg);
      const std::string item = kind_of(it).title(it);
      throw JitError("item " + std::to_string(i) + " (" + item + ") reads " + p.entries[a.entry].captured.describe() + " through its " +
                     what + " before any item writes it: that buffer was allocated during the captured call, so its bytes are undefined "
                     "(eager execution reads whatever the new allocation holds, replay other bytes again). Write it first in the step "
                     "(a kernel, a copy or a copyin), or keep its contents across calls by allocating it outside the step (closure "
                     "state) or passing it as an input");
    }
    for (const ItemAccess& a : p.access[i]) touched[roots.of_entry[a.entry]] = 1;
  }
}

// What pruning sees of each item: byte ranges by storage, and whether it depends on the call
// (volatile: never one-time). first_use: per root, the first item that touches it.
PruneItems prune_items(const Plan& p, const Roots& roots, const FlowShape& shape, const std::vector<uint64_t>& capture_ids,
                       std::vector<int64_t>& first_use) {
  const size_t n = p.items.size();
  PruneItems pitems;
  pitems.accesses.reserve(p.access.all.size());
  pitems.first = p.access.at;  // one access per operand, as the plan's
  pitems.volatile_.resize(n);
  first_use.assign(roots.list.size(), -1);
  for (uint32_t i = 0; i < n; ++i) {
    bool touches_input = false;
    for (const ItemAccess& a : p.access[i]) {
      uint32_t r = roots.of_entry[a.entry];
      BufferImpl* b = p.entries[a.entry].captured.impl();
      bool read = has(a.access, Access::in), write = has(a.access, Access::out);
      // storage allocated during the call: its first access is a pure write even when inout,
      // since its earlier contents are undefined in eager execution too
      if ((first_use[r] == -1 || first_use[r] == i) && is_fresh(roots.list[r], capture_ids) && write) read = false;
      if (first_use[r] == -1) first_use[r] = i;
      pitems.accesses.push_back({r, b->offset, b->offset + b->nbytes, read, write});
      if (p.entries[a.entry].kind == PlanEntry::Kind::input) touches_input = true;
    }
    // native work is opaque: never one-time (it may hold state of its own, or read the clock); an
    // upload from a host input, or a launch with by-value bytes from one, depends on the call like
    // a buffer input
    // an item inside a branch alternative or a loop body runs only when its parent says so
    pitems.volatile_[i] = touches_input || p.items[i].uses_variables() || kind_of(p.items[i]).opaque || p.items[i].host_slot >= 0 ||
                          host_bytes(p.items[i]) || (p.flow && shape.parent[i] >= 0);
  }
  return pitems;
}

// The one-time set (DESIGN rule 2): items a replay would only repeat run once, at the first call.
void one_time_set(Plan& p, const PruneItems& pitems) {
  const size_t n = p.items.size();
  if (!p.opt.prune) {
    p.one_time.assign(n, false);
    return;
  }
  TraceSpan span("prune");
  PruneResult pr = prune(pitems);
  p.one_time = std::move(pr.one_time);
  // ENCORE_DEBUG=1: why each kept item that looks one-time is kept: the one condition it breaks
  // with the item that makes it hold, or every condition when it breaks several. An item that
  // touches an input or uses a variable is each call's own work: counted, not listed.
  if (debug_level() < 1) return;
  constexpr uint8_t volatile_bit = 1u << static_cast<unsigned>(KeepReason::volatile_);
  size_t per_call = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const KeepWhy& w = pr.why[i];
    if (p.one_time[i] || w.broken == 0) continue;
    if (w.broken & volatile_bit) {
      ++per_call;
      continue;
    }
    std::string note = "item " + std::to_string(i) + " (" + p.items[i].describe() + "): ";
    if (w.reason != KeepReason::none) {
      note += describe(w.reason);
      if (w.other != no_item && w.other != i) note += " [item " + std::to_string(w.other) + ": " + p.items[w.other].describe() + "]";
    } else {
      note += "for " + std::to_string(std::popcount(w.broken)) + " reasons:";
      for (unsigned r = 1; r <= static_cast<unsigned>(KeepReason::reads_kept_writer); ++r)
        if (w.broken & (1u << r)) note += std::string(" ") + describe(static_cast<KeepReason>(r)) + ";";
      note.pop_back();
    }
    p.keep_notes.push_back(std::move(note));
  }
  if (per_call > 0)
    p.keep_notes.push_back(std::to_string(per_call) + (per_call == 1 ? " item that touches an input or uses a variable" : " items that touch an input or use a variable") +
                           " (each call's own work, not listed one by one)");
}

// A flow step's last replayed item ends a replay with its own event only as a plain item at top level.
void find_flow_tail(Plan& p, const FlowShape& shape) {
  if (!p.flow) return;
  for (uint32_t i = static_cast<uint32_t>(p.items.size()); i-- > 0;)
    if (!p.one_time[i]) {
      const ItemKind k = p.items[i].kind;
      p.flow_tail = shape.parent[i] < 0 && k != ItemKind::host && k != ItemKind::branch && k != ItemKind::loop;
      break;
    }
}

// Planning: internal roots untouched by one-time items and cross-device copies, first written.
std::vector<bool> plannable_roots(const Plan& p, const Roots& roots, const std::vector<BufferImpl*>& internal,
                                  const PruneItems& pitems, const std::vector<int64_t>& first_use) {
  std::vector<bool> plannable(roots.list.size(), false);
  std::unordered_set<BufferImpl*> internal_set(internal.begin(), internal.end());
  for (uint32_t r = 0; r < roots.list.size(); ++r) plannable[r] = p.opt.plan && internal_set.count(roots.list[r]);
  for (uint32_t i = 0; i < p.items.size(); ++i) {
    for (size_t k = 0; k < p.access[i].size(); ++k) {
      uint32_t r = roots.of_entry[p.access[i][k].entry];
      if (p.one_time[i] || p.steps[i].cross_device) plannable[r] = false;
      if (first_use[r] == i && pitems.accesses[pitems.first[i] + k].read) plannable[r] = false;  // reads undefined bytes: keep as is
    }
  }
  return plannable;
}

// The arena plan (DESIGN rule 3): one arena per device, its temps placed by lifetime and, outside
// NDEBUG, verified by the independent checker. Per root: its (arena, offset).
std::vector<std::pair<uint32_t, uint64_t>> plan_arenas(Plan& p, const Roots& roots, const std::vector<bool>& plannable, const FlowShape& shape) {
  std::unordered_map<DeviceImpl*, std::vector<uint32_t>> temps_by_dev;
  std::vector<DeviceImpl*> dev_order;
  for (uint32_t r = 0; r < roots.list.size(); ++r)
    if (plannable[r]) {
      auto& v = temps_by_dev[roots.list[r]->dev.get()];
      if (v.empty()) dev_order.push_back(roots.list[r]->dev.get());
      v.push_back(r);
    }
  std::vector<std::pair<uint32_t, uint64_t>> root_place(roots.list.size());
  for (DeviceImpl* dev : dev_order) {
    const std::vector<uint32_t>& temps = temps_by_dev[dev];
    std::vector<uint64_t> bytes;
    std::vector<uint32_t> temp_of(roots.list.size(), UINT32_MAX);
    for (uint32_t t = 0; t < temps.size(); ++t) {
      temp_of[temps[t]] = t;
      bytes.push_back(roots.list[temps[t]]->nbytes);
    }
    std::vector<TempUse> uses;
    for (uint32_t i = 0; i < p.items.size(); ++i)
      for (const ItemAccess& a : p.access[i])
        if (uint32_t t = temp_of[roots.of_entry[a.entry]]; t != UINT32_MAX) uses.push_back({i, t});
    extend_loop_lives(shape, uses);
    if (p.opt.concurrent || ENCORE_TESTING_IS(force_concurrent)) extend_concurrent_lives(p, roots.of_entry, uses);
    uint64_t align = dev->info.base_align_bytes;
    MemoryPlan plan = plan_memory(bytes, uses, align);
#ifndef NDEBUG
    if (std::string why = check_plan(bytes, uses, align, plan); !why.empty()) throw Error("internal error: invalid memory plan: " + why);
#endif
    uint32_t arena = static_cast<uint32_t>(p.arenas.size());
    p.arenas.push_back({roots.list[temps[0]]->dev, plan.arena_bytes});
    for (uint32_t t = 0; t < temps.size(); ++t) root_place[temps[t]] = {arena, plan.offsets[t]};
    p.stats.temp_bytes_naive += plan.naive_bytes;
    p.stats.temp_bytes_planned += plan.arena_bytes;
    p.stats.temp_bytes_lower_bound += plan.lower_bound_bytes;
    p.stats.planned_temps += temps.size();
  }
  return root_place;
}

// Planned temps: the items keep unallocated placeholders, so the capture's temporaries are freed.
void place_temps(Plan& p, const Roots& roots, const std::vector<bool>& plannable, const std::vector<std::pair<uint32_t, uint64_t>>& root_place,
                 const std::vector<BufferImpl*>& internal) {
  std::vector<Buffer> placeholder(roots.list.size());
  std::unordered_map<BufferImpl*, Buffer> replacement;
  for (uint32_t ei = 0; ei < p.entries.size(); ++ei) {
    PlanEntry& e = p.entries[ei];
    uint32_t r = roots.of_entry[ei];
    if (!plannable[r]) continue;
    BufferImpl* old = e.captured.impl();
    if (!placeholder[r]) {
      const BufferImpl& root = *roots.list[r];
      auto ph = std::make_shared<BufferImpl>();
      ph->dev = root.dev;
      ph->dtype = root.dtype;
      ph->count = root.count;
      ph->nbytes = root.nbytes;
      ph->capture_id = root.capture_id;
      ph->name = name_of(root);
      placeholder[r] = Buffer(std::move(ph));
    }
    Buffer rep = old->base ? region(placeholder[r], old->dtype, old->offset, old->count) : placeholder[r];
    replacement[old] = rep;
    e.kind = PlanEntry::Kind::planned;
    e.slot = root_place[r].first;
    e.rel = root_place[r].second + old->offset;
    e.captured = rep;
  }
  if (!replacement.empty()) {
    std::vector<Operand> ops;
    for (ExecItem& it : p.items)
      for_each_buffer(it, ops, [&](const Buffer& b) {
        if (auto f = replacement.find(b.impl()); f != replacement.end()) const_cast<Buffer&>(b) = f->second;
      });
    for (uint32_t r = 0; r < roots.list.size(); ++r)
      if (plannable[r]) p.internal.push_back(placeholder[r].impl());
  }
  for (BufferImpl* r : internal)  // unplanned internal roots stay internal (alive through the items)
    if (auto f = roots.index.find(r); f != roots.index.end() && !plannable[f->second]) p.internal.push_back(r);
}

// What a call's inputs are checked against (check_inputs): outputs made during the capture and the
// unit's own fixed storage (an input that is one is read through a copy, so no input shares bytes
// with them: PlanEntry::unit_private), and which captured inputs overlapped.
void input_aliasing(Plan& p, const std::vector<uint64_t>& capture_ids) {
  for (const Buffer& o : p.outputs)
    if (o && is_fresh(o.impl()->root(), capture_ids)) p.fresh_output_roots.push_back(o.impl()->root());
  std::unordered_set<const BufferImpl*> own(p.internal.begin(), p.internal.end());
  own.insert(p.fresh_output_roots.begin(), p.fresh_output_roots.end());
  for (PlanEntry& e : p.entries)  // exactly what Plan::is_own answers, which check_inputs asks
    if (e.kind == PlanEntry::Kind::fixed) {
      const BufferImpl* r = e.captured.impl()->root();
      e.unit_private = own.count(r) != 0 && is_fresh(r, capture_ids);
    }
  p.captured_overlap.assign(p.inputs.size(), std::vector<uint8_t>(p.inputs.size(), 0));
  for (size_t i = 0; i < p.inputs.size(); ++i)
    for (size_t j = 0; j < p.inputs.size(); ++j) p.captured_overlap[i][j] = p.inputs[i].overlaps(p.inputs[j]);
}

// What replayed items write, and which input slots the step writes (an input that is also a fresh
// output must not be written).
void written_flags(Plan& p) {
  p.slot_written.assign(p.inputs.size(), false);
  for (uint32_t i = 0; i < p.items.size(); ++i)
    for (const ItemAccess& a : p.access[i]) {
      if (!has(a.access, Access::out)) continue;
      if (!p.one_time[i]) p.entries[a.entry].written = true;
      if (p.entries[a.entry].kind == PlanEntry::Kind::input) p.slot_written[p.entries[a.entry].slot] = true;
    }
}

// Variables, in order of first use; sizes and variable arguments as slots, so a bind or a set_var
// evaluates a step without looking up a Variable.
void resolve_steps(Plan& p) {
  std::unordered_map<VarState*, uint32_t> var_of;
  auto var_slot = [&](const Variable& v) {
    auto [it, fresh] = var_of.try_emplace(v.state(), static_cast<uint32_t>(p.vars.size()));
    if (fresh) {
      p.vars.push_back(v);
      p.var_init.push_back(var_value(*v.state()));
    }
    return it->second;
  };
  // An expression that is not affine is checked over its variables' whole ranges here: a value
  // it may take that no launch accepts is refused at capture, not at a later bind.
  auto size_ref = [&](const ExecItem& it, const Size& s, bool local, uint32_t d) {
    if (s.is_affine()) return SizeRef{s.var() ? static_cast<int32_t>(var_slot(*s.var())) : -1, -1, s.mul(), s.add()};
    check_size_range(s, local, "capture: kernel " + it.kernel.name() + ", " + (local ? "local" : "global") + " size in dimension " +
                                   std::to_string(d));
    p.size_exprs.push_back(compile_size(s, var_slot));
    SizeRef r;
    r.expr = static_cast<int32_t>(p.size_exprs.size() - 1);
    return r;
  };
  for (uint32_t i = 0; i < p.items.size(); ++i) {
    const ExecItem& it = p.items[i];
    PlanStep& st = p.steps[i];
    // (read for variable arguments only: left empty in an item that has none)
    for (uint32_t ai = 0; ai < it.args.size(); ++ai)
      if (it.args[ai].kind == Arg::Kind::variable) {
        if (st.var_ref.empty()) st.var_ref.assign(it.args.size(), 0);
        st.var_ref[ai] = var_slot(*it.args[ai].var);
      }
    st.dims = it.global.n;
    st.has_local = !it.local.empty();
    for (uint32_t d = 0; d < st.dims; ++d) {
      st.g[d] = size_ref(it, it.global.v[d], false, d);
      if (st.has_local) st.l[d] = size_ref(it, it.local.v[d], true, d);
    }
  }
}

// The devices the items run on or touch, in order of first use: the sync and the binding index them.
void find_devices(Plan& p) {
  std::unordered_set<DeviceImpl*> devs;
  std::vector<Operand> ops;
  for (const ExecItem& it : p.items) {
    const std::shared_ptr<DeviceImpl>& d = queue_of(it);
    if (devs.insert(d.get()).second) p.devices.push_back(d);
    for_each_buffer(it, ops, [&](const Buffer& b) {
      if (devs.insert(b.impl()->dev.get()).second) p.devices.push_back(b.impl()->dev);
    });
  }
}

// Cross-device order (sync.cpp), refused for flow steps, whose replay runs on one queue.
void order_devices(Plan& p) {
  p.sync = plan_sync(p);
  if (p.flow && p.devices.size() > 1)
    throw JitError("a step with host items, branches or loops runs on one device in this version; this one uses " + std::to_string(p.devices.size()) +
                   " (" + p.devices[0]->info.id + ", " + p.devices[1]->info.id + ", ...). Capture the work of each device as a step of its own");
  if (p.flow && p.sync.any_split)
    throw JitError("a step with host items, branches or loops cannot hold split-phase native calls (collectives) in this version: "
                   "capture the collective in a step of its own");
}

// The counts UnitStats reports, and the replayed items' dependencies (plan_deps reads the sync).
void count_and_deps(Plan& p) {
  const size_t n = p.items.size();
  p.stats.items = n;
  p.stats.items_pruned = static_cast<size_t>(std::count(p.one_time.begin(), p.one_time.end(), true));
  p.stats.items_replayed = n - p.stats.items_pruned;
  p.stats.inputs = p.inputs.size();
  p.stats.variables = p.vars.size();
  p.deps = plan_deps(p);
  p.stats.chains = p.deps.longest ? (p.stats.items_replayed + p.deps.longest - 1) / p.deps.longest : 0;
  p.stats.longest_chain = p.deps.longest;
}

}  // namespace

Plan make_plan(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs, UnitOptions opt,
               std::vector<BufferImpl*> internal, const std::vector<uint64_t>& capture_ids) {
  Plan p;
  p.opt = opt;
  p.items = std::move(items);
  p.inputs = std::move(inputs);
  p.outputs = std::move(outputs);
  p.capture_ids = capture_ids;
  for (const Buffer& b : p.inputs)
    if (!b) throw JitError("input buffer is null");
  const FlowShape shape = flow_shape(p.items);
  p.flow = shape.any;
  if (p.flow) check_flow(p.items, shape);

  classify_entries(p);
  follow_inputs(p);
  const Roots roots = find_roots(p);
  check_fresh_reads(p, roots, capture_ids);
  std::vector<int64_t> first_use;
  const PruneItems pitems = prune_items(p, roots, shape, capture_ids, first_use);
  one_time_set(p, pitems);
  find_flow_tail(p, shape);
  const std::vector<bool> plannable = plannable_roots(p, roots, internal, pitems, first_use);
  place_temps(p, roots, plannable, plan_arenas(p, roots, plannable, shape), internal);
  input_aliasing(p, capture_ids);
  written_flags(p);
  resolve_steps(p);
  find_devices(p);
  order_devices(p);
  count_and_deps(p);
  return p;
}

bool Plan::is_own(const BufferImpl* root) const {
  // the id first: a root from elsewhere (most inputs) is never looked up, and an address the
  // internal list still names but a later buffer reuses is never taken for it
  return is_fresh(root, capture_ids) && (is_fresh_output(root) || is_internal(root));
}

}  // namespace encore::detail
