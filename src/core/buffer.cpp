#include "encore/buffer.hpp"

#include <mutex>

#include "encore/device.hpp"
#include "core/allocator.hpp"
#include "core/buffer_impl.hpp"
#include "core/event_impl.hpp"
#include "core/recorder.hpp"

namespace encore {

using namespace detail;

namespace detail {

BufferImpl::~BufferImpl() {
  if (NativeMem* v = view_mem.load(std::memory_order_acquire)) dev->free_view(v);
  NativeMem* m = mem.load(std::memory_order_acquire);
  if (m && owned) dev->allocator->free(m, alloc_bytes);
  else if (m) dev->raw_free(m);  // adopted native memory: drop our reference only
}

// Double-checked: the unlocked acquire load pairs with the release store made under the lock, so
// a thread that sees the pointer also sees the allocation (and alloc_bytes) complete.
void BufferImpl::ensure_allocated() {
  BufferImpl* r = root();
  if (r->mem.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(r->view_mu);
  if (r->mem.load(std::memory_order_relaxed)) return;
  size_t got = 0;
  NativeMem* m = dev->allocator->alloc(r->nbytes, &got);
  r->alloc_bytes = got;
  r->mem.store(m, std::memory_order_release);
}

NativeMem* BufferImpl::handle() {
  if (!base) {
    if (NativeMem* m = mem.load(std::memory_order_acquire)) return m;
    ensure_allocated();
    return mem.load(std::memory_order_acquire);
  }
  if (NativeMem* v = view_mem.load(std::memory_order_acquire)) return v;
  ensure_allocated();
  std::lock_guard<std::mutex> lock(view_mu);
  NativeMem* v = view_mem.load(std::memory_order_relaxed);
  if (!v) {
    v = dev->make_view(base->mem.load(std::memory_order_acquire), offset, nbytes);
    view_mem.store(v, std::memory_order_release);
  }
  return v;
}

Buffer transfer_range(const Buffer& b, size_t n, size_t off, const char* what) {
  size_t end = 0;
  if (n == 0 || __builtin_add_overflow(off, n, &end) || end > b.nbytes())
    throw ArgumentError(std::string(what) + ": " + std::to_string(n) + " bytes at byte offset " + std::to_string(off) +
                        " do not fit in " + b.describe() + " (" + std::to_string(b.nbytes()) + " bytes)");
  if (off == 0 && n == b.nbytes()) return b;
  const size_t es = size(b.dtype());
  return off % es == 0 && n % es == 0 ? region(b, b.dtype(), off, n / es) : region(b, DType::u8, off, n);
}

size_t checked_bytes(const char* what, size_t count, DType dtype) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size(dtype), &bytes) || bytes > max_buffer_bytes)
    throw ArgumentError(std::string(what) + ": " + std::to_string(count) + " elements of " + std::string(encore::name(dtype)) +
                        " are more than the " + std::to_string(max_buffer_bytes) + " bytes a buffer can hold");
  return bytes;
}

}  // namespace detail

Buffer::Buffer(const Device& device, DType dtype, size_t count) {
  if (!device) throw ArgumentError("Buffer: null device");
  if (count == 0) throw ArgumentError("Buffer: element count must be > 0");
  const size_t nbytes = detail::checked_bytes("Buffer", count, dtype);
  impl_ = std::make_shared<BufferImpl>();
  impl_->dev = device.shared_impl();
  impl_->dtype = dtype;
  impl_->count = count;
  impl_->nbytes = nbytes;
  if (detail::Recorder* r = detail::current_recorder()) {
    impl_->capture_id = r->id;
    impl_->serial = ++r->allocs;
  }
}

static BufferImpl& need(const std::shared_ptr<BufferImpl>& p) {
  if (!p) throw ArgumentError("use of a null Buffer");
  return *p;
}

Device Buffer::device() const { return Device(need(impl_).dev); }
DType Buffer::dtype() const { return need(impl_).dtype; }
size_t Buffer::count() const { return need(impl_).count; }
size_t Buffer::nbytes() const { return need(impl_).nbytes; }
size_t Buffer::offset() const { return need(impl_).offset; }
bool Buffer::is_view() const { return need(impl_).base != nullptr; }
Buffer Buffer::base() const { return need(impl_).base ? Buffer(impl_->base) : *this; }
bool Buffer::allocated() const { return need(impl_).root()->mem.load(std::memory_order_acquire) != nullptr; }
// Names are set rarely and read mostly for messages, from any thread that describes a buffer
// (a failing call on one thread while another renames it): one lock for every buffer's name.
static std::mutex& names_mu() {
  static auto* m = new std::mutex;  // never destroyed: buffers may be described during exit
  return *m;
}
std::string Buffer::name() const { return detail::name_of(need(impl_)); }
namespace detail {
std::string name_of(const BufferImpl& b) {
  std::lock_guard<std::mutex> lock(names_mu());
  return b.name;
}
}  // namespace detail
Buffer& Buffer::set_name(std::string n) {
  BufferImpl& b = need(impl_);
  std::lock_guard<std::mutex> lock(names_mu());
  b.name.swap(n);
  return *this;  // the old name is freed after the lock, in n
}
void Buffer::touch() const { need(impl_).bump(); }
uint64_t Buffer::version() const { return need(impl_).root()->version.load(std::memory_order_relaxed); }

std::string Buffer::describe() const {
  if (!impl_) return "null buffer";
  std::string s = std::string(encore::name(impl_->dtype)) + "[" + std::to_string(impl_->count) + "]";
  {
    std::lock_guard<std::mutex> lock(names_mu());
    if (!impl_->name.empty()) s += " '" + impl_->name + "'";
  }
  if (impl_->base) s += " (view at byte " + std::to_string(impl_->offset) + ")";
  return s + " on " + impl_->dev->info.id;
}

bool Buffer::overlaps(const Buffer& o) const {
  BufferImpl& a = need(impl_);
  BufferImpl& b = need(o.impl_);
  return a.root() == b.root() && a.offset < b.offset + b.nbytes && b.offset < a.offset + a.nbytes;
}

Buffer Buffer::view(size_t offset, size_t count) const {
  const size_t es = size(dtype());
  size_t byte_offset = 0;
  if (__builtin_mul_overflow(offset, es, &byte_offset) || byte_offset > need(impl_).nbytes)
    throw ArgumentError("Buffer::view: element offset " + std::to_string(offset) + " lies beyond the end of " + describe() + " (" +
                        std::to_string(impl_->count) + " elements)");
  return view_as(dtype(), byte_offset, count);
}

Buffer Buffer::view_as(DType t, size_t byte_offset, size_t count) const {
  BufferImpl& b = need(impl_);
  size_t nb = 0, end = 0;
  const bool overflow = __builtin_mul_overflow(count, size(t), &nb) || __builtin_add_overflow(byte_offset, nb, &end);
  if (count == 0 || overflow || end > b.nbytes)
    throw ArgumentError("Buffer::view: " + std::to_string(count) + " elements of " + std::string(encore::name(t)) +
                        " at byte " + std::to_string(byte_offset) + " do not fit in " + describe() + " (" +
                        std::to_string(b.nbytes) + " bytes)");
  size_t abs = b.offset + byte_offset;
  size_t align = b.dev->info.base_align_bytes;
  if (abs % align != 0)
    throw ArgumentError("Buffer::view: byte offset " + std::to_string(abs) + " into the base storage is not a multiple of " +
                        b.dev->info.id + "'s base-address alignment (" + std::to_string(align) + " bytes)");
  return detail::region(*this, t, byte_offset, count);
}

namespace detail {

Buffer region(const Buffer& of, DType t, size_t byte_offset, size_t count) {
  BufferImpl& b = *of.impl();
  const size_t abs = b.offset + byte_offset, nb = count * size(t);
  if (abs == 0 && nb == b.root()->nbytes && t == b.root()->dtype) return Buffer(b.base ? b.base : of.shared_impl());
  auto v = std::make_shared<BufferImpl>();
  v->dev = b.dev;
  v->dtype = t;
  v->count = count;
  v->nbytes = nb;
  v->base = b.base ? b.base : of.shared_impl();
  v->offset = abs;
  {
    std::lock_guard<std::mutex> lock(names_mu());
    v->name = b.name;
  }
  if (Recorder* r = current_recorder()) v->capture_id = r->id;
  return Buffer(std::move(v));
}

}  // namespace detail

size_t Buffer::element_bytes(size_t offset, size_t elem) const {
  size_t b = 0;
  if (__builtin_mul_overflow(offset, elem, &b))
    throw ArgumentError("Buffer transfer: element offset " + std::to_string(offset) + " lies beyond the end of " + describe());
  return b;
}

Buffer Buffer::as(DType t) const {
  BufferImpl& b = need(impl_);
  if (t == b.dtype) return *this;
  if (b.nbytes % size(t) != 0)
    throw ArgumentError("Buffer::as: " + describe() + " holds " + std::to_string(b.nbytes) + " bytes, not a whole number of " +
                        std::string(encore::name(t)) + " elements (" + std::to_string(size(t)) + " bytes each)");
  return view_as(t, 0, b.nbytes / size(t));
}

void Buffer::check_type(DType t, size_t elem, bool known) const {
  BufferImpl& b = need(impl_);
  // f16 and bf16 buffers also take their raw bits (uint16_t), bool buffers bytes (uint8_t)
  const bool raw = (t == DType::u16 && (b.dtype == DType::f16 || b.dtype == DType::bf16)) || (t == DType::u8 && b.dtype == DType::boolean);
  if (!known || size(t) != elem || !(t == b.dtype || raw))
    throw ArgumentError("Buffer copy: host element type " + std::string(known ? encore::name(t) : "unknown") +
                        " does not match " + describe());
}

void Buffer::copyout_bytes(void* dst, size_t n) const {
  if (!impl_) throw ArgumentError("copyout: null buffer");
  if (n != impl_->nbytes)
    throw ArgumentError("copyout: " + std::to_string(n) + " bytes requested, " + describe() + " holds " + std::to_string(impl_->nbytes) +
                        " (a partial copyout takes an offset: copyout(data, offset))");
  copyout_bytes(dst, n, 0);
}

namespace {

// A copyout inside a capture: refused unless the capture allows it (its value would be frozen).
void check_copyout_allowed(const Buffer& b, bool async) {
  if (Recorder* r = current_recorder(); r && !r->allow_copyout)
    throw JitError((async ? "copyout_async of " : "copyout of ") + b.describe() +
                   " during a capture: its value would steer later host code, which replay never re-runs (frozen silently). "
                   "Keep host reads out of the captured step, or set CaptureOptions::allow_copyout (JitOptions::capture.allow_copyout) to accept a frozen value");
}

// copyout_async's event: owns the read, and waits for it when the last handle goes first, so the
// queue never writes into host memory after its owner gave up the read. Keeps the storage alive.
struct ReadEvent final : EventImpl {
  ReadEvent(std::shared_ptr<BufferImpl> b, OwnedEvent e) : keep(std::move(b)), ev(std::move(e)) {}
  ~ReadEvent() override {
    try {
      ev.wait_reset();
    } catch (...) {  // a failed read was the waiter's to report; nothing is written any more
    }
  }
  void wait() override { ev.wait(); }
  bool done() override { return ev.done(); }
  std::shared_ptr<BufferImpl> keep;  // (declared first: destroyed after the event)
  OwnedEvent ev;
};

}  // namespace

void Buffer::copyout_bytes(void* dst, size_t n, size_t off) const {
  if (!impl_) throw ArgumentError("copyout: null buffer");
  check_copyout_allowed(*this, false);
  transfer_range(*this, n, off, "copyout");
  impl_->ensure_allocated();
  impl_->dev->read(impl_->root()->mem, impl_->offset + off, dst, n);
}

Event Buffer::copyout_async_bytes(void* dst, size_t n) const {
  if (!impl_) throw ArgumentError("copyout_async: null buffer");
  if (n != impl_->nbytes)
    throw ArgumentError("copyout_async: " + std::to_string(n) + " bytes requested, " + describe() + " holds " + std::to_string(impl_->nbytes) +
                        " (a partial read takes an offset: copyout_async(data, offset))");
  return copyout_async_bytes(dst, n, 0);
}

Event Buffer::copyout_async_bytes(void* dst, size_t n, size_t off) const {
  if (!impl_) throw ArgumentError("copyout_async: null buffer");
  check_copyout_allowed(*this, true);
  transfer_range(*this, n, off, "copyout_async");
  if (!dst) throw ArgumentError("copyout_async: null destination for " + std::to_string(n) + " bytes");
  impl_->ensure_allocated();
  DeviceImpl* d = impl_->dev.get();
  OwnedEvent ev(d, d->read_async(impl_->root()->mem, impl_->offset + off, dst, n));
  if (!ev) return Event();  // complete already (NULL)
  return Event(std::make_shared<ReadEvent>(impl_, std::move(ev)));
}

}  // namespace encore
