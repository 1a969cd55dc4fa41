// The extension module encore._encore; python/encore/__init__.py re-exports it as `encore`.
#include <string>

#include "common.hpp"

PYBIND11_MODULE(_encore, m) {
  m.doc() = "encore: capture and replay of OpenCL work (the C++ library's Python binding)";
#if PYBIND11_VERSION_HEX < 0x020C0000
  // pybind11 before 2.12 reads numpy 1's dtype layout: under numpy 2 every item size would be wrong
  if (py::module_::import("numpy").attr("__version__").cast<std::string>()[0] >= '2')
    throw py::import_error("encore was built with pybind11 " PYBIND11_TOSTRING(PYBIND11_VERSION_MAJOR) "." PYBIND11_TOSTRING(
        PYBIND11_VERSION_MINOR) ", which does not support numpy 2: rebuild it with pybind11 >= 2.12, or use numpy 1");
#endif
  encore_py::init_errors(m);
  encore_py::init_core(m);
  encore_py::init_launch(m);
  encore_py::init_jit(m);
  encore_py::init_opencl(m);
  encore_py::init_saved_unit(m);
}
