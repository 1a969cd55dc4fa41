// C API: OpenCL interop, the one C API file that includes OpenCL (through encore/opencl.hpp).
#include <string>

#include "capi/handles.hpp"
#include "encore/opencl.hpp"

using namespace encore;
using namespace encore::capi;

extern "C" {

encore_status encore_event_adopt(encore_device dev, struct _cl_event* event, encore_event* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto d = get<DeviceObj>(dev, "dev");
    need(event, "event");
    auto e = std::make_shared<EventObj>();
    e->parts.push_back(opencl::adopt(d->dev, event));
    put(std::move(e), out);
  });
}

encore_status encore_event_native(encore_event ev, struct _cl_event** out) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");
    need(out, "out");
    *out = nullptr;
    const Event* only = nullptr;
    for (const Event& p : e->parts) {
      if (!p) continue;  // complete already (NULL device)
      if (only)
        fail(ENCORE_ERROR_INVALID_ARGUMENT, "ev spans several devices: it has no single cl_event (wait for it, or "
                                            "take one device's completion)");
      only = &p;
    }
    if (only) *out = opencl::native(*only);
  });
}

encore_status encore_device_adopt_queue(struct _cl_command_queue* queue, encore_device* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(queue, "queue");
    auto o = std::make_shared<DeviceObj>();
    o->dev = opencl::adopt(queue);
    put(std::move(o), out);
  });
}

encore_status encore_device_native(encore_device dev, struct _cl_context** context, struct _cl_device_id** device,
                                   struct _cl_command_queue** queue) {
  return guard(__func__, [&] {
    auto d = get<DeviceObj>(dev, "dev");
    if (!context && !device && !queue) fail(ENCORE_ERROR_INVALID_ARGUMENT, "context, device and queue are all NULL: nothing to return");
    cl_context c = opencl::context(d->dev);
    cl_device_id id = opencl::device_id(d->dev);
    cl_command_queue q = opencl::queue(d->dev);
    if (context) *context = c;
    if (device) *device = id;
    if (queue) *queue = q;
  });
}

encore_status encore_buffer_adopt(encore_device dev, struct _cl_mem* mem, encore_dtype dtype, size_t count,
                                  encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto d = get<DeviceObj>(dev, "dev");
    need(mem, "mem");
    auto o = std::make_shared<BufferObj>();
    o->buf = opencl::adopt(d->dev, mem, to_dtype(dtype, "dtype"), count);
    put(std::move(o), out);
  });
}

encore_status encore_enqueue_native(encore_device dev, encore_native_fn fn, void* userdata, const encore_arg* buffers, size_t n,
                                    const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue another native call");
    auto d = get<DeviceObj>(dev, "dev");
    if (!fn) fail(ENCORE_ERROR_INVALID_ARGUMENT, "fn is NULL");
    if (n) need(buffers, "buffers");
    std::vector<BufferArg> bufs;
    for (size_t i = 0; i < n; ++i) {
      Arg a = to_arg(buffers[i], i);
      if (a.kind != Arg::Kind::buffer)
        fail(ENCORE_ERROR_INVALID_ARGUMENT, "buffers[" + std::to_string(i) + "]: expected a buffer (encore_arg_in/out/inout)");
      bufs.push_back(BufferArg{a.buf, a.access});
    }
    std::string label = name ? name : "native";
    opencl::enqueue_native(
        d->dev,
        [fn, userdata, label](cl_command_queue q, std::span<const cl_mem> m) {
          int rc;
          {
            NativeScope scope;  // eagerly, while captured and on every replay alike
            rc = fn(userdata, q, m.data(), m.size());
          }
          if (rc != 0)
            throw DeviceError("native function " + label + " returned " + std::to_string(rc));
        },
        std::move(bufs), label);
  });
}

encore_status encore_buffer_native(encore_buffer buf, struct _cl_mem** out) {
  return guard(__func__, [&] {
    auto b = get<BufferObj>(buf, "buf");
    need(out, "out");
    *out = opencl::native(b->buf);
  });
}

}  // extern "C"
