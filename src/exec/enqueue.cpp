#include "exec/enqueue.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "core/owned_event.hpp"
#include "exec/eager.hpp"

namespace encore::detail {

void choose_local(uint32_t dims, const size_t* gws, size_t max_wg, size_t* lws) {
  static constexpr size_t kSet[] = {256, 128, 64, 32, 16, 8, 4, 2, 1};
  for (uint32_t d = 0; d < dims; ++d) lws[d] = 1;
  for (size_t l : kSet)
    if (l <= max_wg && gws[0] % l == 0) {
      lws[0] = l;
      break;
    }
}

bool check_launch(uint32_t dims, const size_t* gws, const size_t* lws, const char* what) {
  bool empty = false;
  for (uint32_t d = 0; d < dims; ++d) {
    if (gws[d] == 0) empty = true;
    else if (lws[d] == 0 || gws[d] % lws[d] != 0)
      throw ArgumentError(std::string(what) + ": global size " + std::to_string(gws[d]) + " in dimension " + std::to_string(d) +
                          " is not a multiple of the local size " + std::to_string(lws[d]));
  }
  return !empty;
}

void resolve_launch(uint32_t dims, const int64_t* global, const int64_t* local, const DeviceImpl& dev, const BackendKernel& k,
                    LaunchDims& out, const char* what) {
  const size_t max_wg = max_group_size(dev, k);
  out.dims = dims;
  for (uint32_t d = 0; d < dims; ++d) {
    if (global[d] < 0)
      throw ArgumentError(std::string(what) + ": global size " + std::to_string(global[d]) + " in dimension " + std::to_string(d) + " is negative");
    out.gws[d] = static_cast<size_t>(global[d]);
  }
  if (!local) {
    choose_local(dims, out.gws, max_wg, out.lws);
  } else {
    for (uint32_t d = 0; d < dims; ++d) {
      if (local[d] <= 0)
        throw ArgumentError(std::string(what) + ": local size " + std::to_string(local[d]) + " in dimension " + std::to_string(d) +
                            " must be positive");
      out.lws[d] = static_cast<size_t>(local[d]);
      if (out.lws[d] > dev.info.max_work_item_sizes[d]) [[unlikely]]
        throw ArgumentError(std::string(what) + ": local size " + std::to_string(local[d]) + " in dimension " + std::to_string(d) +
                            " is over " + dev.info.id + "'s limit of " + std::to_string(dev.info.max_work_item_sizes[d]) +
                            " work items in that dimension (CL_DEVICE_MAX_WORK_ITEM_SIZES); use a smaller local size");
    }
    size_t items = 1;
    for (uint32_t d = 0; d < dims; ++d) items *= out.lws[d];  // each factor is bounded above: no overflow
    if (items > max_wg) [[unlikely]] {
      std::string l;
      for (uint32_t d = 0; d < dims; ++d) (l += d ? "," : "") += std::to_string(out.lws[d]);
      throw ArgumentError(std::string(what) + ": local size [" + l + "] makes work groups of " + std::to_string(items) +
                          " work items, over this kernel's limit of " + std::to_string(max_wg) + " on " + dev.info.id +
                          " (CL_KERNEL_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_GROUP_SIZE); use a smaller local size");
    }
  }
  out.empty = !check_launch(dims, out.gws, out.lws, what);
}

void check_local_memory(const DeviceImpl& dev, const BackendKernel& k, std::span<const Arg> args, const std::string& kernel) {
  uint64_t total = k.local_mem_bytes();
  bool wrapped = false;
  for (const Arg& a : args)
    if (a.kind == Arg::Kind::local) wrapped = wrapped || __builtin_add_overflow(total, uint64_t{a.local_bytes}, &total);
  const uint64_t limit = dev.info.local_mem_bytes;
  if (limit == 0 || (!wrapped && total <= limit)) return;
  std::string parts = std::to_string(k.local_mem_bytes()) + " bytes declared in the kernel";
  for (const Arg& a : args)
    if (a.kind == Arg::Kind::local) parts += " + " + std::to_string(a.local_bytes);
  throw ArgumentError("launch " + kernel + ": __local memory " + (wrapped ? "beyond 2^64 bytes" : std::to_string(total) + " bytes") + " (" +
                      parts + " of __local arguments) is over " + dev.info.id + "'s " + std::to_string(limit) +
                      " bytes per work group (CL_DEVICE_LOCAL_MEM_SIZE); pass smaller encore::LocalMem sizes");
}

size_t max_group_size(const DeviceImpl& dev, const BackendKernel& k) {
  size_t kmax = k.max_work_group_size();
  return kmax && kmax < dev.info.max_work_group_size ? kmax : dev.info.max_work_group_size;
}

void launch_timed(DeviceImpl& dev, BackendKernel& k, const LaunchDims& d, uint64_t* device_ns) {
  *device_ns = 0;
  OwnedEvent ev;
  dev.launch(k, d.dims, d.gws, d.lws, ev.out(&dev));
  if (!ev) return;  // complete already, and no device time to read
  ev.wait();
  uint64_t start = 0, end = 0;
  if (dev.event_times(ev.get(), &start, &end)) *device_ns = end - start;
}

CopyPath copy_path(const DeviceImpl& dst, const DeviceImpl& src) {
  if (&dst == &src) return CopyPath::queue;
  if (dst.async_peer(src)) return CopyPath::peer;
  if (dst.host_memory && src.host_memory) return CopyPath::host;
  return CopyPath::staged;
}

const char* name(CopyPath p) {
  switch (p) {
    case CopyPath::queue: return "queue";
    case CopyPath::peer: return "peer";
    case CopyPath::host: return "host";
    case CopyPath::staged: return "staged";
  }
  return "?";
}

void copy_host(BufferImpl& d, BufferImpl& s, size_t n) {
  NativeMem* dm = d.root()->mem;
  NativeMem* sm = s.root()->mem;
  auto* to = reinterpret_cast<unsigned char*>(dm) + d.offset;
  auto* from = reinterpret_cast<const unsigned char*>(sm) + s.offset;
  std::memmove(to, from, n);
}

void copy_staged(BufferImpl& d, BufferImpl& s, size_t n, unsigned char* staging) {
  std::vector<unsigned char> tmp;
  if (!staging) {
    tmp.resize(n);
    staging = tmp.data();
  }
  s.dev->read(s.root()->mem, s.offset, staging, n);  // waits for the source queue
  d.dev->write(d.root()->mem, d.offset, staging, n, true);
}

namespace {
// Without a plan, order by whole queues; replay keeps only the dependencies (src/unit/sync.cpp).
// Same copy_peer either way.
void copy_peer_eager(BufferImpl& d, BufferImpl& s, size_t n) {
  OwnedEvent ready(s.dev.get(), s.dev->enqueue_marker());
  OwnedEvent done;
  enqueue_peer_copy(d, s, n, ready.list(), 1, done.out(d.dev.get()));
  s.dev->enqueue_barrier(done.list(), 1);
}
}  // namespace

void enqueue_copy(BufferImpl& d, BufferImpl& s, size_t n, unsigned char* staging) {
  switch (copy_path(*d.dev, *s.dev)) {
    case CopyPath::queue: copy_on_queue(d, s, n); break;
    case CopyPath::peer: copy_peer_eager(d, s, n); break;
    case CopyPath::host: copy_host(d, s, n); break;
    case CopyPath::staged: copy_staged(d, s, n, staging); break;
  }
}

void enqueue_upload(BufferImpl& d, const unsigned char* data, size_t n, bool blocking) {
  d.dev->write(d.root()->mem, d.offset, data, n, blocking);
}

}  // namespace encore::detail
