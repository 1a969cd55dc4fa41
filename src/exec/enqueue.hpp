#pragma once
// The one enqueue path that eager execution and replay share: launch-size resolution, launches,
// copies (direct, or through host memory between platforms) and uploads. Eager work and a replayed
// unit call the same functions, so the two cannot drift.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "internal.hpp"

namespace encore::detail {

struct LaunchDims {
  uint32_t dims = 0;
  size_t gws[3]{}, lws[3]{};
  bool empty = false;  // some global size is 0: the launch does nothing
};

// Validates evaluated sizes of a launch of `k` on `dev` (`local` null: encore chooses one, within
// the kernel's work-group limit) into `out`. ArgumentError naming `what` and the kernel, before
// anything is enqueued, on a negative size, a non-positive local size, a local size over the
// device's CL_DEVICE_MAX_WORK_ITEM_SIZES in its dimension or a work group over the kernel's limit,
// or a global size that is not a multiple of its local size.
void resolve_launch(uint32_t dims, const int64_t* global, const int64_t* local, const DeviceImpl& dev, const BackendKernel& k,
                    LaunchDims& out, const char* what);

// ArgumentError when a launch's __local memory (the kernel's own plus its __local arguments in
// `args`) is over what one work group of `dev` may use: on OpenCL the launch would fail or, on
// PoCL, abort the process.
void check_local_memory(const DeviceImpl& dev, const BackendKernel& k, std::span<const Arg> args, const std::string& kernel);

// The largest work-group size a launch of `k` on `dev` may use.
size_t max_group_size(const DeviceImpl& dev, const BackendKernel& k);

// Enqueues a resolved launch (nothing when empty); with device_ns set, waits and reports device time.
// Inline: it is the replay loop's per-item call.
inline void enqueue_launch(DeviceImpl& dev, BackendKernel& k, const LaunchDims& d, uint64_t* device_ns) {
  if (!d.empty) dev.launch(k, d.dims, d.gws, d.lws, device_ns);
}

// dst <- src, `n` bytes from each view's start. Between devices that cannot copy directly (different
// platforms) the bytes go through `staging` (host memory of at least n bytes; null: a temporary).
void enqueue_copy(BufferImpl& dst, BufferImpl& src, size_t n, unsigned char* staging);

// dst <- src between two queues of one context, after `waits` only (setting `*done` to the copy's
// event when given): the caller orders the queues (replay: src/unit/sync.cpp).
inline void enqueue_peer_copy(BufferImpl& dst, BufferImpl& src, size_t n, NativeEvent* const* waits, uint32_t n_waits, NativeEvent** done) {
  dst.dev->copy_peer(*src.dev, dst.root()->mem, dst.offset, src.root()->mem, src.offset, n, waits, n_waits, done);
}

// A native call over its buffers' memory.
inline void enqueue_native(DeviceImpl& dev, const NativeCall& call, NativeMem* const* mems, size_t n) { call.run(dev, mems, n); }

// dst <- host bytes. Non-blocking uploads need `data` alive until the device has read it.
void enqueue_upload(BufferImpl& dst, const unsigned char* data, size_t n, bool blocking);

}  // namespace encore::detail
