// encore's exceptions as Python classes of the same names and hierarchy, with the same messages:
// encore.Error (a RuntimeError) > ArgumentError, DeviceError > OpenCLError, CompileError, JitError.
#include <cstring>
#include <string>

#include "common.hpp"

namespace encore_py {

namespace {

// The classes, made once at import; owned by the module (these references live as long as it).
PyObject *error_cls, *argument_cls, *device_cls, *opencl_cls, *compile_cls, *jit_cls;

PyObject* make_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string full = std::string("encore.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), doc, base, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // steals nothing: add_object increfs
  return cls;
}

// Messages and build logs may hold bytes that are not UTF-8 (a compiler's log): replaced, never an error.
py::str text(const char* s) { return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s, static_cast<py::ssize_t>(std::strlen(s)), "replace")); }

// Raises an instance of `cls` with `what` as its message and `attrs` set on it.
template <class... KV> void raise(PyObject* cls, const char* what, KV&&... attrs) {
  py::object inst = py::reinterpret_steal<py::object>(PyObject_CallOneArg(cls, text(what).ptr()));
  if (!inst) return;  // the call failed: its own error is set
  (py::setattr(inst, attrs.first, attrs.second), ...);
  PyErr_SetObject(cls, inst.ptr());
}

}  // namespace

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (...) {
    // encore's errors and the rest: the translators pybind11 knows (ours first)
    if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators)) return;
    if (py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) return;
    PyErr_SetString(PyExc_SystemError, "encore: an exception no translator knows");
  }
}

void init_errors(py::module_& m) {
  error_cls = make_class(m, "Error", PyExc_RuntimeError, "Every error encore raises derives from encore.Error.");
  argument_cls = make_class(m, "ArgumentError", error_cls, "A bad argument: wrong kernel argument, out-of-range variable, misaligned view.");
  device_cls = make_class(m, "DeviceError", error_cls, "No such device, no OpenCL platform, or a device that cannot do what was asked.");
  opencl_cls = make_class(m, "OpenCLError", device_cls, "An OpenCL call failed: .status is the code, .status_name its name.");
  compile_cls = make_class(m, "CompileError", error_cls, "A program failed to build: .log holds the build log.");
  jit_cls = make_class(m, "JitError", error_cls, "A TinyJit / ExecutionUnit rule was broken (inputs unlike the capture, copyout during capture, ...).");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const encore::OpenCLError& e) {
      raise(opencl_cls, e.what(), std::pair("status", py::int_(e.status())), std::pair("status_name", py::str(e.status_name())));
    } catch (const encore::CompileError& e) {
      raise(compile_cls, e.what(), std::pair("log", text(e.log().c_str())));
    } catch (const encore::ArgumentError& e) {
      raise(argument_cls, e.what());
    } catch (const encore::DeviceError& e) {
      raise(device_cls, e.what());
    } catch (const encore::JitError& e) {
      raise(jit_cls, e.what());
    } catch (const encore::Error& e) {
      raise(error_cls, e.what());
    }
  });
}

}  // namespace encore_py
