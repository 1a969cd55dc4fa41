#pragma once
// Shared by the binding's files: numpy dtype <-> encore::DType, and the per-file init functions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "encore/encore.hpp"

namespace py = pybind11;

namespace encore_py {

// The encore dtype of a numpy dtype (also a numpy scalar type such as np.float32, a dtype string
// such as "float32" or encore's own names "f32", "bool"): TypeError naming it when there is none.
encore::DType to_dtype(const py::handle& h);
std::optional<encore::DType> dtype_of_numpy(const py::dtype& d);
// The numpy dtype that holds `t` (bf16: uint16, its raw bits).
py::dtype to_numpy(encore::DType t);

// A numpy array's bytes as encore would read them: C-contiguous, native byte order, a dtype with
// an encore match (TypeError otherwise). Copies only when the array is not C-contiguous.
py::array contiguous(const py::handle& a);

// The C++ object a Python object of exactly bound class T holds, or null: an exact type check and
// pybind11's simple instance layout, without the registry lookups of cast<T> (the jit call's hot
// path). fast_cast also takes subclasses, the general way.
template <class T> T* exact_cast(py::handle h) {
  static PyTypeObject* const type = reinterpret_cast<PyTypeObject*>(py::type::of<T>().ptr());
  if (Py_TYPE(h.ptr()) != type) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(h.ptr());
  return inst->simple_layout ? static_cast<T*>(inst->simple_value_holder[0]) : &h.cast<T&>();
}
template <class T> T* fast_cast(py::handle h) {
  if (T* p = exact_cast<T>(h)) return p;
  return py::isinstance<T>(h) ? &h.cast<T&>() : nullptr;
}

// Sets the current Python error from the exception being handled, as pybind11's dispatcher does.
void set_python_error();

// Installs `fn(self, args_tuple) -> py::object` as the tp_call of bound class T (keyword
// arguments refused): a call without pybind11's dispatcher.
template <class T, class Fn> void fast_call(py::handle cls, Fn) {
  static_assert(std::is_empty_v<Fn>, "fast_call takes a capture-less function");
  auto* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
  t->tp_call = [](PyObject* self, PyObject* args, PyObject* kw) -> PyObject* {
    if (kw && PyDict_GET_SIZE(kw)) {
      PyErr_SetString(PyExc_TypeError, "takes positional arguments only");
      return nullptr;
    }
    try {
      T* obj = fast_cast<T>(self);
      if (!obj) throw py::type_error("not an instance of its class");
      return Fn{}(*obj, args).release().ptr();
    } catch (...) {
      set_python_error();
      return nullptr;
    }
  };
  PyType_Modified(t);
}

// An ExecutionUnit and the arrays bound as its host inputs (read by every later run).
struct PyUnit {
  encore::ExecutionUnit u;
  std::vector<py::object> host;  // per host slot: the array bound now
};

// The unit of a TinyJit (its last call's signature's), null when `h` is no TinyJit; JitError when it
// has captured none yet.
const encore::ExecutionUnit* jit_unit(py::handle h);

// The options TinyJit, Capture and load_unit take as keywords (TypeError naming an unknown one).
encore::JitOptions jit_options(const py::kwargs& kw);

void init_errors(py::module_& m);
void init_core(py::module_& m);
void init_launch(py::module_& m);
void init_jit(py::module_& m);
void init_opencl(py::module_& m);
void init_saved_unit(py::module_& m);  // save_unit, load_unit: only where the harness is built (else they raise)

}  // namespace encore_py
