#pragma once
// The one enqueue path that eager execution and replay share: launch-size resolution, launches,
// copies (each pair of devices has its variant: CopyPath) and uploads. Eager work and a replayed
// unit call the same functions, so the two cannot drift.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "encore/exec_item.hpp"
#include "core/buffer_impl.hpp"
#include "core/native_call.hpp"

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

// A launch that waits and reports its device time in `*device_ns` (0 where the queue does not
// profile): ENCORE_DEBUG=2's lines.
void launch_timed(DeviceImpl& dev, BackendKernel& k, const LaunchDims& d, uint64_t* device_ns);

// Enqueues a resolved launch (nothing when empty); with device_ns set, waits and reports device time.
// Inline: it is the replay loop's per-item call.
inline void enqueue_launch(DeviceImpl& dev, BackendKernel& k, const LaunchDims& d, uint64_t* device_ns) {
  if (d.empty) return;
  if (!device_ns) [[likely]] dev.launch(k, d.dims, d.gws, d.lws, nullptr);
  else launch_timed(dev, k, d, device_ns);
}

// How a copy dst <- src runs: a property of the two devices (copy_path), chosen per call for eager
// work and once at bind for a replayed copy (src/exec/copy_item.cpp), so a replay decides nothing.
enum class CopyPath : uint8_t {
  queue,   // one device: a copy on its queue
  peer,    // two devices of one context: on the destination's queue, ordered against the source's by events
  host,    // host memory on both sides (NULL devices): a memmove, complete when it returns
  staged,  // otherwise (two contexts, NULL and OpenCL): into host memory (waiting for the source), then a blocking write
};
CopyPath copy_path(const DeviceImpl& dst, const DeviceImpl& src);
const char* name(CopyPath p);

// The variants: dst <- src, `n` bytes from each view's start.
inline void copy_on_queue(BufferImpl& dst, BufferImpl& src, size_t n) {
  dst.dev->copy(dst.root()->mem, dst.offset, src.root()->mem, src.offset, n);
}
// dst <- src between two queues of one context, after `waits` only (setting `*done` to the copy's
// event when given): the caller orders the queues (replay: src/unit/sync.cpp).
inline void enqueue_peer_copy(BufferImpl& dst, BufferImpl& src, size_t n, NativeEvent* const* waits, uint32_t n_waits, NativeEvent** done) {
  dst.dev->copy_peer(*src.dev, dst.root()->mem, dst.offset, src.root()->mem, src.offset, n, waits, n_waits, done);
}
void copy_host(BufferImpl& dst, BufferImpl& src, size_t n);
// `staging`: host memory of at least n bytes (null: a temporary).
void copy_staged(BufferImpl& dst, BufferImpl& src, size_t n, unsigned char* staging);

// The variant a bound item replays its copy with (set at bind; tests check it stays); nullopt for
// items of other kinds.
struct BoundItem;
std::optional<CopyPath> bound_copy_path(const BoundItem& x);

// Eager: the pair's variant, a peer copy ordered by whole queues (it runs after everything queued
// on the source so far, and the source's later work waits for it). `staging` as copy_staged's.
void enqueue_copy(BufferImpl& dst, BufferImpl& src, size_t n, unsigned char* staging);

// A native call over its buffers' memory.
inline void enqueue_native(DeviceImpl& dev, const NativeCall& call, NativeMem* const* mems, size_t n) { call.run(dev, mems, n); }

// dst <- host bytes. Non-blocking uploads need `data` alive until the device has read it.
void enqueue_upload(BufferImpl& dst, const unsigned char* data, size_t n, bool blocking);

}  // namespace encore::detail
