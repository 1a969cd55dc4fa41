#pragma once
// What a Buffer refers to: a root allocation or a view of one (src/core/buffer.cpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include "encore/buffer.hpp"
#include "core/device_impl.hpp"

namespace encore::detail {

// The most bytes one buffer can hold. Larger requests are an ArgumentError, so byte arithmetic on
// sizes and offsets (offset + bytes, allocator size classes) never wraps.
constexpr size_t max_buffer_bytes = SIZE_MAX >> 1;
// count * size(dtype); ArgumentError naming `what`, the request and the limit when over it.
size_t checked_bytes(const char* what, size_t count, DType dtype);

struct BufferImpl {
  std::shared_ptr<DeviceImpl> dev;
  DType dtype = DType::f32;
  size_t count = 0, nbytes = 0;
  std::shared_ptr<BufferImpl> base;  // set for views (always a root)
  size_t offset = 0;                 // bytes into the root
  std::string name;                  // under the names lock: read it with name_of (src/core/buffer.cpp)
  uint64_t capture_id = 0;           // the capture during which this handle was created, 0 if none
  uint64_t serial = 0;               // roots made in a capture: its allocation count then (Recorder::allocs)
  // root only. `mem` is set once, under view_mu, with release order (alloc_bytes before it), so any
  // thread that loads it non-null (acquire, or the seq_cst of a plain read) sees a complete allocation.
  std::atomic<NativeMem*> mem{nullptr};
  size_t alloc_bytes = 0;
  bool owned = true;                 // false for adopted native memory (released, not cached)
  std::atomic<uint64_t> version{0};
  // views only: the backend view handle, made on first use (set once under view_mu, like mem)
  std::atomic<NativeMem*> view_mem{nullptr};
  std::mutex view_mu;

  BufferImpl() = default;
  ~BufferImpl();
  BufferImpl* root() { return base ? base.get() : this; }
  void ensure_allocated();
  // Handle to pass as a kernel argument.
  NativeMem* handle();
  void bump() { root()->version.fetch_add(1, std::memory_order_relaxed); }
};

// The buffer's name, read under the lock that Buffer::set_name takes (names change on any thread).
std::string name_of(const BufferImpl& b);

// `count` elements of `t` at `byte_offset` into `of` (a view, or `of`'s root when that is all of
// it), without the alignment check of Buffer::view: for the byte ranges of partial transfers (never
// a kernel argument) and for rebasing views that passed the check at capture. The range must fit.
Buffer region(const Buffer& of, DType t, size_t byte_offset, size_t count);

// The byte range [off, off + n) of `b` for a partial transfer: `b` when that is all of it, else a
// region (typed like `b` when the range holds whole elements, else bytes). ArgumentError naming
// `what` when the range is empty or does not fit.
Buffer transfer_range(const Buffer& b, size_t n, size_t off, const char* what);

}  // namespace encore::detail
