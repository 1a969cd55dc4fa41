// Interop with other OpenCL code (pyopencl) through integer handles: encore/opencl.hpp's adopt and
// native. python/encore/opencl.py turns pyopencl objects into these integers and back.
#include <cstdint>

#include "common.hpp"
#include "encore/opencl.hpp"

namespace encore_py {

namespace {

template <class T> T handle(uintptr_t p, const char* what) {
  if (!p) throw encore::ArgumentError(std::string("encore.opencl: a null ") + what + " handle");
  return reinterpret_cast<T>(p);
}
uintptr_t to_int(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

void init_opencl(py::module_& m) {
  py::module_ cl = m.def_submodule("_opencl", "integer-handle interop (use encore.opencl)");
  cl.def("adopt_queue", [](uintptr_t q) { return encore::opencl::adopt(handle<cl_command_queue>(q, "cl_command_queue")); }, py::arg("queue"),
         "A Device over an in-order cl_command_queue (retained, with its context and device).");
  cl.def("adopt_buffer", [](const encore::Device& d, uintptr_t mem, const py::object& t, size_t count) {
    return encore::opencl::adopt(d, handle<cl_mem>(mem, "cl_mem"), to_dtype(t), count);
  }, py::arg("device"), py::arg("mem"), py::arg("dtype"), py::arg("count"), "A Buffer over a cl_mem of the device's context (retained, never freed by encore).");
  cl.def("adopt_event", [](const encore::Device& d, uintptr_t e) { return encore::opencl::adopt(d, handle<cl_event>(e, "cl_event")); },
         py::arg("device"), py::arg("event"));
  cl.def("native_event", [](const encore::Event& e) { return to_int(encore::opencl::native(e)); }, py::arg("event"));
  cl.def("context", [](const encore::Device& d) { return to_int(encore::opencl::context(d)); }, py::arg("device"));
  cl.def("device_id", [](const encore::Device& d) { return to_int(encore::opencl::device_id(d)); }, py::arg("device"));
  cl.def("queue", [](const encore::Device& d) { return to_int(encore::opencl::queue(d)); }, py::arg("device"));
  cl.def("native_buffer", [](const encore::Buffer& b) { return to_int(encore::opencl::native(b)); }, py::arg("buffer"));
}

}  // namespace encore_py
