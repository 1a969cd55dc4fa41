// The fill kind: every element of a buffer (or a view) set to one value, recorded with the value
// and replayed as a device fill (clEnqueueFillBuffer; the NULL device writes its memory).
#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "core/scalar.hpp"

namespace encore::detail {

namespace {

void operands(const ExecItem& it, std::vector<Operand>& out) { out.push_back({const_cast<Buffer*>(&it.dst), Access::out, 0}); }
std::string operand_name(const ExecItem&, uint32_t) { return "destination"; }
const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.dst.impl()->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? "fill" : it.name; }
std::string title(const ExecItem&) { return "fill"; }
std::string describe(const ExecItem& it) { return "fill " + it.dst.describe() + " with " + value_str(it.dst.dtype(), it.data->data()); }
bool uses_variables(const ExecItem&) { return false; }

void run_eager(const ExecItem& it) {
  const auto t0 = eager_start();
  BufferImpl& d = *it.dst.impl();
  d.ensure_allocated();
  d.dev->fill(d.root()->mem, d.offset, it.data->data(), it.data->size(), d.nbytes);
  d.bump();
  after_eager(it, *d.dev, t0);
}

void submit(const ExecItem& it) { it.dst.device().fill_bytes(it.dst, it.data->data(), it.data->size()); }

// A fill as bound: its buffer now (re-pointed on rebinding), the pattern and the bytes it covers.
struct FillBound {
  BufferImpl* dst = nullptr;
  const unsigned char* pattern = nullptr;
  size_t pattern_bytes = 0, n = 0;
};

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  FillBound& k = c.b.payloads.make<FillBound>();
  x.payload = &k;
  k.dst = c.b.current[st.ops[0]].impl();
  k.n = it.dst.nbytes();
  k.pattern = it.data->data();
  k.pattern_bytes = it.data->size();
  c.b.uses[st.ops[0]].push_back({c.bound, 0, 0});
  x.replay_after = [](BoundItem& f, uint32_t lane, NativeEvent* const* waits, uint32_t n, NativeEvent** done) {
    const FillBound& q = payload<FillBound>(f);
    f.dev->fill_after(lane, q.dst->root()->mem, q.dst->offset, q.pattern, q.pattern_bytes, q.n, waits, n, done);
  };
}

void point(BoundItem& x, uint32_t, uint32_t, BufferImpl* to, NativeMem*) { payload<FillBound>(x).dst = to; }
void replay(Binding&, BoundItem& x) {
  const FillBound& k = payload<FillBound>(x);
  x.dev->fill(k.dst->root()->mem, k.dst->offset, k.pattern, k.pattern_bytes, k.n);
}

}  // namespace

const KindOps fill_kind{"fill", operands, operand_name, queue, label, title, describe, uses_variables, false, false,
                        run_eager, submit, bind, point, replay, nullptr};

}  // namespace encore::detail

namespace encore {

void Device::fill_bytes(const Buffer& buf, const void* value, size_t value_bytes) const {
  if (!buf) throw ArgumentError("fill: null buffer");
  if (!value) throw ArgumentError("fill: null value");
  detail::check_not_in_host("fill a buffer");
  detail::BufferImpl& d = *buf.impl();
  if (d.dev != shared_impl()) throw ArgumentError("fill: " + buf.describe() + " is not on " + id());
  const size_t es = size(buf.dtype());
  if (value_bytes != es)
    throw ArgumentError("fill: the value has " + std::to_string(value_bytes) + " bytes, " + buf.describe() + " has elements of " +
                        std::to_string(es) + " bytes; pass one element of its dtype");
  // clEnqueueFillBuffer wants the offset to be a multiple of the pattern: a view made by
  // Buffer::view always is; a reinterpretation (as) of a view at an odd byte may not be
  if (d.offset % es != 0)
    throw ArgumentError("fill: " + buf.describe() + " starts at byte " + std::to_string(d.offset) + " of its storage, not a multiple of its " +
                        std::to_string(es) + "-byte elements; fill a view of whole elements");
  if (d.nbytes == 0) return;
  ExecItem item;
  item.kind = ItemKind::fill;
  item.dst = buf;
  auto p = static_cast<const unsigned char*>(value);
  item.data = std::make_shared<const std::vector<unsigned char>>(p, p + value_bytes);
  if (!detail::dry_tracing()) detail::fill_kind.run_eager(item);
  detail::record_item(std::move(item));
}

void Device::fill_value(const Buffer& buf, DType type, const void* value) const {
  if (buf && type != buf.dtype())
    throw ArgumentError("fill: the value is " + std::string(name(type)) + ", " + buf.describe() + " holds " + std::string(name(buf.dtype())) +
                        "; cast the value to the buffer's type");
  fill_bytes(buf, value, size(type));
}

}  // namespace encore
