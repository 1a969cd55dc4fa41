#pragma once
// Move-only RAII handles over OpenCL objects, and the checked-call helper.
#include <CL/cl.h>

#include <string>
#include <utility>

#include "cl_queue.hpp"
#include "encore/error.hpp"

namespace encore::detail {
struct NativeMem;
bool exiting() noexcept;  // device.cpp: once true, no driver call may be made
}  // namespace encore::detail

namespace encore::cl {

// The core's opaque memory handle is a cl_mem on this backend.
inline cl_mem mem(detail::NativeMem* m) { return reinterpret_cast<cl_mem>(m); }
inline detail::NativeMem* native(cl_mem m) { return reinterpret_cast<detail::NativeMem*>(m); }

template <class T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  // During exit, after the exit drain, the object is left to the process's end: the driver may
  // already have destroyed its own state (a static encore object is destroyed after it).
  void reset() noexcept {
    if (h_ && !detail::exiting()) Release(h_);
    h_ = nullptr;
  }
  T get() const { return h_; }
  T release() { return std::exchange(h_, nullptr); }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using Context = Handle<cl_context, clReleaseContext>;
using Queue = Handle<cl_command_queue, clReleaseCommandQueue>;
using Mem = Handle<cl_mem, clReleaseMemObject>;
using ProgramH = Handle<cl_program, clReleaseProgram>;
using KernelH = Handle<cl_kernel, clReleaseKernel>;
using Event = Handle<cl_event, clReleaseEvent>;
using DeviceH = Handle<cl_device_id, clReleaseDevice>;  // sub-devices (root devices ignore release)

// Throws OpenCLError naming the call and the object when status is not CL_SUCCESS.
inline void check(cl_int status, const char* call, const std::string& object = {}) {
  if (status != CL_SUCCESS) throw OpenCLError(status, call, object);
}

}  // namespace encore::cl
