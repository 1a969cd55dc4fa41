// C API: events and OpenCL interop (the one C API file that includes OpenCL, via encore/opencl.hpp).
//
// TODO(events): until the core has encore::Event, an encore_event is a set of retained cl_events:
// a unit's completion is a marker enqueued on each of its devices' in-order queues after the
// replay, and a wait list becomes a barrier on those queues (events of another context are waited
// for on the host). Switch to ExecutionUnit::run(wait_for) -> Event and opencl::adopt_event /
// native(Event) when the core has them.
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "encore/opencl.hpp"

namespace encore::capi {

namespace {

cl_event as_cl(void* p) { return static_cast<cl_event>(p); }

void check_cl(cl_int st, const char* call, const std::string& what) {
  if (st != CL_SUCCESS) throw OpenCLError(st, call, what);
}

// The OpenCL queues of `devices` (the NULL device has none).
std::vector<Device> cl_devices(const std::vector<Device>& devices) {
  std::vector<Device> v;
  for (const Device& d : devices)
    if (d && !d.is_null()) v.push_back(d);
  return v;
}

void host_wait(cl_event e) {
  check_cl(clWaitForEvents(1, &e), "clWaitForEvents", "waiting for an event of the wait list");
}

}  // namespace

EventObj::~EventObj() {
  for (void* e : native) clReleaseEvent(as_cl(e));
}

void check_wait_list(const encore_event* wait_list, size_t num_wait) {
  if (num_wait == 0) return;
  need(wait_list, "wait_list (with num_wait > 0)");
  for (size_t i = 0; i < num_wait; ++i) get<EventObj>(wait_list[i], ("wait_list[" + std::to_string(i) + "]").c_str());
}

void wait_on_host(const encore_event* wait_list, size_t num_wait) {
  for (size_t i = 0; i < num_wait; ++i) {
    auto ev = get<EventObj>(wait_list[i], "wait_list[i]");
    for (void* e : ev->native) host_wait(as_cl(e));
  }
}

void wait_on_devices(const encore_event* wait_list, size_t num_wait, const std::vector<Device>& devices) {
  if (num_wait == 0) return;
  std::vector<Device> devs = cl_devices(devices);
  std::vector<cl_context> ctxs;
  for (const Device& d : devs) ctxs.push_back(opencl::context(d));
  std::vector<cl_event> on_queues;
  for (size_t i = 0; i < num_wait; ++i) {
    auto ev = get<EventObj>(wait_list[i], "wait_list[i]");
    for (void* p : ev->native) {
      cl_event e = as_cl(p);
      cl_context c = nullptr;
      check_cl(clGetEventInfo(e, CL_EVENT_CONTEXT, sizeof c, &c, nullptr), "clGetEventInfo(CL_EVENT_CONTEXT)",
               "wait_list[" + std::to_string(i) + "]");
      bool same = !devs.empty();
      for (cl_context x : ctxs) same = same && x == c;
      if (same)
        on_queues.push_back(e);
      else
        host_wait(e);  // another context (or no OpenCL queue to wait on): wait here
    }
  }
  if (on_queues.empty()) return;
  for (const Device& d : devs)
    check_cl(clEnqueueBarrierWithWaitList(opencl::queue(d), static_cast<cl_uint>(on_queues.size()), on_queues.data(), nullptr),
             "clEnqueueBarrierWithWaitList", "waiting on the wait list on " + d.id());
}

std::shared_ptr<EventObj> completion_event(const std::vector<Device>& devices) {
  auto ev = std::make_shared<EventObj>();
  for (const Device& d : cl_devices(devices)) {
    cl_event e = nullptr;
    cl_command_queue q = opencl::queue(d);
    check_cl(clEnqueueMarkerWithWaitList(q, 0, nullptr, &e), "clEnqueueMarkerWithWaitList", "completion event on " + d.id());
    ev->native.push_back(e);
    check_cl(clFlush(q), "clFlush", "completion event on " + d.id());  // others may wait on it
  }
  return ev;
}

}  // namespace encore::capi

using namespace encore;
using namespace encore::capi;

extern "C" {

encore_status encore_event_wait(encore_event ev) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");
    for (void* p : e->native) host_wait(as_cl(p));
  });
}

encore_status encore_event_done(encore_event ev, int* done) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");
    need(done, "done");
    int all = 1;
    for (void* p : e->native) {
      cl_int st = CL_COMPLETE;
      check_cl(clGetEventInfo(as_cl(p), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr),
               "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", "");
      if (st < 0) throw OpenCLError(st, "the work behind the event", "it failed");
      if (st != CL_COMPLETE) all = 0;
    }
    *done = all;
  });
}

encore_status encore_event_destroy(encore_event ev) { return destroy<EventObj>(__func__, ev); }

encore_status encore_event_adopt(struct _cl_event* event, encore_event* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(event, "event");
    check_cl(clRetainEvent(event), "clRetainEvent", "adopting an event");
    auto e = std::make_shared<EventObj>();
    try {
      e->native.push_back(event);
    } catch (...) {
      clReleaseEvent(event);
      throw;
    }
    put(std::move(e), out);
  });
}

encore_status encore_event_native(encore_event ev, struct _cl_event** out) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");
    need(out, "out");
    *out = e->native.empty() ? nullptr : as_cl(e->native.front());
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

encore_status encore_buffer_native(encore_buffer buf, struct _cl_mem** out) {
  return guard(__func__, [&] {
    auto b = get<BufferObj>(buf, "buf");
    need(out, "out");
    *out = opencl::native(b->buf);
  });
}

}  // extern "C"
