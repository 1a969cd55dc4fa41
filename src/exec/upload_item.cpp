// The upload kind: host bytes recorded at capture (a copyin inside the step) written into a buffer
// on every replay, like any other write.
#include <cstring>

#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "core/recorder.hpp"
#include "exec/eager.hpp"

namespace encore::detail {

namespace {

void operands(const ExecItem& it, std::vector<Operand>& out) { out.push_back({const_cast<Buffer*>(&it.dst), Access::out, 0}); }
std::string operand_name(const ExecItem&, uint32_t) { return "destination"; }
const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.dst.impl()->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? "upload" : it.name; }
std::string title(const ExecItem&) { return "upload (copyin)"; }
std::string describe(const ExecItem& it) {
  return "upload " + std::to_string(it.data ? it.data->size() : 0) + " bytes" +
         (it.host_slot >= 0 ? " from host input " + std::to_string(it.host_slot) + " at byte " + std::to_string(it.host_offset) : std::string()) +
         " -> " + it.dst.describe();
}
bool uses_variables(const ExecItem&) { return false; }

void run_eager(const ExecItem& it) {
  const auto t0 = eager_start();
  BufferImpl& d = *it.dst.impl();
  d.ensure_allocated();
  enqueue_upload(d, it.data->data(), d.nbytes, true);
  d.bump();
  after_eager(it, *d.dev, t0);
}

void submit(const ExecItem& it) { it.dst.copyin_bytes(it.data->data(), it.data->size()); }

// An upload as bound: its buffer now (re-pointed on rebinding), its bytes: the captured ones, or
// a host input's bound now (UnitView::host_now[slot] + host_off) through a staging copy per
// replay in flight.
struct UploadBound {
  BufferImpl* dst = nullptr;
  const unsigned char* data = nullptr;
  size_t n = 0;
  const unsigned char* const* host = nullptr;
  uint64_t host_off = 0;
  unsigned char* staging = nullptr;
};

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  UploadBound& k = c.b.payloads.make<UploadBound>();
  x.payload = &k;
  k.dst = c.b.current[st.ops[0]].impl();
  k.n = it.dst.nbytes();
  k.data = it.data->data();
  c.b.uses[st.ops[0]].push_back({c.bound, 0, 0});
  if (it.host_slot >= 0) {  // a ring of staging copies, one per replay in flight (none when unbounded: blocking)
    k.host = &c.u.host_now[static_cast<size_t>(it.host_slot)];
    k.host_off = it.host_offset;
    if (c.u.flight_depth) {
      c.b.staging.push_back(std::make_unique<unsigned char[]>(k.n * c.u.flight_depth));
      k.staging = c.b.staging.back().get();
    }
  }
}

void point(BoundItem& x, uint32_t, uint32_t, BufferImpl* to, NativeMem*) { payload<UploadBound>(x).dst = to; }
// An upload from a host input: the bytes bound for this call, copied into this replay's staging
// copy (the one at its place in the in-flight bound, whose last user has completed: InFlight::begin
// waited for it), so the caller may change them as soon as the run returns. Unbounded: a blocking upload.
void replay(Binding& b, BoundItem& x) {
  const UploadBound& k = payload<UploadBound>(x);
  if (!k.host) return enqueue_upload(*k.dst, k.data, k.n, false);
  const unsigned char* src = *k.host + k.host_off;
  if (!k.staging) return enqueue_upload(*k.dst, src, k.n, true);
  unsigned char* copy = k.staging + static_cast<size_t>(b.place) * k.n;
  std::memcpy(copy, src, k.n);
  enqueue_upload(*k.dst, copy, k.n, false);
}

}  // namespace

const KindOps upload_kind{"upload", operands, operand_name, queue, label, title, describe, uses_variables, false, false,
                          run_eager, submit, bind, point, replay, nullptr, true};

}  // namespace encore::detail

namespace encore {

using namespace detail;

void Buffer::copyin_bytes(const void* src, size_t n) const {
  if (!impl_) throw ArgumentError("copyin: null buffer");
  if (n != impl_->nbytes)
    throw ArgumentError("copyin: " + std::to_string(n) + " bytes given, " + describe() + " holds " + std::to_string(impl_->nbytes) +
                        " (a partial copyin takes an offset: copyin(data, offset))");
  copyin_bytes(src, n, 0);
}

void Buffer::copyin_bytes(const void* src, size_t n, size_t off) const {
  if (!impl_) throw ArgumentError("copyin: null buffer");
  const Buffer dst = transfer_range(*this, n, off, "copyin");
  check_not_in_host("copy data in");
  if (Recorder* r = current_recorder()) {
    // recorded as an upload holding a snapshot: replayed every call, like any other write
    ExecItem item;
    item.kind = ItemKind::upload;
    item.dst = dst;
    auto p = static_cast<const unsigned char*>(src);
    item.data = std::make_shared<const std::vector<unsigned char>>(p, p + n);
    // from a host input: replay uploads what that input holds then (as addresses: `src` may point anywhere)
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    for (size_t k = 0; k < r->hosts.size(); ++k)
      if (const uintptr_t h = reinterpret_cast<uintptr_t>(r->hosts[k].first), hn = r->hosts[k].second; at >= h && n <= hn && at - h <= hn - n) {
        item.host_slot = static_cast<int32_t>(k);
        item.host_offset = at - h;
        break;
      }
    run_item_eager(item);
    r->items.push_back(std::move(item));
    return;
  }
  BufferImpl& d = *dst.impl();
  d.ensure_allocated();
  enqueue_upload(d, static_cast<const unsigned char*>(src), n, true);
  d.bump();
}

}  // namespace encore
