// The native kind: work that native code enqueues itself (an OpenCL library, an engine's kernels,
// a collective) over buffers whose access it states. Split-phase calls (collectives) begin at their
// place on replay and finish where their results are first needed (src/unit/sync.cpp).
#include "core/native_call.hpp"
#include "exec/kind.hpp"
#include "exec/eager.hpp"

namespace encore::detail {

namespace {

void operands(const ExecItem& it, std::vector<Operand>& out) {
  for (uint32_t i = 0; i < it.args.size(); ++i) out.push_back({const_cast<Buffer*>(&it.args[i].buf), it.args[i].access, i});
}
std::string operand_name(const ExecItem&, uint32_t arg) { return "buffer " + std::to_string(arg); }
const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.native->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? "native" : "native " + it.name; }
std::string title(const ExecItem& it) { return "native call " + (it.name.empty() ? std::string("(unnamed)") : it.name); }
std::string describe(const ExecItem& it) { return "native " + it.name + args_str(it.args); }
bool uses_variables(const ExecItem&) { return false; }

void run_eager(const ExecItem& it) {
  const auto t0 = eager_start();
  std::vector<NativeMem*> mems;
  for (const Arg& a : it.args) {
    a.buf.impl()->ensure_allocated();
    mems.push_back(a.buf.impl()->handle());
  }
  enqueue_native(*it.native->dev, *it.native, mems.data(), mems.size());
  bump_written(it.args);
  after_eager(it, *it.native->dev, t0);
}

void submit(const ExecItem& it) { run_native(Device(it.native->dev), it.native, it.args, it.name); }

// A native call as bound (a split-phase call's begin and finish items share one): the call and its
// buffers' handles now, in Binding::native_mems (reserved at bind so the pointers stay valid).
struct NativeBound {
  const NativeCall* call = nullptr;
  NativeMem** mems = nullptr;
  size_t count = 0;
};

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  Binding& b = c.b;
  NativeBound& k = b.payloads.make<NativeBound>();
  x.payload = &k;
  k.call = it.native.get();
  k.count = it.args.size();
  k.mems = b.native_mems.data() + b.native_mems.size();
  for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
    b.native_mems.push_back(b.current[st.ops[ai]].impl()->handle());
    b.uses[st.ops[ai]].push_back({c.bound, ai, ai});
  }
  if (c.p.split[x.item]) {
    x.replay = replay_begin;
    x.split = static_cast<int32_t>(b.splits.size());
    b.splits.push_back(c.bound);
    b.open.push_back(0);
  }
}

void point(BoundItem& x, uint32_t, uint32_t arg, BufferImpl*, NativeMem* handle) { payload<NativeBound>(x).mems[arg] = handle; }

void replay(Binding&, BoundItem& x) {
  const NativeBound& k = payload<NativeBound>(x);
  enqueue_native(*x.dev, *k.call, k.mems, k.count);
}

}  // namespace

void replay_begin(Binding& b, BoundItem& x) {
  const NativeBound& k = payload<NativeBound>(x);
  k.call->begin(*x.dev, k.mems, k.count);
  b.open[static_cast<size_t>(x.split)] = 1;
}

void replay_finish(Binding& b, BoundItem& x) {
  uint8_t& open = b.open[static_cast<size_t>(x.split)];
  if (!open) return;  // not begun in this replay (it failed before), or finished already
  open = 0;           // a finish that throws is not cancelled after it
  const NativeBound& k = payload<NativeBound>(x);
  k.call->finish(*x.dev, k.mems, k.count);
}

void cancel_open(Binding& b) noexcept {
  for (size_t k = 0; k < b.splits.size(); ++k)
    if (b.open[k]) {
      b.open[k] = 0;
      BoundItem& y = b.items[b.splits[k]];
      payload<NativeBound>(y).call->cancel(*y.dev);
    }
}

const KindOps native_kind{"native", operands, operand_name, queue, label, title, describe, uses_variables, true, true,
                          run_eager, submit, bind, point, replay, nullptr};

}  // namespace encore::detail

namespace encore::detail {

void run_native(const Device& dev, std::shared_ptr<const NativeCall> call, std::vector<Arg> buffers, std::string name) {
  if (!call) throw ArgumentError("native call: null");
  if (call->dev != dev.shared_impl()) throw ArgumentError("native call " + name + ": made for another device than " + dev.id());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Arg& a = buffers[i];
    std::string where = "native call " + name + " buffer " + std::to_string(i);
    if (a.kind != Arg::Kind::buffer || !a.buf) throw ArgumentError(where + ": expected a buffer (encore::in/out/inout(buf))");
    if (a.access == Access::none)
      throw ArgumentError(where + ": state its access with encore::in, encore::out or encore::inout (encore cannot see what native code does)");
    if (a.buf.impl()->dev != dev.shared_impl()) throw ArgumentError(where + ": " + a.buf.describe() + " is not on " + dev.id());
  }
  ExecItem item;
  item.kind = ItemKind::native;
  item.native = std::move(call);
  item.args = std::move(buffers);
  item.name = std::move(name);
  run_item_eager(item);
  record_item(std::move(item));
}

}  // namespace encore::detail
