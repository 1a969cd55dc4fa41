// The plan's part for steps that decide (encore/control.hpp): the tree a step's flat item list
// holds, and what makes it replayable. Refused at capture, never at a later call:
// - a Variable a host item sets, used where that host item has not run in the same replay (before
//   it, or in a sibling alternative);
// - a buffer allocated inside a branch alternative or a loop body, used after it;
// - (make_plan) several devices, split-phase native calls.
// Lives of planned temporaries used inside a loop body span the whole body (extend_loop_lives): the
// next iteration reads them again after the body's last item.
#include <unordered_map>

#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "unit/flow_plan.hpp"

namespace encore::detail {

FlowShape flow_shape(const std::vector<ExecItem>& items) {
  FlowShape sh;
  const uint32_t n = static_cast<uint32_t>(items.size());
  sh.parent.assign(n, -1);
  sh.alt.assign(n, 0);
  // a stack of open children: (control item, alternative, end of that alternative, end of all)
  struct Open {
    uint32_t item, alt, alt_end, end;
  };
  std::vector<Open> open;
  for (uint32_t i = 0; i < n; ++i) {
    while (!open.empty()) {
      Open& o = open.back();
      if (i < o.alt_end) break;
      const auto& spans = items[o.item].flow->spans;
      if (i < o.end) {  // the next alternative (skipping empty ones)
        do o.alt_end += spans[++o.alt];
        while (i >= o.alt_end);
        break;
      }
      open.pop_back();
    }
    if (!open.empty()) {
      sh.parent[i] = static_cast<int32_t>(open.back().item);
      sh.alt[i] = open.back().alt;
    }
    const ExecItem& it = items[i];
    if (it.kind != ItemKind::branch && it.kind != ItemKind::loop) continue;
    sh.any = true;
    uint64_t total = 0;
    for (uint32_t s : it.flow->spans) total += s;
    if (it.flow->spans.empty() || i + 1 + total > n || (!open.empty() && i + 1 + total > open.back().alt_end))
      throw JitError(kind_of(it).title(it) + ": its children do not fit the recorded step (a capture that ended inside it?)");
    const uint32_t end = static_cast<uint32_t>(i + 1 + total);
    if (it.kind == ItemKind::loop) sh.loops.push_back({i, end});
    if (total == 0) continue;
    Open o{i, 0, i + 1 + it.flow->spans[0], end};
    while (o.alt_end == i + 1) o.alt_end += it.flow->spans[++o.alt];  // empty first alternatives
    open.push_back(o);
  }
  for (const ExecItem& it : items) sh.any = sh.any || it.kind == ItemKind::host;
  return sh;
}

namespace {
// Whether scope (parent p, alternative a) of item `i` lies on the path from the top to item j.
bool runs_before_in_scope(const FlowShape& sh, uint32_t i, uint32_t j) {
  if (i >= j) return false;
  int32_t p = sh.parent[j];
  uint32_t a = sh.alt[j];
  for (;;) {
    if (p == sh.parent[i] && a == sh.alt[i]) return true;
    if (p < 0) return false;
    a = sh.alt[static_cast<uint32_t>(p)];
    p = sh.parent[static_cast<uint32_t>(p)];
  }
}
}  // namespace

void check_flow(const std::vector<ExecItem>& items, const FlowShape& sh) {
  const uint32_t n = static_cast<uint32_t>(items.size());
  // host-set Variables: every use has a setter that ran before it in this replay
  std::unordered_map<const VarState*, std::vector<uint32_t>> setters;
  for (uint32_t i = 0; i < n; ++i)
    if (items[i].kind == ItemKind::host)
      for (size_t k = items[i].flow->reads; k < items[i].args.size(); ++k) setters[items[i].args[k].var->state()].push_back(i);
  if (!setters.empty()) {
    std::vector<Variable> used;
    for (uint32_t j = 0; j < n; ++j) {
      const ExecItem& it = items[j];
      used.clear();
      const size_t first = it.kind == ItemKind::host ? it.args.size() : 0;  // a host item's own Variables are what it sets
      for (size_t k = first; k < it.args.size(); ++k)
        if (it.args[k].kind == Arg::Kind::variable) used.push_back(*it.args[k].var);
      for (uint8_t d = 0; d < it.global.n; ++d) it.global.v[d].variables(used);
      for (uint8_t d = 0; d < it.local.n; ++d) it.local.v[d].variables(used);
      for (const Variable& v : used) {
        auto f = setters.find(v.state());
        if (f == setters.end()) continue;
        bool ok = false;
        for (uint32_t i : f->second) ok = ok || runs_before_in_scope(sh, i, j);
        if (!ok) {
          const ExecItem& s = items[f->second.front()];
          throw JitError("item " + std::to_string(j) + " (" + kind_of(it).title(it) + ") uses Variable \"" + v.name() + "\", which " +
                         kind_of(s).title(s) + " (item " + std::to_string(f->second.front()) +
                         ") sets, but no host item setting it runs before it on every path to it (it comes later, or in another "
                         "branch alternative or a loop body that may not run): a replay would see a value from another call. Set it "
                         "before its first use in the same sequence, or pass it to the call as a bound Variable and do not set it");
        }
      }
    }
  }
  // buffers made inside children stay inside them
  for (uint32_t c = 0; c < n; ++c) {
    const ExecItem& it = items[c];
    if (it.kind != ItemKind::branch && it.kind != ItemKind::loop) continue;
    const Flow& f = *it.flow;
    uint64_t total = 0;
    for (uint32_t s : f.spans) total += s;
    const uint64_t end = c + 1 + total;
    std::vector<Operand> ops;
    for (uint32_t j = 0; j < n; ++j) {
      if (j > c && j < end) continue;
      ops.clear();
      kind_of(items[j]).operands(items[j], ops);
      for (const Operand& o : ops) {
        const BufferImpl* r = o.buf->impl()->root();
        if (r->capture_id == f.capture_id && r->serial >= f.serial_lo && r->serial < f.serial_hi)
          throw JitError("item " + std::to_string(j) + " (" + kind_of(items[j]).title(items[j]) + ") uses " + o.buf->describe() + ", which was allocated inside " +
                         kind_of(it).title(it) + " (item " + std::to_string(c) +
                         "): a buffer made in a branch alternative or a loop body belongs to it (another alternative, or no iteration, may "
                         "run on replay). Allocate it before the " + (it.kind == ItemKind::loop ? "loop" : "branch"));
      }
    }
  }
}

void extend_loop_lives(const FlowShape& sh, std::vector<TempUse>& uses) {
  if (sh.loops.empty()) return;
  const size_t n = uses.size();
  for (auto [l, end] : sh.loops)
    for (size_t k = 0; k < n; ++k)
      if (uses[k].item > l && uses[k].item < end) {
        uses.push_back({l, uses[k].temp});
        uses.push_back({end - 1, uses[k].temp});
      }
}

}  // namespace encore::detail
