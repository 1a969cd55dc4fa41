// A host item's replay (encore/control.hpp): a blocking read of the declared bytes only (the queue
// is in order: it waits for the work queued before, nothing else), the function, and its
// Variables set all or none (set_var checks each before it changes anything).
#include <algorithm>

#include "exec/flow.hpp"
#include "unit/unit.hpp"

namespace encore::detail {

void replay_host_item(UnitImpl& u, Binding&, BoundItem& x) {
  FlowBound& f = payload<FlowBound>(x);
  const Flow& fl = *f.flow;
  for (size_t r = 0; r < f.src.size(); ++r) {
    BufferImpl* s = f.src[r];
    x.dev->read(s->root()->mem.load(std::memory_order_acquire), s->offset, f.bytes[r].data(), f.sizes[r]);
  }
  const size_t ns = f.slots.size();
  std::fill(f.given.begin(), f.given.end(), uint8_t{0});
  HostFrame fr{&fl, f.data.data(), f.sizes.data(), f.src.size(), u.plan.items[x.item].args.data() + fl.reads, ns, f.values.data(), f.given.data()};
  HostCtx c(fr);
  {
    HostCall in;
    if (fl.cond) {
      f.verdict = fl.cond(c);
      return;
    }
    fl.fn(c);
  }
  size_t k = 0;
  try {
    for (; k < ns; ++k) {
      if (!f.given[k]) continue;
      const VarValue now = u.vars[f.slots[k]];
      f.old[k] = now;
      if (now.i != f.values[k].i || now.f != f.values[k].f) set_var(u, f.slots[k], f.values[k], true);
    }
  } catch (...) {
    while (k-- > 0)
      if (f.given[k]) try {
          set_var(u, f.slots[k], f.old[k], true);
        } catch (...) {
          u.rebind = true;
        }
    throw;
  }
}

std::string host_decision(const UnitImpl& u, const BoundItem& x) {
  const FlowBound& f = payload<FlowBound>(x);
  const Flow& fl = *f.flow;
  if (fl.cond) return f.verdict ? "again" : "stop";
  std::string s;
  const std::vector<Arg>& args = u.plan.items[x.item].args;
  for (size_t k = 0; k < f.slots.size(); ++k) {
    const Variable& v = *args[fl.reads + k].var;
    const VarValue now = u.vars[f.slots[k]];
    s += (s.empty() ? "" : ", ") + v.name() + " = " + (v.is_float() ? std::to_string(now.f) : std::to_string(now.i));
  }
  return s.empty() ? "sets nothing" : s;
}

}  // namespace encore::detail
