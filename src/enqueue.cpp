#include "enqueue.hpp"

#include <string>
#include <vector>

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

void resolve_launch(uint32_t dims, const int64_t* global, const int64_t* local, size_t max_wg, LaunchDims& out, const char* what) {
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
    }
  }
  out.empty = !check_launch(dims, out.gws, out.lws, what);
}

size_t max_group_size(const DeviceImpl& dev, const BackendKernel& k) {
  size_t kmax = k.max_work_group_size();
  return kmax && kmax < dev.info.max_work_group_size ? kmax : dev.info.max_work_group_size;
}

void enqueue_copy(BufferImpl& d, BufferImpl& s, size_t n, unsigned char* staging) {
  NativeMem* dm = d.root()->mem;
  NativeMem* sm = s.root()->mem;
  if (d.dev == s.dev) {
    d.dev->copy(dm, d.offset, sm, s.offset, n);
  } else if (d.dev->async_peer(*s.dev)) {
    // Without a plan, order by whole queues: the copy runs after everything queued on the source
    // so far, and the source's later work waits for the copy (replay keeps only the dependencies:
    // src/unit/sync.cpp). Same copy_peer either way.
    NativeEvent* ready = s.dev->enqueue_marker();
    NativeEvent* done = nullptr;
    try {
      enqueue_peer_copy(d, s, n, &ready, 1, &done);
      s.dev->enqueue_barrier(&done, 1);
    } catch (...) {
      s.dev->release_event(ready);
      if (done) d.dev->release_event(done);
      throw;
    }
    s.dev->release_event(ready);
    d.dev->release_event(done);
  } else if (!d.dev->copy_from(*s.dev, dm, d.offset, sm, s.offset, n)) {
    std::vector<unsigned char> tmp;
    if (!staging) {
      tmp.resize(n);
      staging = tmp.data();
    }
    s.dev->read(sm, s.offset, staging, n);  // waits for the source queue
    d.dev->write(dm, d.offset, staging, n, true);
  }
}

void enqueue_upload(BufferImpl& d, const unsigned char* data, size_t n, bool blocking) {
  d.dev->write(d.root()->mem, d.offset, data, n, blocking);
}

}  // namespace encore::detail
