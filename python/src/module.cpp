// The extension module encore._encore; python/encore/__init__.py re-exports it as `encore`.
#include "common.hpp"

PYBIND11_MODULE(_encore, m) {
  m.doc() = "encore: capture and replay of OpenCL work (the C++ library's Python binding)";
  encore_py::init_errors(m);
  encore_py::init_core(m);
  encore_py::init_launch(m);
  encore_py::init_jit(m);
  encore_py::init_opencl(m);
}
