// The OpenCL backend's public interop (encore/opencl.hpp): adopting an engine's queue, cl_mem and
// cl_event, native calls on a device's queue, and the native handles behind encore's objects.
#include <atomic>

#include "cl_device.hpp"
#include "encore/opencl.hpp"
#include "core/native_call.hpp"
#include "core/native_fn_guard.hpp"
#include "core/buffer_impl.hpp"
#include "core/event_impl.hpp"

namespace encore::detail {

ClDevice& cl_device_of(DeviceImpl* d, const char* what) {
  auto* c = dynamic_cast<ClDevice*>(d);
  if (!c) throw DeviceError(std::string(what) + ": not an OpenCL device (" + (d ? d->info.id : std::string("null")) + ")");
  return *c;
}

}  // namespace encore::detail

// encore/opencl.hpp
namespace encore::opencl {

using detail::cl_device_of;

Device adopt(cl_command_queue queue) {
  static std::atomic<int> serial{0};
  if (!queue) throw ArgumentError("encore::opencl::adopt: null queue");
  return Device(std::make_shared<detail::ClDevice>(queue, serial++));
}

Buffer adopt(const Device& dev, cl_mem mem, DType dtype, size_t count) {
  detail::ClDevice& d = cl_device_of(dev.impl(), "encore::opencl::adopt");
  if (!mem) throw ArgumentError("encore::opencl::adopt: null cl_mem");
  size_t bytes = 0;
  cl_context ctx = nullptr;
  cl::check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr), "clGetMemObjectInfo");
  cl::check(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetMemObjectInfo");
  if (ctx != d.ctx()) throw ArgumentError("encore::opencl::adopt: the cl_mem belongs to another context than " + dev.id());
  if (count == 0 || detail::checked_bytes("encore::opencl::adopt", count, dtype) > bytes)
    throw ArgumentError("encore::opencl::adopt: " + std::to_string(count) + " elements of " + std::string(name(dtype)) +
                        " do not fit in the cl_mem's " + std::to_string(bytes) + " bytes");
  cl::check(clRetainMemObject(mem), "clRetainMemObject");
  auto b = std::make_shared<detail::BufferImpl>();
  b->dev = dev.shared_impl();
  b->dtype = dtype;
  b->count = count;
  b->nbytes = count * size(dtype);  // checked above
  b->mem = cl::native(mem);
  b->alloc_bytes = bytes;
  b->owned = false;  // released, never returned to encore's allocator
  return Buffer(std::move(b));
}

Event adopt(const Device& dev, cl_event event) {
  detail::ClDevice& d = cl_device_of(dev.impl(), "encore::opencl::adopt");
  if (!event) throw ArgumentError("encore::opencl::adopt: null cl_event");
  cl_context ctx = nullptr;
  cl::check(clGetEventInfo(event, CL_EVENT_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetEventInfo", "adopted event");
  if (ctx != d.ctx()) throw ArgumentError("encore::opencl::adopt: the cl_event belongs to another context than " + dev.id());
  cl::check(clRetainEvent(event), "clRetainEvent", "adopted event");
  return Event(std::make_shared<detail::QueueEvent>(dev.shared_impl(), reinterpret_cast<detail::NativeEvent*>(event)));
}

namespace {
// A native call on an OpenCL device: the memory handles are cl_mems (NativeMem is cl_mem here), so
// the core's array is handed over as it is: nothing to allocate on replay.
struct ClNativeCall final : NativeCall {
  NativeFn fn;
  void run(detail::DeviceImpl& d, detail::NativeMem* const* mems, size_t n) const override {
    auto& cd = static_cast<detail::ClDevice&>(d);
    detail::NativeFnCall in;  // no host items, branches or loops from inside (core/native_fn_guard.hpp)
    fn(cd.queue(), std::span<const cl_mem>(reinterpret_cast<const cl_mem*>(mems), n));
  }
};
}  // namespace

void enqueue_native(const Device& dev, NativeFn fn, std::vector<BufferArg> buffers, std::string name) {
  cl_device_of(dev.impl(), "encore::opencl::enqueue_native");
  if (!fn) throw ArgumentError("encore::opencl::enqueue_native: empty function");
  auto call = std::make_shared<ClNativeCall>();
  call->fn = std::move(fn);
  call->dev = dev.shared_impl();
  std::vector<Arg> args;
  args.reserve(buffers.size());
  for (const BufferArg& b : buffers) args.emplace_back(b);
  detail::run_native(dev, std::move(call), std::move(args), std::move(name));
}

cl_event native(const Event& e) {
  auto* q = dynamic_cast<detail::QueueEvent*>(e.impl().get());
  if (!q || !dynamic_cast<detail::ClDevice*>(q->dev.get()))
    throw ArgumentError("encore::opencl::native: the event is not one OpenCL event (empty, from the NULL device, or over several devices)");
  return reinterpret_cast<cl_event>(q->ev.get());
}

cl_context context(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::context").ctx(); }
cl_device_id device_id(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::device_id").device_id(); }
cl_command_queue queue(const Device& dev) { return cl_device_of(dev.impl(), "encore::opencl::queue").queue(); }

cl_mem native(const Buffer& b) {
  if (!b) throw ArgumentError("encore::opencl::native: null buffer");
  cl_device_of(b.impl()->dev.get(), "encore::opencl::native");
  return cl::mem(b.impl()->handle());
}

}  // namespace encore::opencl
