// Kernel launches from Python: Variables and launch sizes, and arguments converted by the kernel's
// parameter types (a Python int to an integer parameter when it fits, to a float parameter as that
// float; a Python float to the parameter's float type; numpy scalars keep their own type).
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace encore_py {

using encore::Arg;
using encore::Buffer;
using encore::DType;
using encore::Size;
using encore::Variable;

namespace {

Size to_size(const py::handle& h) {
  if (py::isinstance<Size>(h)) return h.cast<Size>();
  if (py::isinstance<Variable>(h)) return Size(h.cast<const Variable&>());
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return Size(h.cast<int64_t>());
  throw py::type_error("a launch size is an int, an integer Variable or a Size expression of them, got " + std::string(Py_TYPE(h.ptr())->tp_name));
}

encore::Sizes to_sizes(const py::handle& h) {
  encore::Sizes s;
  if (h.is_none()) return s;
  if (!py::isinstance<py::tuple>(h) && !py::isinstance<py::list>(h)) return encore::Sizes(to_size(h));
  py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
  if (seq.size() > 3) throw encore::ArgumentError("launch sizes have 1 to 3 dimensions, got " + std::to_string(seq.size()));
  for (size_t i = 0; i < seq.size(); ++i) s.v[i] = to_size(seq[i]);
  s.n = static_cast<uint8_t>(seq.size());
  return s;
}

// A scalar of dtype `t` holding `v` (v's low bytes, as Arg stores them).
template <class T> Arg scalar(T v) { return Arg(v); }

// A Python int as an argument: int64 (or uint64 above INT64_MAX); C++ converts it to an integer
// parameter's type when it fits, with its own message when it does not.
Arg from_int(const py::handle& h, const encore::KernelParam* p) {
  if (p && p->scalar && encore::is_float(*p->scalar) && *p->scalar != DType::bf16) {
    const double d = h.cast<double>();
    return *p->scalar == DType::f32 ? scalar(static_cast<float>(d)) : scalar(d);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (!overflow) return scalar(static_cast<int64_t>(v));
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
    if (!PyErr_Occurred()) return scalar(static_cast<uint64_t>(u));
    PyErr_Clear();
  }
  throw encore::ArgumentError("kernel argument " + py::repr(h).cast<std::string>() + (p ? " for parameter '" + p->type_name + " " + p->name + "'" : std::string()) +
                              " does not fit 64 bits");
}

Arg from_float(double d, const encore::KernelParam* p) {
  if (p && p->scalar == DType::f32) return scalar(static_cast<float>(d));
  return scalar(d);  // an f64 parameter, or another type: C++ names the mismatch
}

// A numpy scalar (np.float32(1), np.int16(3)): its own dtype and bytes, converted as C++ would
// convert a host value of that type.
Arg from_numpy_scalar(const py::handle& h) {
  py::array a = py::array::ensure(h);
  const DType t = to_dtype(a.dtype());
  Arg r(0);
  r.dtype = t;
  r.bits = 0;
  std::memcpy(&r.bits, a.data(), encore::size(t));
  return r;
}

Arg to_arg(const py::handle& h, const encore::KernelParam* p) {
  PyObject* o = h.ptr();
  if (py::isinstance<Buffer>(h)) return Arg(h.cast<const Buffer&>());
  if (py::isinstance<encore::BufferArg>(h)) return Arg(h.cast<const encore::BufferArg&>());
  if (py::isinstance<Variable>(h)) return Arg(h.cast<const Variable&>());
  if (py::isinstance<Variable::As>(h)) return Arg(h.cast<const Variable::As&>());
  if (py::isinstance<encore::LocalMem>(h)) return Arg(h.cast<encore::LocalMem>());
  if (py::isinstance<encore::ByValue>(h)) return Arg(h.cast<encore::ByValue>());
  if (PyBool_Check(o)) return scalar(o == Py_True);
  if (PyLong_Check(o)) return from_int(h, p);
  if (PyFloat_Check(o)) return from_float(PyFloat_AS_DOUBLE(o), p);
  if (py::isinstance(h, py::module_::import("numpy").attr("generic"))) return from_numpy_scalar(h);
  if (py::isinstance<encore::BoundVar>(h))
    throw py::type_error("a bound variable (var.bind(v)) is a TinyJit argument; pass the Variable itself to launch");
  throw py::type_error("kernel argument of type " + std::string(Py_TYPE(o)->tp_name) +
                       (p ? " for parameter '" + p->type_name + " " + p->name + "'" : std::string()) +
                       ": pass a Buffer (or encore.in_/out/inout of one), an int, a float, a numpy scalar, a Variable, "
                       "encore.LocalMem(bytes) or encore.by_value(array)");
}

encore::BoundVar bind_value(const Variable& v, py::handle x) {
  PyObject* o = x.ptr();
  if (PyFloat_Check(o)) return v.bind(PyFloat_AS_DOUBLE(o));
  if (PyLong_Check(o)) return v.is_float() ? v.bind(x.cast<double>()) : v.bind(x.cast<int64_t>());
  if (py::isinstance(x, py::module_::import("numpy").attr("floating"))) return v.bind(x.cast<double>());
  if (py::isinstance(x, py::module_::import("numpy").attr("integer"))) return v.bind(x.cast<int64_t>());
  throw py::type_error("Variable '" + v.name() + "' binds an int or a float, got " + std::string(Py_TYPE(o)->tp_name));
}

// Variable.bind is called every step: a plain CPython method, without pybind11's dispatcher.
PyObject* bind_method(PyObject* self, PyObject* x) {
  try {
    const Variable* v = fast_cast<Variable>(self);
    if (!v) throw py::type_error("Variable.bind: not a Variable");
    return py::cast(bind_value(*v, x)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}
PyMethodDef bind_def{"bind", bind_method, METH_O,
                     "bind(value): checks bounds (ArgumentError outside), makes it this thread's value, returns the BoundVar for a TinyJit call."};

}  // namespace

void init_launch(py::module_& m) {
  py::class_<Size>(m, "Size", "A launch size: an int, an integer Variable, or + - * // of them (ceil_div, size_min, size_max).")
      .def(py::init([](const py::object& v) { return to_size(v); }))
      .def("eval", py::overload_cast<>(&Size::eval, py::const_))
      .def("__str__", py::overload_cast<>(&Size::str, py::const_))
      .def("__repr__", [](const Size& s) { return "<encore.Size " + s.str() + ">"; })
      .def_static("parse", &Size::parse, py::arg("text"), py::arg("variables"))
      .def("__eq__", [](const Size& a, const py::object& b) { return a == to_size(b); });
  // the operators of sizes and variables, in both orders, ints converting
  auto ops = [](auto& cls) {
    cls.def("__add__", [](const py::object& a, const py::object& b) { return to_size(a) + to_size(b); })
        .def("__radd__", [](const py::object& a, const py::object& b) { return to_size(b) + to_size(a); })
        .def("__sub__", [](const py::object& a, const py::object& b) { return to_size(a) - to_size(b); })
        .def("__rsub__", [](const py::object& a, const py::object& b) { return to_size(b) - to_size(a); })
        .def("__mul__", [](const py::object& a, const py::object& b) { return to_size(a) * to_size(b); })
        .def("__rmul__", [](const py::object& a, const py::object& b) { return to_size(b) * to_size(a); })
        .def("__floordiv__", [](const py::object& a, const py::object& b) { return to_size(a) / to_size(b); })
        .def("__rfloordiv__", [](const py::object& a, const py::object& b) { return to_size(b) / to_size(a); })
        .def("__neg__", [](const py::object& a) { return -to_size(a); });
  };
  m.def("ceil_div", [](const py::object& a, const py::object& b) { return encore::ceil_div(to_size(a), to_size(b)); });
  m.def("size_min", [](const py::object& a, const py::object& b) { return encore::min(to_size(a), to_size(b)); });
  m.def("size_max", [](const py::object& a, const py::object& b) { return encore::max(to_size(a), to_size(b)); });

  py::class_<encore::BoundVar>(m, "BoundVar", "A value for a Variable, as passed to a TinyJit call: var.bind(17).")
      .def_readonly("var", &encore::BoundVar::var)
      .def_property_readonly("value", [](const encore::BoundVar& b) { return b.var.is_float() ? py::object(py::float_(b.f)) : py::object(py::int_(b.i)); })
      .def("__repr__", [](const encore::BoundVar& b) {
        return "<encore.BoundVar " + b.var.name() + "=" + (b.var.is_float() ? std::to_string(b.f) : std::to_string(b.i)) + ">";
      });

  py::class_<Variable::As>(m, "VariableAs", "A Variable passed as a fixed integer dtype: var.as_(np.int32).");
  py::class_<Variable> var(m, "Variable", "A named per-call value: Variable('pos', 1, 4096) (an integer with bounds), Variable.f32('lr').");
  var.def(py::init<std::string, int64_t, int64_t>(), py::arg("name"), py::arg("min"), py::arg("max"))
      .def_static("f32", &Variable::f32, py::arg("name"), py::arg("min") = -1e300, py::arg("max") = 1e300)
      .def_static("f64", &Variable::f64, py::arg("name"), py::arg("min") = -1e300, py::arg("max") = 1e300)
      .def_property_readonly("name", &Variable::name)
      .def_property_readonly("is_float", &Variable::is_float)
      .def_property_readonly("type", [](const Variable& v) { return v.type() == encore::VarType::i64 ? "i64" : v.type() == encore::VarType::f32 ? "f32" : "f64"; })
      .def_property_readonly("min", [](const Variable& v) { return v.is_float() ? py::object(py::float_(v.fmin())) : py::object(py::int_(v.min())); })
      .def_property_readonly("max", [](const Variable& v) { return v.is_float() ? py::object(py::float_(v.fmax())) : py::object(py::int_(v.max())); })
      .def_property_readonly("value", [](const Variable& v) { return v.is_float() ? py::object(py::float_(v.fvalue())) : py::object(py::int_(v.value())); })
      .def("as_", [](const Variable& v, const py::object& t) { return v.as(to_dtype(t)); }, py::arg("dtype"))
      .def("__eq__", [](const Variable& a, const py::object& b) { return py::isinstance<Variable>(b) && a == b.cast<const Variable&>(); })
      .def("__hash__", [](const Variable& v) { return reinterpret_cast<uintptr_t>(v.state()); })
      .def("__repr__", [](const Variable& v) { return "<encore.Variable " + v.name() + ">"; });
  ops(var);
  py::object bind = py::reinterpret_steal<py::object>(PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(var.ptr()), &bind_def));
  if (!bind || PyObject_SetAttrString(var.ptr(), "bind", bind.ptr()) != 0) throw py::error_already_set();
  py::class_<Size> size_cls = py::reinterpret_borrow<py::class_<Size>>(m.attr("Size"));
  ops(size_cls);

  py::class_<encore::BufferArg>(m, "BufferArg", "A buffer argument with its access stated: encore.in_(x), encore.out(y), encore.inout(z).")
      .def_readonly("buffer", &encore::BufferArg::buf);
  m.def("in_", &encore::in, py::arg("buffer"), "The buffer as an input of a launch (read only).");
  m.def("out", &encore::out, py::arg("buffer"), "The buffer as an output of a launch (written only).");
  m.def("inout", &encore::inout, py::arg("buffer"), "The buffer as read and written by a launch.");
  py::class_<encore::LocalMem>(m, "LocalMem", "__local memory of `bytes` for a __local T* parameter.")
      .def(py::init([](size_t b) { return encore::LocalMem{b}; }), py::arg("bytes"))
      .def_readonly("bytes", &encore::LocalMem::bytes);
  py::class_<encore::ByValue>(m, "ByValue", "The bytes of a by-value vector or struct argument: encore.by_value(np.array([1, 2, 3, 4], np.float32)).");
  m.def("by_value", [](const py::object& v) {
    if (py::isinstance<py::bytes>(v)) {
      const std::string s = v.cast<std::string>();
      return encore::bytes(s.data(), s.size());
    }
    py::array a = contiguous(v);
    return encore::bytes(a.data(), static_cast<size_t>(a.nbytes()));
  }, py::arg("value"), "A by-value argument from a numpy array (or structured scalar) or bytes.");

  py::class_<encore::Device> dev = py::reinterpret_borrow<py::class_<encore::Device>>(m.attr("Device"));
  dev.def("launch", [](const encore::Device& d, const encore::Kernel& k, const py::object& global, const py::object& local, const py::args& args,
                       const std::string& name) {
    const auto& params = k.params();
    std::vector<Arg> v;
    v.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) v.push_back(to_arg(args[i], i < params.size() ? &params[i] : nullptr));
    d.launch_args(k, to_sizes(global), to_sizes(local), std::move(v), name);
  }, py::arg("kernel"), py::arg("global_"), py::arg("local"), py::arg("name") = "",
     "Launches `kernel` over `global_` work items (an int, a Size, or a tuple of up to 3) with work groups of `local` (None: encore picks).");
}

}  // namespace encore_py
