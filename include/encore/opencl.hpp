#pragma once
// Interop with an engine's own OpenCL objects: the one public header that includes OpenCL.
//   encore::Device dev = encore::opencl::adopt(engine_queue);        // enqueue on the engine's queue
//   encore::Buffer verts = encore::opencl::adopt(dev, engine_vbo, encore::DType::f32, n);
//   cl_mem m = encore::opencl::native(verts);                         // hand a buffer back
// Writes the engine makes through its own handles must call Buffer::touch(), so captured units
// re-run the one-time work that read the old bytes.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/device.hpp"

namespace encore::opencl {

// A Device over an existing in-order queue (its context and device come with it; all three are
// retained). DeviceError for an out-of-order queue.
ENCORE_API Device adopt(cl_command_queue queue);
// A Buffer over an existing cl_mem of at least count * size(dtype) bytes in the device's context.
// encore retains it and releases its reference when the last handle goes; it never frees the memory.
ENCORE_API Buffer adopt(const Device& dev, cl_mem mem, DType dtype, size_t count);

// An Event over an engine's cl_event of `dev`'s context (retained; released with the last handle):
// pass it to ExecutionUnit::run or Device::wait_for to order encore's work after the engine's.
ENCORE_API Event adopt(const Device& dev, cl_event event);
// The cl_event behind an encore Event (owned by the Event: retain it to keep it longer). ArgumentError
// for an empty Event, a NULL-device one, or one over several devices.
ENCORE_API cl_event native(const Event& event);

// Native work inside a step: `fn(queue, mems)` enqueues whatever it likes on the device's queue
// over the buffers' cl_mems (in order; a view is a sub-buffer). It runs now, is recorded like any item
// when a capture is active, and on every replay runs again with the buffers bound then (swapped
// inputs, planned arena views), allocating nothing. The access of each buffer must be stated:
// encore cannot see what native code reads and writes. Never pruned as one-time.
// fn runs inside the step (eagerly, while captured, and inside every replay): it enqueues on the
// queue it is given. It must not call back into the ExecutionUnit that replays it (run,
// bind_input, bind_var, free_intermediates: JitError, the replay still uses its binding), and
// encore work it issues (a launch, a copy) is not part of the step: a capture would record it
// besides fn, and every replay would issue it again (the C API refuses such calls).
//   encore::opencl::enqueue_native(dev, [=](cl_command_queue q, std::span<const cl_mem> m) {
//     CLBlastSgemm(..., m[0], 0, k, m[1], 0, n, 0.f, m[2], 0, n, &q, nullptr);
//   }, {encore::in(a), encore::in(b), encore::out(c)}, "sgemm");
using NativeFn = std::function<void(cl_command_queue queue, std::span<const cl_mem> mems)>;
ENCORE_API void enqueue_native(const Device& dev, NativeFn fn, std::vector<BufferArg> buffers, std::string name = "native");

ENCORE_API cl_context context(const Device& dev);
ENCORE_API cl_device_id device_id(const Device& dev);
ENCORE_API cl_command_queue queue(const Device& dev);
// The cl_mem behind a buffer (a sub-buffer for views), allocating it on first use.
ENCORE_API cl_mem native(const Buffer& b);

}  // namespace encore::opencl
