// The OpenCL device's memory and the work of its queue: allocations and sub-buffer views,
// transfers, fills, copies (on one queue, and between queues of one context), launches, barriers,
// markers and events.
#include <vector>

#include "cl_device.hpp"
#include "core/event_impl.hpp"

namespace encore::detail {

namespace {

// clEnqueueNDRangeKernel, with the launch in the error
void enqueue_nd(cl_command_queue q, const std::string& dev_id, ClKernel& ck, uint32_t dims, const size_t* global, const size_t* local,
                cl_event* ev, cl_uint n_waits = 0, const cl_event* waits = nullptr) {
  cl_int st = clEnqueueNDRangeKernel(q, ck.get(), dims, nullptr, global, local, n_waits, waits, ev);
  if (st != CL_SUCCESS) [[unlikely]] {
    std::string what = "kernel " + ck.name() + " global [";
    for (uint32_t i = 0; i < dims; ++i) (what += i ? "," : "") += std::to_string(global[i]);
    what += "]";
    if (local) {
      what += " local [";
      for (uint32_t i = 0; i < dims; ++i) (what += i ? "," : "") += std::to_string(local[i]);
      what += "]";
    }
    throw OpenCLError(st, "clEnqueueNDRangeKernel", what + " on " + dev_id);
  }
}

// A wait list for a lane's command, without allocation: null entries dropped. A list longer than
// fits becomes barriers on that lane first, 16 events each (a barrier without a list would order
// only the lane's own commands, not the other lanes' events). Returns the entries kept in `w`.
cl_uint wait_list(cl_command_queue q, NativeEvent* const* waits, uint32_t n, cl_event (&w)[16], const std::string& dev_id) {
  cl_uint k = 0;
  bool barriers = false;
  for (uint32_t i = 0; i < n; ++i)
    if (waits[i]) {
      if (k == 16) {
        cl::check(clEnqueueBarrierWithWaitList(q, k, w, nullptr), "clEnqueueBarrierWithWaitList", dev_id);
        k = 0;
        barriers = true;
      }
      w[k++] = reinterpret_cast<cl_event>(waits[i]);
    }
  if (barriers && k) {
    cl::check(clEnqueueBarrierWithWaitList(q, k, w, nullptr), "clEnqueueBarrierWithWaitList", dev_id);
    k = 0;
  }
  return k;
}

}  // namespace

NativeMem* ClDevice::raw_alloc(size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
  cl::check(err, "clCreateBuffer", std::to_string(bytes) + " bytes on " + info.id);
  return cl::native(m);
}
// (after the exit drain, memory is left to the process's end: see cl::Handle::reset)
void ClDevice::raw_free(NativeMem* mem) {
  if (!exiting()) clReleaseMemObject(cl::mem(mem));
}
NativeMem* ClDevice::make_view(NativeMem* root, size_t offset, size_t bytes) {
  cl_buffer_region r{offset, bytes};
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateSubBuffer(cl::mem(root), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  cl::check(err, "clCreateSubBuffer", std::to_string(bytes) + " bytes at offset " + std::to_string(offset));
  return cl::native(m);
}
void ClDevice::free_view(NativeMem* v) {
  if (!exiting()) clReleaseMemObject(cl::mem(v));
}
void ClDevice::write(NativeMem* root, size_t off, const void* src, size_t n, bool blocking) {
  if (cl_int st = clEnqueueWriteBuffer(queue(), cl::mem(root), blocking ? CL_TRUE : CL_FALSE, off, n, src, 0, nullptr, nullptr);
      st != CL_SUCCESS)
    cl::check(st, "clEnqueueWriteBuffer", std::to_string(n) + " bytes on " + info.id);
}
void ClDevice::read_queue(NativeMem* root, size_t off, void* dst, size_t n) {
  if (cl_int st = clEnqueueReadBuffer(queue(), cl::mem(root), CL_TRUE, off, n, dst, 0, nullptr, nullptr); st != CL_SUCCESS)
    cl::check(st, "clEnqueueReadBuffer", std::to_string(n) + " bytes on " + info.id);
}
NativeEvent* ClDevice::read_async(NativeMem* root, size_t off, void* dst, size_t n) {
  cl_event ev = nullptr;
  if (cl_int st = clEnqueueReadBuffer(queue(), cl::mem(root), CL_FALSE, off, n, dst, 0, nullptr, &ev); st != CL_SUCCESS)
    cl::check(st, "clEnqueueReadBuffer", std::to_string(n) + " bytes on " + info.id);
  clFlush(queue());
  return reinterpret_cast<NativeEvent*>(ev);
}
void ClDevice::copy(NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n) {
  if (cl_int st = clEnqueueCopyBuffer(queue(), cl::mem(src), cl::mem(dst), soff, doff, n, 0, nullptr, nullptr);
      st != CL_SUCCESS)
    cl::check(st, "clEnqueueCopyBuffer", std::to_string(n) + " bytes on " + info.id);
}
void ClDevice::fill(NativeMem* root, size_t off, const void* pattern, size_t pb, size_t n) {
  if (n == 0) return;  // CL_INVALID_VALUE otherwise
  if (cl_int st = clEnqueueFillBuffer(queue(), cl::mem(root), pattern, pb, off, n, 0, nullptr, nullptr); st != CL_SUCCESS)
    cl::check(st, "clEnqueueFillBuffer", std::to_string(n) + " bytes on " + info.id);
}
// the copy itself is the same clEnqueueCopyBuffer as copy's: both roots are of one context
void ClDevice::copy_peer(const DeviceImpl& src_dev, NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t n,
                         NativeEvent* const* waits, uint32_t n_waits, NativeEvent** done) {
  cl_event w[16];
  uint32_t k = 0;
  if (n_waits > 16)  // no allocation here: a long list becomes a barrier before the copy
    enqueue_barrier(waits, n_waits);
  else
    for (uint32_t i = 0; i < n_waits; ++i)
      if (waits[i]) w[k++] = reinterpret_cast<cl_event>(waits[i]);
  cl_event ev = nullptr;
  if (cl_int st = clEnqueueCopyBuffer(queue(), cl::mem(src), cl::mem(dst), soff, doff, n, k, k ? w : nullptr, done ? &ev : nullptr);
      st != CL_SUCCESS)
    cl::check(st, "clEnqueueCopyBuffer", "cross-device copy of " + std::to_string(n) + " bytes " + src_dev.info.id + " -> " + info.id);
  if (done) {
    clFlush(queue());  // a waiter on another queue needs it submitted
    *done = reinterpret_cast<NativeEvent*>(ev);
  }
}
void ClDevice::enqueue_barrier(NativeEvent* const* evs, uint32_t n) {
  cl_event w[16];
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (evs[i]) {
      w[k++] = reinterpret_cast<cl_event>(evs[i]);
      if (k == 16) {  // no allocation here: long lists become several barriers
        cl::check(clEnqueueBarrierWithWaitList(queue(), k, w, nullptr), "clEnqueueBarrierWithWaitList", info.id);
        k = 0;
      }
    }
  if (k) cl::check(clEnqueueBarrierWithWaitList(queue(), k, w, nullptr), "clEnqueueBarrierWithWaitList", info.id);
}
void ClDevice::launch(BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent** done) {
  cl_event ev = nullptr;
  enqueue_nd(queue(), info.id, static_cast<ClKernel&>(k), dims, global, local, done ? &ev : nullptr);
  if (done) *done = reinterpret_cast<NativeEvent*>(ev);
}
// after the exit drain the queue is empty but for work enqueued since, which exit abandons. (The
// other lanes' work ends before a barrier on this queue: src/unit/concurrent.cpp.)
void ClDevice::finish_queue() {
  if (!exiting()) cl::check(clFinish(queue()), "clFinish", info.id);
}
void ClDevice::launch_after(uint32_t l, BackendKernel& k, uint32_t dims, const size_t* global, const size_t* local, NativeEvent* const* waits,
                            uint32_t n, NativeEvent** done) {
  cl_event w[16], ev = nullptr;
  const cl_uint nw = wait_list(lane(l), waits, n, w, info.id);
  enqueue_nd(lane(l), info.id, static_cast<ClKernel&>(k), dims, global, local, done ? &ev : nullptr, nw, nw ? w : nullptr);
  if (done) *done = reinterpret_cast<NativeEvent*>(ev);
}
void ClDevice::fill_after(uint32_t l, NativeMem* root, size_t off, const void* pattern, size_t pb, size_t bytes, NativeEvent* const* waits,
                          uint32_t n, NativeEvent** done) {
  if (bytes == 0) {  // CL_INVALID_VALUE otherwise: a marker keeps the order
    NativeEvent* m = marker_after(l, waits, n);
    if (done) *done = m;
    else release_event(m);
    return;
  }
  cl_event w[16], ev = nullptr;
  const cl_uint nw = wait_list(lane(l), waits, n, w, info.id);
  if (cl_int st = clEnqueueFillBuffer(lane(l), cl::mem(root), pattern, pb, off, bytes, nw, nw ? w : nullptr, done ? &ev : nullptr);
      st != CL_SUCCESS)
    cl::check(st, "clEnqueueFillBuffer", std::to_string(bytes) + " bytes on " + info.id);
  if (done) *done = reinterpret_cast<NativeEvent*>(ev);
}
void ClDevice::copy_after(uint32_t l, NativeMem* dst, size_t doff, NativeMem* src, size_t soff, size_t bytes, NativeEvent* const* waits,
                          uint32_t n, NativeEvent** done) {
  cl_event w[16], ev = nullptr;
  const cl_uint nw = wait_list(lane(l), waits, n, w, info.id);
  if (cl_int st = clEnqueueCopyBuffer(lane(l), cl::mem(src), cl::mem(dst), soff, doff, bytes, nw, nw ? w : nullptr, done ? &ev : nullptr);
      st != CL_SUCCESS)
    cl::check(st, "clEnqueueCopyBuffer", std::to_string(bytes) + " bytes on " + info.id);
  if (done) *done = reinterpret_cast<NativeEvent*>(ev);
}
NativeEvent* ClDevice::marker_after(uint32_t l, NativeEvent* const* waits, uint32_t n) {
  cl_event w[16], ev = nullptr;
  const cl_uint nw = wait_list(lane(l), waits, n, w, info.id);
  // an empty list (asked for, or every entry null) means after everything on the lane so far
  if (cl_int st = clEnqueueMarkerWithWaitList(lane(l), nw, nw ? w : nullptr, &ev); st != CL_SUCCESS)
    cl::check(st, "clEnqueueMarkerWithWaitList", info.id + " (lane " + std::to_string(l) + ")");
  clFlush(lane(l));
  return reinterpret_cast<NativeEvent*>(ev);
}
void ClDevice::flush_lane(uint32_t l) {
  if (!exiting()) clFlush(lane(l));
}
void ClDevice::flush() {
  if (!exiting()) clFlush(queue());
}
NativeEvent* ClDevice::enqueue_marker() {
  cl_event ev = nullptr;
  cl::check(clEnqueueMarkerWithWaitList(queue(), 0, nullptr, &ev), "clEnqueueMarkerWithWaitList", info.id);
  clFlush(queue());  // a marker nobody flushes may never complete for a waiter on another thread
  return reinterpret_cast<NativeEvent*>(ev);
}
void ClDevice::wait_event(NativeEvent* ev) {
  cl_event e = reinterpret_cast<cl_event>(ev);
  cl::check(clWaitForEvents(1, &e), "clWaitForEvents", "event on " + info.id);
}
bool ClDevice::event_done(NativeEvent* ev) {
  cl_int st = CL_QUEUED;
  cl::check(clGetEventInfo(reinterpret_cast<cl_event>(ev), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr), "clGetEventInfo",
            info.id);
  if (st < 0) throw OpenCLError(st, "event", "work on " + info.id + " failed");
  return st == CL_COMPLETE;
}
void ClDevice::retain_event(NativeEvent* ev) { cl::check(clRetainEvent(reinterpret_cast<cl_event>(ev)), "clRetainEvent", info.id); }
void ClDevice::release_event(NativeEvent* ev) noexcept {
  if (!exiting()) clReleaseEvent(reinterpret_cast<cl_event>(ev));
}
void ClDevice::enqueue_wait(std::span<const Event> events) {
  // events of this context become a barrier on the queue; any other is waited for on the host
  std::vector<cl_event> same;
  for (const Event& e : events) {
    auto* q = dynamic_cast<QueueEvent*>(e.impl().get());
    if (q && q->dev && q->dev->context == context) same.push_back(reinterpret_cast<cl_event>(q->ev.get()));  // a cl_event of this context
    else e.wait();
  }
  if (!same.empty())
    cl::check(clEnqueueBarrierWithWaitList(queue(), static_cast<cl_uint>(same.size()), same.data(), nullptr), "clEnqueueBarrierWithWaitList",
              info.id);
}
// the one device-time query: launch timing (enqueue.cpp) and device_clock (device.cpp) read it
bool ClDevice::event_times(NativeEvent* ev, uint64_t* start_ns, uint64_t* end_ns) {
  if (!profiling) return false;
  cl_event e = reinterpret_cast<cl_event>(ev);
  cl_ulong t0 = 0, t1 = 0;
  if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr) != CL_SUCCESS ||
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr) != CL_SUCCESS)
    return false;
  *start_ns = t0;
  *end_ns = t1;
  return true;
}

}  // namespace encore::detail
