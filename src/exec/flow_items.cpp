// The host, branch and loop kinds (encore/control.hpp): their tables and their eager side. A
// branch's alternatives and a loop's body are recorded right after their item, so a step stays
// one flat list of items; the unit's replay walks it as a tree (src/unit/flow_replay.cpp).
#include <algorithm>

#include "encore/device.hpp"
#include "exec/eager.hpp"
#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "core/recorder.hpp"

namespace encore {

using namespace detail;

size_t HostCtx::reads() const noexcept { return f_->n_reads; }
void HostCtx::check_read(size_t r, size_t index, size_t elem) const {
  if (r >= f_->n_reads)
    throw ArgumentError("host item " + f_->flow->name + ": read " + std::to_string(r) + " was not declared (it declared " +
                        std::to_string(f_->n_reads) + ")");
  if (index >= f_->bytes[r] / elem)
    throw ArgumentError("host item " + f_->flow->name + ": element " + std::to_string(index) + " of " + std::to_string(elem) +
                        " bytes is past the end of read " + std::to_string(r) + " (" + std::to_string(f_->bytes[r]) + " bytes)");
}
size_t HostCtx::bytes(size_t r) const {
  check_read(r, 0, 1);
  return f_->bytes[r];
}
const void* HostCtx::data(size_t r) const {
  check_read(r, 0, 1);
  return f_->data[r];
}

static size_t declared(const HostFrame& f, const Variable& v) {
  for (size_t k = 0; k < f.n_sets; ++k)
    if (f.sets[k].var->state() == v.state()) return k;
  throw ArgumentError("host item " + f.flow->name + " sets Variable \"" + v.name() +
                      "\", which it did not declare: list it in the item's sets (Device::host(reads, sets, fn))");
}
void HostCtx::set(const Variable& v, int64_t value) {
  size_t k = declared(*f_, v);
  if (v.is_float()) return set(v, static_cast<double>(value));
  if (value < v.min() || value > v.max())
    throw ArgumentError("host item " + f_->flow->name + " sets Variable \"" + v.name() + "\" to " + std::to_string(value) +
                        ", outside its bounds [" + std::to_string(v.min()) + ", " + std::to_string(v.max()) + "]");
  f_->values[k] = {value, static_cast<double>(value)};
  f_->given[k] = 1;
}
void HostCtx::set(const Variable& v, double value) {
  size_t k = declared(*f_, v);
  if (!v.is_float()) {
    if (value != static_cast<double>(static_cast<int64_t>(value)) || !(value >= -9.2e18 && value <= 9.2e18))
      throw ArgumentError("host item " + f_->flow->name + ": Variable \"" + v.name() + "\" is an integer variable; got " + std::to_string(value));
    return set(v, static_cast<int64_t>(value));
  }
  if (!(value >= v.fmin() && value <= v.fmax()))
    throw ArgumentError("host item " + f_->flow->name + " sets Variable \"" + v.name() + "\" to " + std::to_string(value) +
                        ", outside its bounds [" + std::to_string(v.fmin()) + ", " + std::to_string(v.fmax()) + "]");
  f_->values[k] = {0, value};
  f_->given[k] = 1;
}

}  // namespace encore

namespace encore::detail {

namespace {

thread_local bool tl_verdict = false;  // the last loop condition this thread evaluated eagerly
thread_local unsigned tl_in_host = 0;  // host functions running on this thread

struct DryScope {
  Recorder* r;
  DryScope(Recorder* rec, bool on) : r(on ? rec : nullptr) {
    if (r) ++r->dry;
  }
  ~DryScope() {
    if (r) --r->dry;
  }
};

std::string named(const std::string& n) { return n.empty() ? std::string("(unnamed)") : n; }

// host -------------------------------------------------------------------------------------------
void host_operands(const ExecItem& it, std::vector<Operand>& out) {
  for (uint32_t i = 0; i < it.flow->reads; ++i) out.push_back({const_cast<Buffer*>(&it.args[i].buf), Access::in, i});
}
std::string host_operand_name(const ExecItem&, uint32_t arg) { return "read " + std::to_string(arg); }
const std::shared_ptr<DeviceImpl>& flow_queue(const ExecItem& it) { return it.flow->dev; }
std::string host_label(const ExecItem& it) { return "host " + it.flow->name; }
std::string host_describe(const ExecItem& it) {
  std::string s = (it.flow->cond ? "loop condition " : "host ") + named(it.flow->name) + "(reads";
  for (uint32_t i = 0; i < it.flow->reads; ++i) s += " " + it.args[i].buf.describe();
  if (it.args.size() > it.flow->reads) s += "; sets";
  for (size_t i = it.flow->reads; i < it.args.size(); ++i) s += " " + it.args[i].var->name();
  return s + ")";
}
bool yes(const ExecItem&) { return true; }
bool counted(const ExecItem& it) { return it.flow->counted; }

// Reads the declared bytes (blocking: after the work queued before), runs the function, commits.
void host_run_eager(const ExecItem& it) {
  const Flow& f = *it.flow;
  const size_t nr = f.reads, ns = it.args.size() - nr;
  std::vector<std::vector<unsigned char>> bytes(nr);
  std::vector<const unsigned char*> data(nr);
  std::vector<size_t> sizes(nr);
  for (size_t r = 0; r < nr; ++r) {
    BufferImpl& b = *it.args[r].buf.impl();
    b.ensure_allocated();
    bytes[r].resize(b.nbytes);
    f.dev->read(b.root()->mem.load(), b.offset, bytes[r].data(), b.nbytes);
    data[r] = bytes[r].data();
    sizes[r] = b.nbytes;
  }
  std::vector<VarValue> values(ns);
  std::vector<uint8_t> given(ns, 0);
  HostFrame fr{&f, data.data(), sizes.data(), nr, it.args.data() + nr, ns, values.data(), given.data()};
  HostCtx c(fr);
  const auto t0 = eager_start();
  {
    HostCall in;
    if (f.cond) tl_verdict = f.cond(c);
    else f.fn(c);
  }
  for (size_t k = 0; k < ns; ++k)
    if (given[k]) set_step_value(*it.args[nr + k].var, values[k]);
  after_eager(it, *f.dev, t0);
}

void host_submit(const ExecItem& it) {
  if (it.flow->cond) throw ArgumentError("a loop condition runs only inside its loop (Device::loop_while)");
  host_run_eager(it);
  record_item(ExecItem(it));
}

void flow_submit(const ExecItem& it) {
  throw ArgumentError(flow_title(it) + " cannot run as a single item: its children are items of their own (Device::when, select, repeat, loop_while)");
}

// The unit's replay runs these items itself (src/unit/flow_replay.cpp): it holds the values they
// read and set. This entry is never reached there.
void flow_replay(Binding&, BoundItem&) { throw Error("internal error: a host, branch or loop item replayed outside its unit's flow loop"); }

void host_bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  FlowBound* fb = &c.b.payloads.make<FlowBound>();
  const Flow& f = *it.flow;
  fb->flow = &f;
  const size_t nr = f.reads, ns = it.args.size() - nr;
  fb->bytes.resize(nr);
  fb->data.resize(nr);
  fb->sizes.resize(nr);
  fb->src.resize(nr);
  for (uint32_t r = 0; r < nr; ++r) {
    fb->src[r] = c.b.current[st.ops[r]].impl();
    fb->sizes[r] = fb->src[r]->nbytes;
    fb->bytes[r].resize(fb->sizes[r]);
    fb->data[r] = fb->bytes[r].data();
    c.b.uses[st.ops[r]].push_back({c.bound, r, r});
  }
  for (size_t k = 0; k < ns; ++k) fb->slots.push_back(st.var_ref[nr + k]);
  fb->values.resize(ns);
  fb->old.resize(ns);
  fb->given.resize(ns);
  x.flow = true;
  x.payload = fb;
  x.replay = flow_replay;
}
void host_point(BoundItem& x, uint32_t k, uint32_t, BufferImpl* to, NativeMem*) { payload<FlowBound>(x).src[k] = to; }

// branch and loop -------------------------------------------------------------------------------
void no_operands(const ExecItem&, std::vector<Operand>&) {}
std::string no_operand_name(const ExecItem&, uint32_t arg) { return "operand " + std::to_string(arg); }
std::string branch_label(const ExecItem& it) { return "branch " + it.flow->name; }
std::string loop_label(const ExecItem& it) { return "loop " + it.flow->name; }
std::string flow_describe(const ExecItem& it) { return flow_title(it); }
void flow_run_eager(const ExecItem&) {}  // the children are items of their own, run at their places
// Children follow the item contiguously in the bound list (never one-time: src/unit/flow_plan.cpp).
void flow_bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  FlowBound* fb = &c.b.payloads.make<FlowBound>();
  fb->flow = it.flow.get();
  fb->var = it.args.empty() ? 0 : st.var_ref[0];
  uint32_t at = c.bound + 1;
  for (uint32_t s : it.flow->spans) {
    fb->starts.push_back(at);
    at += s;
  }
  fb->starts.push_back(at);
  x.flow = true;
  x.payload = fb;
  x.replay = flow_replay;
}
void no_point(BoundItem&, uint32_t, uint32_t, BufferImpl*, NativeMem*) {}

// eager structure --------------------------------------------------------------------------------
int64_t int_value(const Variable& v, const std::string& what) {
  if (v.is_float()) throw ArgumentError(what + ": Variable \"" + v.name() + "\" is a float variable; an integer Variable decides");
  return var_value(*v.state()).i;
}

// Records the item at `at` and its children as the step runs them; the alternative `pick` runs,
// the others are traced dry (SIZE_MAX: all, inside an outer dry trace).
void record_children(Recorder* r, size_t at, const std::shared_ptr<Flow>& flow, const std::vector<std::function<void()>>& alts,
                     size_t pick) {
  flow->serial_lo = r->allocs + 1;
  flow->capture_id = r->id;
  for (size_t a = 0; a < alts.size(); ++a) {
    size_t s = r->items.size();
    {
      DryScope d(r, a != pick);
      if (alts[a]) alts[a]();
    }
    if (current_recorder() != r) throw JitError(flow_title(r->items[at]) + ": its capture was closed while it ran");
    flow->spans.push_back(static_cast<uint32_t>(r->items.size() - s));
  }
  flow->serial_hi = r->allocs + 1;
}

std::shared_ptr<Flow> new_flow(const Device& dev, std::string name) {
  auto f = std::make_shared<Flow>();
  f->dev = dev.shared_impl();
  f->name = std::move(name);
  return f;
}

// Whether iteration `b` (items [b0, b0 + n), buffers made with serials [blo, bhi)) does what
// iteration `a` did; "" when it does, else what differs.
std::string same_iteration(const std::vector<ExecItem>& items, size_t a0, uint64_t alo, uint64_t ahi, size_t b0, size_t n, uint64_t blo,
                           uint64_t bhi, uint64_t capture_id) {
  if (items.size() - b0 != n)
    return "iteration 1 recorded " + std::to_string(n) + " items, this one " + std::to_string(items.size() - b0);
  std::vector<std::pair<const BufferImpl*, const BufferImpl*>> pairs;  // buffers made in each iteration, by first use
  auto same_buf = [&](const Buffer& x, const Buffer& y) {
    if (!x || !y) return !x && !y;
    BufferImpl *xi = x.impl(), *yi = y.impl(), *xr = xi->root(), *yr = yi->root();
    if (xi->offset != yi->offset || xi->nbytes != yi->nbytes || xi->dtype != yi->dtype) return false;
    bool xa = xr->capture_id == capture_id && xr->serial >= alo && xr->serial < ahi;
    bool yb = yr->capture_id == capture_id && yr->serial >= blo && yr->serial < bhi;
    if (!xa && !yb) return xr == yr;
    if (xa != yb) return false;
    for (auto& [p, q] : pairs)
      if (p == xr || q == yr) return p == xr && q == yr;
    pairs.push_back({xr, yr});
    return true;
  };
  for (size_t k = 0; k < n; ++k) {
    const ExecItem &x = items[a0 + k], &y = items[b0 + k];
    std::string where = "item " + std::to_string(k) + " of the body (" + kind_of(x).title(x) + ")";
    if (x.kind != y.kind || x.kernel.impl() != y.kernel.impl() || x.args.size() != y.args.size() || (!x.flow) != (!y.flow))
      return where + " is " + kind_of(y).title(y) + " in this iteration";
    for (size_t i = 0; i < x.args.size(); ++i) {
      const Arg &p = x.args[i], &q = y.args[i];
      bool same = p.kind == q.kind && p.bits == q.bits && p.dtype == q.dtype && p.local_bytes == q.local_bytes &&
                  (p.var ? q.var && p.var->state() == q.var->state() : !q.var) &&
                  p.host_slot == q.host_slot && p.host_offset == q.host_offset &&
                  (p.value == q.value || (p.value && q.value && *p.value == *q.value));
      if (same && p.kind == Arg::Kind::buffer) same = same_buf(p.buf, q.buf);
      if (!same)
        return where + ": argument " + std::to_string(i) + " is " + (p.kind == Arg::Kind::buffer ? p.buf.describe() : std::string("a value")) +
               " in iteration 1 and " + (q.kind == Arg::Kind::buffer ? q.buf.describe() : std::string("another value")) + " in this one";
    }
    if (!same_buf(x.dst, y.dst) || !same_buf(x.src, y.src)) return where + " copies between other buffers in this iteration";
    if (!(x.global.n == y.global.n && x.local.n == y.local.n)) return where + " has other launch sizes in this iteration";
    for (uint8_t d = 0; d < x.global.n; ++d)
      if (!(x.global.v[d] == y.global.v[d]) || (x.local.n && !(x.local.v[d] == y.local.v[d]))) return where + " has other launch sizes in this iteration";
    if ((x.data && y.data && *x.data != *y.data && x.host_slot < 0) || x.host_slot != y.host_slot || x.host_offset != y.host_offset)
      return where + " uploads other bytes in this iteration";
    if (x.flow && y.flow && (x.flow->spans != y.flow->spans || x.flow->counted != y.flow->counted))
      return where + " has other children in this iteration";
  }
  return {};
}

// Runs a loop's body while `again(iteration)` says so, recording the first iteration and checking
// every later one against it (then dropping its items: the unit replays the first).
template <class Again> void record_loop(const Device& dev, ExecItem item, const std::function<void()>& body, Again again, bool run_once) {
  Recorder* r = current_recorder();
  const bool dry = dry_tracing();
  const size_t at = r->items.size();
  auto flow = std::const_pointer_cast<Flow>(item.flow);
  r->items.push_back(std::move(item));
  flow->serial_lo = r->allocs + 1;
  flow->capture_id = r->id;
  const size_t s = r->items.size();
  {
    DryScope d(r, !run_once);
    body();
  }
  if (current_recorder() != r) throw JitError(flow_title(r->items[at]) + ": its capture was closed while it ran");
  const uint64_t hi1 = r->allocs + 1;
  const size_t n = r->items.size() - s;
  flow->spans.push_back(static_cast<uint32_t>(n));
  for (int64_t i = 1; run_once && !dry && again(i); ++i) {
    const size_t s2 = r->items.size();
    const uint64_t lo2 = r->allocs + 1;
    body();
    if (current_recorder() != r) throw JitError(flow_title(r->items[at]) + ": its capture was closed while it ran");
    std::string diff = same_iteration(r->items, s, flow->serial_lo, hi1, s2, n, lo2, r->allocs + 1, r->id);
    if (!diff.empty())
      throw JitError(flow_title(r->items[at]) + ": iteration " + std::to_string(i + 1) + " did other work than iteration 1 (" + diff +
                     "). A loop body is recorded once and replayed every iteration, so it must do the same work each time: ping-pong "
                     "inside one iteration (a->b, then b->a) instead of swapping buffers between iterations, and pass what changes as "
                     "Variables");
    r->items.resize(s2);
  }
  flow->serial_hi = r->allocs + 1;
  (void)dev;
}

}  // namespace

HostCall::HostCall() noexcept { ++tl_in_host; }
HostCall::~HostCall() { --tl_in_host; }
void check_not_in_host(const char* what) {
  if (tl_in_host)
    throw JitError(std::string("a host function (Device::host, a loop_while condition) cannot ") + what +
                   ": it runs on every replay in the middle of the step, where that work would not be part of it. Issue the work "
                   "after the host item, using the Variables it sets");
}

void check_not_in_native_fn(const char* what) {
  check_not_in_host(what);
  if (in_native_fn())
    throw JitError(std::string("a native callback (encore::opencl::enqueue_native) cannot ") + what +
                   ": it runs again at every replay, where a host item, branch or loop it adds would be neither recorded nor "
                   "replayed. Add it to the step before or after the native call");
}

bool dry_tracing() {
  Recorder* r = current_recorder();
  return r && r->dry > 0;
}

std::string flow_title(const ExecItem& it) {
  const Flow& f = *it.flow;
  switch (it.kind) {
    case ItemKind::host: return (f.cond ? "loop condition " : "host item ") + named(f.name);
    case ItemKind::branch: {
      std::string s = (f.when ? "branch " : "select ") + named(f.name) + " (";
      for (size_t a = 0; a < f.spans.size(); ++a) s += (a ? ", " : "") + std::to_string(f.spans[a]);
      return s + " items)";
    }
    default:
      return (f.counted ? "repeat " : "loop_while ") + named(f.name) + " (" + std::to_string(f.spans.empty() ? 0 : f.spans[0]) +
             " items" + (f.counted ? "" : ", at most " + std::to_string(f.max_iterations) + " iterations") + ")";
  }
}

const KindOps host_kind{"host", host_operands, host_operand_name, flow_queue, host_label, flow_title, host_describe, yes, true, false,
                        host_run_eager, host_submit, host_bind, host_point, flow_replay, nullptr};
const KindOps branch_kind{"branch", no_operands, no_operand_name, flow_queue, branch_label, flow_title, flow_describe, yes, true, false,
                          flow_run_eager, flow_submit, flow_bind, no_point, flow_replay, nullptr};
const KindOps loop_kind{"loop", no_operands, no_operand_name, flow_queue, loop_label, flow_title, flow_describe, counted, true, false,
                        flow_run_eager, flow_submit, flow_bind, no_point, flow_replay, nullptr};

}  // namespace encore::detail

namespace encore {

using namespace detail;

static ExecItem host_item(const Device& dev, std::vector<Buffer> reads, std::vector<Variable> sets, std::string name) {
  if (!dev) throw ArgumentError("host item: null device");
  ExecItem item;
  item.kind = ItemKind::host;
  auto flow = new_flow(dev, std::move(name));
  for (size_t i = 0; i < reads.size(); ++i) {
    if (!reads[i]) throw ArgumentError("host item " + named(flow->name) + ": read " + std::to_string(i) + " is a null buffer");
    if (reads[i].impl()->dev != dev.shared_impl())
      throw ArgumentError("host item " + named(flow->name) + ": read " + std::to_string(i) + " (" + reads[i].describe() + ") is not on " + dev.id());
    item.args.emplace_back(encore::in(reads[i]));
    item.args.back().access = Access::in;
  }
  flow->reads = static_cast<uint32_t>(reads.size());
  for (size_t i = 0; i < sets.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (sets[j] == sets[i]) throw ArgumentError("host item " + named(flow->name) + ": Variable \"" + sets[i].name() + "\" is declared twice");
    item.args.emplace_back(sets[i]);
  }
  item.name = flow->name;
  item.flow = std::move(flow);
  return item;
}

void Device::host(std::vector<Buffer> reads, std::vector<Variable> sets, HostFn fn, std::string name) const {
  check_not_in_native_fn("add a host item");
  if (!fn) throw ArgumentError("host item " + named(name) + ": null function");
  ExecItem item = host_item(*this, std::move(reads), std::move(sets), std::move(name));
  std::const_pointer_cast<Flow>(item.flow)->fn = std::move(fn);
  if (dry_tracing()) {
    // not run: a Variable it sets that has no value yet takes its first one, so the launches traced
    // after it check; one that has a value keeps it (eager work after the branch sees that value)
    for (size_t k = item.flow->reads; k < item.args.size(); ++k) {
      const VarState& v = *item.args[k].var->state();
      try {
        (void)var_value(v);
      } catch (const JitError&) {
        set_step_value(*item.args[k].var, {v.init_i, v.init_f});
      }
    }
  } else {
    host_run_eager(item);
  }
  record_item(std::move(item));
}

static void branch(const Device& dev, const Variable& cond, const std::vector<std::function<void()>>& alts, bool when, std::string name) {
  if (!dev) throw ArgumentError("branch: null device");
  check_not_in_native_fn("add a branch");
  const std::string what = std::string(when ? "when " : "select ") + named(name);
  if (!when && alts.empty()) throw ArgumentError(what + ": no alternatives");
  const bool dry = dry_tracing();
  size_t pick = SIZE_MAX;
  if (!dry) {
    int64_t v = int_value(cond, what);
    if (!when && (v < 0 || static_cast<uint64_t>(v) >= alts.size()))
      throw ArgumentError(what + ": Variable \"" + cond.name() + "\" = " + std::to_string(v) + " picks no alternative (0 to " +
                          std::to_string(alts.size() - 1) + ")");
    pick = when ? (v != 0 ? 0 : 1) : static_cast<size_t>(v);
  } else if (cond.is_float()) {
    int_value(cond, what);
  }
  Recorder* r = current_recorder();
  if (!r) {
    if (alts[pick]) alts[pick]();
    return;
  }
  if (!when && (cond.min() < 0 || static_cast<uint64_t>(cond.max()) >= alts.size()))
    throw JitError(what + ": Variable \"" + cond.name() + "\" has bounds [" + std::to_string(cond.min()) + ", " + std::to_string(cond.max()) +
                   "], but only 0 to " + std::to_string(alts.size() - 1) + " pick an alternative: narrow its bounds, so a replay can never pick none");
  ExecItem item;
  item.kind = ItemKind::branch;
  item.args.emplace_back(cond);
  auto flow = new_flow(dev, name);
  flow->when = when;
  item.name = std::move(name);
  item.flow = flow;
  const size_t at = r->items.size();
  r->items.push_back(std::move(item));
  record_children(r, at, flow, alts, pick);
}

void Device::when(const Variable& cond, const std::function<void()>& then_fn, const std::function<void()>& else_fn, std::string name) const {
  branch(*this, cond, {then_fn, else_fn}, true, std::move(name));
}

void Device::select(const Variable& index, const std::vector<std::function<void()>>& alternatives, std::string name) const {
  branch(*this, index, alternatives, false, std::move(name));
}

void Device::repeat(const Variable& count, const std::function<void()>& body, std::string name) const {
  if (!*this) throw ArgumentError("repeat: null device");
  check_not_in_native_fn("add a loop");
  const std::string what = "repeat " + named(name);
  if (!body) throw ArgumentError(what + ": null body");
  if (count.is_float()) int_value(count, what);
  if (count.min() < 0)
    throw ArgumentError(what + ": the count Variable \"" + count.name() + "\" may be negative (bounds [" + std::to_string(count.min()) + ", " +
                        std::to_string(count.max()) + "]): its min must be >= 0");
  const bool dry = dry_tracing();
  const int64_t n = dry ? 1 : int_value(count, what);
  if (!current_recorder()) {
    for (int64_t i = 0; i < n; ++i) body();
    return;
  }
  ExecItem item;
  item.kind = ItemKind::loop;
  item.args.emplace_back(count);
  auto flow = new_flow(*this, name);
  flow->counted = true;
  item.name = std::move(name);
  item.flow = std::move(flow);
  record_loop(*this, std::move(item), body, [n](int64_t i) { return i < n; }, n > 0);
}

void Device::loop_while(int64_t max_iterations, std::vector<Buffer> reads, const std::function<void()>& body, HostCond cond,
                        std::string name) const {
  if (!*this) throw ArgumentError("loop_while: null device");
  check_not_in_native_fn("add a loop");
  const std::string what = "loop_while " + named(name);
  if (!body || !cond) throw ArgumentError(what + ": null body or condition");
  if (max_iterations < 1) throw ArgumentError(what + ": max_iterations must be >= 1, got " + std::to_string(max_iterations));
  // the condition is a host item at the end of the body: read after the body's work, on replay too
  ExecItem check = host_item(*this, std::move(reads), {}, name);
  std::const_pointer_cast<Flow>(check.flow)->cond = std::move(cond);
  auto full = [&] {
    body();
    if (dry_tracing()) {
      tl_verdict = false;
      record_item(ExecItem(check));
      return;
    }
    host_run_eager(check);
    record_item(ExecItem(check));
  };
  auto exceeded = [&] {
    return ArgumentError(what + ": its condition still held after max_iterations = " + std::to_string(max_iterations) +
                         " iterations (raise the bound, or check the condition)");
  };
  if (!current_recorder()) {
    for (int64_t i = 1;; ++i) {
      full();
      if (!tl_verdict) return;
      if (i == max_iterations) throw exceeded();
    }
  }
  ExecItem item;
  item.kind = ItemKind::loop;
  auto flow = new_flow(*this, name);
  flow->max_iterations = max_iterations;
  item.name = std::move(name);
  item.flow = std::move(flow);
  record_loop(*this, std::move(item), full, [&](int64_t i) {
    if (!tl_verdict) return false;
    if (i == max_iterations) throw exceeded();
    return true;
  }, true);
}

}  // namespace encore
