#pragma once
// Buffer: a cheap shared handle to device memory, allocated lazily on first use.
//   encore::Buffer x = dev.alloc(encore::DType::f32, 1024);
//   x.copyin(std::vector<float>(1024, 1.f));
//   std::vector<float> back = x.copyout<float>();
//   encore::Buffer tail = x.view(512, 512);   // a view: same storage, 512 elements from element 512
// Threads: handles may be copied, passed and destroyed on any thread; transfers and launches on
// different buffers (or disjoint views) run concurrently. Writes to the same bytes from several
// threads are ordered by you, as in OpenCL.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encore/dtype.hpp"
#include "encore/error.hpp"
#include "encore/event.hpp"
#include "encore/export.hpp"

namespace encore {

class Device;
namespace detail { struct BufferImpl; }

class ENCORE_API Buffer {
 public:
  Buffer() = default;  // a null handle
  Buffer(const Device& device, DType dtype, size_t count);

  explicit operator bool() const { return impl_ != nullptr; }
  Device device() const;
  DType dtype() const;
  size_t count() const;
  size_t nbytes() const;
  // Byte offset into the base storage (0 unless a view).
  size_t offset() const;
  bool is_view() const;
  // The storage this buffer lives in (itself unless a view).
  Buffer base() const;
  bool allocated() const;

  // A view of `count` elements starting at element `offset`. The byte offset must be a multiple of
  // the device's base-address alignment (128 B on PoCL): ArgumentError otherwise.
  Buffer view(size_t offset, size_t count) const;
  // A view with another element type over the same bytes (sizes must divide evenly).
  Buffer view_as(DType dtype, size_t byte_offset, size_t count) const;
  // All of this buffer's bytes as elements of `dtype` (nbytes must be a multiple of its size:
  // ArgumentError otherwise). The way to pass a buffer to a kernel parameter of another element
  // type on purpose: launches check a buffer's dtype against the parameter's pointee type.
  //   dev.launch(k, {n}, {}, bits.as(encore::DType::u32));   // f32 bytes to a __global uint*
  Buffer as(DType dtype) const;

  // Host transfers; sizes must match exactly. copyin blocks until the data is taken;
  // copyout waits for the device work that writes this buffer.
  void copyin_bytes(const void* src, size_t nbytes) const;
  void copyout_bytes(void* dst, size_t nbytes) const;
  template <class T> void copyin(std::span<const T> src) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    copyin_bytes(src.data(), src.size_bytes());
  }
  template <class T> void copyin(const std::vector<T>& src) const { copyin(std::span<const T>(src)); }
  template <class T> void copyout(std::span<T> dst) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    copyout_bytes(dst.data(), dst.size_bytes());
  }
  template <class T> std::vector<T> copyout() const {
    std::vector<T> out(nbytes() / sizeof(T));
    copyout(std::span<T>(out));
    return out;
  }
  // Partial transfers, like clEnqueueWriteBuffer/clEnqueueReadBuffer with an offset: `src.size()`
  // elements written from element `offset` on (any offset, no alignment needed); ArgumentError when
  // they do not fit. Inside a capture a partial copyin is an upload item like a whole one.
  //   x.copyin(std::span<const float>(vals), 5);   std::vector<float> one(1); x.copyout(std::span(one), 20);
  template <class T> void copyin(std::span<const T> src, size_t offset) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    copyin_bytes(src.data(), src.size_bytes(), element_bytes(offset, sizeof(T)));
  }
  template <class T> void copyin(const std::vector<T>& src, size_t offset) const { copyin(std::span<const T>(src), offset); }
  template <class T> void copyout(std::span<T> dst, size_t offset) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    copyout_bytes(dst.data(), dst.size_bytes(), element_bytes(offset, sizeof(T)));
  }
  // The same at a byte offset (any byte offset).
  void copyin_bytes(const void* src, size_t nbytes, size_t byte_offset) const;
  void copyout_bytes(void* dst, size_t nbytes, size_t byte_offset) const;

  // Read-back that does not block: the read is queued after the work queued on this buffer's
  // device so far, and the call returns at once; `dst` holds the bytes once the returned Event has
  // completed (wait(), or done() true). Sizes as copyout's: the whole buffer, or a part at an
  // element (byte) offset. Inside a capture it is refused like copyout (JitError; with
  // CaptureOptions::allow_copyout it is accepted and its value frozen, like copyout's).
  // LIFETIME: `dst` must stay valid, and neither read nor written by the host, until the event has
  // completed. The Event owns the read: destroying its last handle before completion WAITS for the
  // read (it does not cancel it), so memory declared before the Event, as below, is always safe;
  // memory freed while the Event is alive is not. The buffer's storage is kept alive until then.
  //   std::vector<float> host(x.count());
  //   encore::Event ev = x.copyout_async(std::span<float>(host));
  //   ... host work ...
  //   ev.wait();   // host holds x's bytes
  // On a device whose work completes when it is issued (NULL) the read is done on return.
  template <class T> Event copyout_async(std::span<T> dst) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    return copyout_async_bytes(dst.data(), dst.size_bytes());
  }
  template <class T> Event copyout_async(std::span<T> dst, size_t offset) const {
    check_type(dtype_of<T>, sizeof(T), has_dtype<T>);
    return copyout_async_bytes(dst.data(), dst.size_bytes(), element_bytes(offset, sizeof(T)));
  }
  Event copyout_async_bytes(void* dst, size_t nbytes) const;
  Event copyout_async_bytes(void* dst, size_t nbytes, size_t byte_offset) const;

  // Every write through encore bumps the storage's version; a write through a native handle
  // (encore/opencl.hpp) must call touch() so captured units notice it.
  void touch() const;
  uint64_t version() const;

  // Optional label used in error messages and traces (a copy: another thread may rename it).
  std::string name() const;
  Buffer& set_name(std::string name);

  bool operator==(const Buffer& o) const { return impl_ == o.impl_; }
  // True when the two buffers share at least one byte of storage.
  bool overlaps(const Buffer& o) const;
  std::string describe() const;  // "f32[1024] 'x' on CL:0"

  detail::BufferImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<detail::BufferImpl>& shared_impl() const { return impl_; }
  explicit Buffer(std::shared_ptr<detail::BufferImpl> impl) : impl_(std::move(impl)) {}

 private:
  void check_type(DType t, size_t elem, bool known) const;
  size_t element_bytes(size_t offset, size_t elem) const;  // offset * elem, ArgumentError on overflow
  std::shared_ptr<detail::BufferImpl> impl_;
};

}  // namespace encore
