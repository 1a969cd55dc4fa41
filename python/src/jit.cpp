// TinyJit over a Python function, Capture as a context manager, ExecutionUnit.
//
// A Python call's arguments are sorted, with the GIL held, into what C++'s TinyJit flattens
// (buffers, bound variables, host spans of numpy arrays, scalars, keys) plus one key that encodes
// each position's kind, so f(buf, arr) and f(arr, buf) never share a unit. The jit call itself
// runs with the GIL released: a replay never touches Python; an eager run (warm-up, capture,
// verify, ENCORE_JIT=0) takes the GIL back to call the function. Releasing it first is also what
// lets a thread wait for the jit's lock while another thread's step runs Python.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace encore_py {

using encore::Buffer;
using namespace py::literals;

// One positional argument, classified: a buffer, a bound variable, a host input, a scalar or a key.
struct Entry {
  enum Kind : uint8_t { is_buffer = 1, is_var, is_host, is_scalar, is_key } kind;
  const Buffer* buf = nullptr;
  const encore::BoundVar* var = nullptr;
  encore::detail::HostSpan span{};
  encore::detail::ScalarSeen seen{};
  int64_t key = 0;
};

// A call's arguments for C++'s TinyJit (flatten below) and for the Python step.
struct CallPack {
  std::vector<Entry> entries;
  int64_t kinds = 0;          // each position's kind: the last key of the signature
  py::object step_args;       // what the step is called with (arrays made C-contiguous): a tuple
};

}  // namespace encore_py

namespace encore::detail {
// TinyJit flattens its arguments with detail::flatten: a CallPack flattens into what it holds.
template <> void flatten<encore_py::CallPack>(CallArgs& out, const encore_py::CallPack& p) {
  for (const encore_py::Entry& e : p.entries) {
    switch (e.kind) {
      case encore_py::Entry::is_buffer: out.buffers.push_back(*e.buf); break;
      case encore_py::Entry::is_var: out.vars.push_back(*e.var); break;
      case encore_py::Entry::is_host: out.hosts.push_back(e.span); break;
      case encore_py::Entry::is_scalar: out.scalars.push_back(e.seen); break;
      case encore_py::Entry::is_key: out.keys.push_back(e.key); break;
    }
  }
  out.keys.push_back(p.kinds);
}
}  // namespace encore::detail

namespace encore_py {

// (declared in common.hpp: Capture, TinyJit and load_unit take these keywords)
encore::JitOptions jit_options(const py::kwargs& kw) {
  encore::JitOptions o = encore::JitOptions::from_env();
  for (auto [k, v] : kw) {
    const std::string n = py::str(k);
    if (n == "enabled") o.enabled = v.cast<bool>();
    else if (n == "prune") o.unit.prune = v.cast<bool>();
    else if (n == "plan") o.unit.plan = v.cast<bool>();
    else if (n == "max_in_flight") o.unit.max_in_flight = v.cast<uint32_t>();
    else if (n == "min_items_in_flight") o.unit.min_items_in_flight = v.cast<uint32_t>();
    else if (n == "concurrent") o.unit.concurrent = v.cast<bool>();
    else if (n == "allow_copyout") o.capture.allow_copyout = v.cast<bool>();
    else if (n == "check_closure") o.capture.check_closure = v.cast<bool>();
    else if (n == "check_access") o.capture.check_access = v.cast<bool>();
    else if (n == "fresh_outputs") o.fresh_outputs = v.cast<bool>();
    else if (n == "verify") o.verify = v.cast<int>();
    else if (n == "max_units") o.max_units = v.cast<uint32_t>();
    else
      throw py::type_error("TinyJit: unknown option '" + n + "' (enabled, prune, plan, max_in_flight, min_items_in_flight, concurrent, allow_copyout, "
                           "check_closure, check_access, fresh_outputs, verify, max_units)");
  }
  return o;
}

namespace {

class PyJit;

// The C++ callable: calls the Python function with the call's arguments (under the GIL) and
// returns the Buffers it returned.
struct StepFn {
  PyJit* owner;
  std::vector<Buffer> operator()(const CallPack& p) const;
};

// What the step returns, which replay must rebuild: fixed by the first call that ran it.
enum class Shape : int8_t { unknown, none, single, tuple, list };

const char* shape_name(Shape s) {
  switch (s) {
    case Shape::none: return "None";
    case Shape::single: return "a Buffer";
    case Shape::tuple: return "a tuple of Buffers";
    case Shape::list: return "a list of Buffers";
    default: return "nothing yet";
  }
}

py::dict stats_dict(const encore::UnitStats& s) {
  return py::dict("items"_a = s.items, "items_pruned"_a = s.items_pruned, "items_replayed"_a = s.items_replayed, "inputs"_a = s.inputs,
                  "variables"_a = s.variables, "temp_bytes_naive"_a = s.temp_bytes_naive, "temp_bytes_planned"_a = s.temp_bytes_planned,
                  "temp_bytes_lower_bound"_a = s.temp_bytes_lower_bound, "planned_temps"_a = s.planned_temps, "chains"_a = s.chains, "longest_chain"_a = s.longest_chain);
}

class PyJit {
 public:
  PyJit(py::object fn, const py::kwargs& kw) : fn(std::move(fn)), jit(StepFn{this}, jit_options(kw)) {}

  py::object call(py::handle args) {
    Depth d;
    CallPack& p = d.pack();
    pack(p, args);
    std::vector<Buffer> out;
    {
      py::gil_scoped_release nogil;
      out = jit(p);
    }
    return rebuild(out);
  }

  // The jit's questions about a call with these arguments (they take its lock: without the GIL)
  template <class Fn> bool ask(py::handle args, Fn fn) {
    Depth d;
    CallPack& p = d.pack();
    pack(p, args);
    py::gil_scoped_release nogil;
    return fn(p);
  }
  bool next_call_replays(py::handle args) {
    return ask(args, [&](const CallPack& p) { return jit.next_call_replays(p); });
  }
  bool drop(py::handle args) {
    return ask(args, [&](const CallPack& p) { return jit.drop(p); });
  }

  py::object fn;
  encore::TinyJit<StepFn> jit;
  std::atomic<Shape> shape{Shape::unknown};

 private:
  // Calls nest (a jit called inside another's step) and run on many threads: one pack per depth
  // per thread, reused, so packing allocates nothing once grown.
  struct Depth {
    static thread_local std::vector<std::unique_ptr<CallPack>> packs;
    static thread_local size_t depth;
    Depth() {
      if (packs.size() <= depth) packs.push_back(std::make_unique<CallPack>());
      ++depth;
    }
    // (the step's arguments are let go here, under the GIL: a thread_local must hold no Python
    // object, since it is destroyed after the interpreter at exit)
    ~Depth() { packs[--depth]->step_args = py::object(); }
    CallPack& pack() { return *packs[depth - 1]; }
  };

  static void pack(CallPack& p, py::handle args) {
    p.entries.clear();
    p.kinds = 0;
    py::object step = py::reinterpret_borrow<py::object>(args);
    bool copied = false;
    const size_t n = static_cast<size_t>(PyTuple_GET_SIZE(args.ptr()));
    for (size_t i = 0; i < n; ++i) {
      PyObject* o = PyTuple_GET_ITEM(args.ptr(), i);
      py::handle h(o);
      Entry e{};
      uint64_t kind;
      const Buffer* b = exact_cast<Buffer>(h);
      const encore::BoundVar* v = b ? nullptr : exact_cast<encore::BoundVar>(h);
      if (!b && !v) {  // subclasses: the general way
        b = fast_cast<Buffer>(h);
        v = b ? nullptr : fast_cast<encore::BoundVar>(h);
      }
      if (b) {
        e.kind = Entry::is_buffer;
        e.buf = b;
        kind = 1;
      } else if (v) {
        e.kind = Entry::is_var;
        e.var = v;
        kind = 2;
      } else if (py::isinstance<encore::Key>(h)) {
        e.kind = Entry::is_key;
        e.key = h.cast<encore::Key>().value;
        kind = 3;
      } else if (py::isinstance<py::array>(h)) {
        py::array a = contiguous(h);
        e.kind = Entry::is_host;
        e.span = {a.data(), static_cast<size_t>(a.size()), static_cast<uint8_t>(a.itemsize())};
        if (!a.is(h)) {
          // the step gets the contiguous copy, so its copyin reads inside the host span
          if (!copied) {
            step = py::tuple(n);  // a new tuple (a full slice would be `args` itself)
            for (size_t j = 0; j < n; ++j) PyTuple_SET_ITEM(step.ptr(), j, py::handle(PyTuple_GET_ITEM(args.ptr(), j)).inc_ref().ptr());
          }
          copied = true;
          PyObject* old = PyTuple_GET_ITEM(step.ptr(), i);
          PyTuple_SET_ITEM(step.ptr(), i, a.release().ptr());
          Py_DECREF(old);
        }
        kind = 4;
      } else if (PyBool_Check(o)) {
        e.kind = Entry::is_scalar;
        e.seen = {static_cast<uint64_t>(o == Py_True), 1, 'u'};
        kind = 5;
      } else if (PyLong_Check(o)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) throw py::type_error("TinyJit argument " + std::to_string(i) + ": an int that does not fit int64 (" + py::repr(h).cast<std::string>() + ")");
        e.kind = Entry::is_scalar;
        e.seen = {static_cast<uint64_t>(v), 8, 'i'};
        kind = 6;
      } else if (PyFloat_Check(o)) {
        const double v = PyFloat_AS_DOUBLE(o);
        e.kind = Entry::is_scalar;
        std::memcpy(&e.seen.bits, &v, 8);
        e.seen.size = 8;
        e.seen.kind = 'f';
        kind = 7;
      } else {
        throw py::type_error("TinyJit argument " + std::to_string(i) + " is a " + std::string(Py_TYPE(o)->tp_name) +
                             ": a jit step takes Buffers, numpy arrays (host inputs), bound Variables (var.bind(v)), encore.key(v), "
                             "and int/float/bool constants; capture anything else in the closure");
      }
      p.entries.push_back(e);
      p.kinds = p.kinds * 8 + static_cast<int64_t>(kind);  // wraps harmlessly past 21 arguments
    }
    p.step_args = std::move(step);
  }

  py::object rebuild(std::vector<Buffer>& out) const {
    switch (shape.load()) {
      case Shape::single: return py::cast(std::move(out[0]));
      case Shape::tuple: {
        py::tuple t(out.size());
        for (size_t i = 0; i < out.size(); ++i) t[i] = py::cast(std::move(out[i]));
        return t;
      }
      case Shape::list: {
        py::list l(out.size());
        for (size_t i = 0; i < out.size(); ++i) l[i] = py::cast(std::move(out[i]));
        return l;
      }
      default: return py::none();
    }
  }
};

thread_local std::vector<std::unique_ptr<CallPack>> PyJit::Depth::packs;
thread_local size_t PyJit::Depth::depth = 0;

std::vector<Buffer> StepFn::operator()(const CallPack& p) const {
  py::gil_scoped_acquire gil;
  py::object r = py::reinterpret_steal<py::object>(PyObject_Call(owner->fn.ptr(), p.step_args.ptr(), nullptr));
  if (!r) throw py::error_already_set();
  std::vector<Buffer> out;
  Shape s;
  auto take = [&](py::handle h, size_t k) {
    if (!fast_cast<Buffer>(h))
      throw py::type_error("a jit step returns None, a Buffer, or a tuple or list of Buffers; output " + std::to_string(k) + " is a " +
                           std::string(Py_TYPE(h.ptr())->tp_name));
    out.push_back(*fast_cast<Buffer>(h));
  };
  if (r.is_none()) {
    s = Shape::none;
  } else if (fast_cast<Buffer>(r)) {
    s = Shape::single;
    take(r, 0);
  } else if (py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r)) {
    s = py::isinstance<py::tuple>(r) ? Shape::tuple : Shape::list;
    size_t k = 0;
    for (py::handle h : r) take(h, k++);
  } else {
    throw py::type_error("a jit step returns None, a Buffer, or a tuple or list of Buffers; got a " + std::string(Py_TYPE(r.ptr())->tp_name));
  }
  Shape expected = Shape::unknown;
  if (!owner->shape.compare_exchange_strong(expected, s) && expected != s)
    throw py::type_error(std::string("a jit step returns the same kind of result every call: it returned ") + shape_name(s) +
                         " where an earlier call returned " + shape_name(expected));
  return out;
}

// A Capture scope as a context manager; the unit is `.unit` after the block (or end()).
class PyCapture {
 public:
  PyCapture(const py::kwargs& kw) {
    const encore::JitOptions o = jit_options(kw);
    unit_opt_ = o.unit;
    cap_opt_ = o.capture;
  }
  PyCapture& enter() {
    if (cap_) throw encore::JitError("Capture: already recording (a Capture is entered once)");
    cap_ = std::make_unique<encore::Capture>(unit_opt_, cap_opt_);
    thread_ = std::this_thread::get_id();
    return *this;
  }
  encore::Capture& cap() {
    if (!cap_) throw encore::JitError("Capture: not recording (use it as `with encore.Capture() as cap:`)");
    if (thread_ != std::this_thread::get_id()) throw encore::JitError("Capture: used from another thread than the one that entered it");
    return *cap_;
  }
  size_t add_host_input(const py::object& a) {
    py::array arr = contiguous(a);
    if (!arr.is(a))
      throw py::type_error("Capture.add_host_input: the array must be C-contiguous (its bytes are what a copyin inside the capture reads)");
    keep_.push_back(arr);
    return cap().add_host_input(arr.data(), static_cast<size_t>(arr.nbytes()));
  }
  void exit(const py::object& exc_type) {
    if (!exc_type.is_none()) {
      cap_.reset();  // abandons the recording
      keep_.clear();
      return;
    }
    if (cap_ && !unit_) end();
  }
  py::object end();
  std::unique_ptr<encore::Capture> cap_;
  std::vector<py::object> keep_;  // host inputs: alive until end() (the unit keeps copies)
  py::object unit_;

 private:
  encore::UnitOptions unit_opt_;
  encore::CaptureOptions cap_opt_;
  std::thread::id thread_;
};

py::object PyCapture::end() {
  encore::Capture& c = cap();
  auto pu = std::make_unique<PyUnit>();
  pu->u = c.end();
  pu->host.resize(pu->u.num_host_inputs());
  cap_.reset();
  keep_.clear();
  unit_ = py::cast(std::move(pu));
  return unit_;
}

}  // namespace

const encore::ExecutionUnit* jit_unit(py::handle h) {
  PyJit* j = fast_cast<PyJit>(h);
  if (!j) return nullptr;
  if (j->jit.calls() < 2)
    throw encore::JitError("TinyJit: no captured unit yet (the last call's signature has made " + std::to_string(j->jit.calls()) +
                           " calls; its call 2 is the first replay)");
  return &j->jit.unit();
}

void init_jit(py::module_& m) {
  py::class_<encore::Key>(m, "Key", "A host value that picks which work a jit step does: part of the call's signature (one unit per value).")
      .def_readonly("value", &encore::Key::value)
      .def("__repr__", [](const encore::Key& k) { return "<encore.Key " + std::to_string(k.value) + ">"; });
  m.def("key", [](int64_t v) { return encore::Key{v}; }, py::arg("value"));

  py::class_<PyJit>(m, "TinyJit", py::dynamic_attr(),
                    "Wraps a step function: call 0 runs it eagerly (warm-up), call 1 records it, later calls replay the recording.")
      .def(py::init<py::object, const py::kwargs&>(), py::arg("fn"))
      .def("next_call_replays", [](PyJit& j, const py::args& a) { return j.next_call_replays(a); })
      .def("drop", [](PyJit& j, const py::args& a) { return j.drop(a); })
      .def("reset", [](PyJit& j) { j.jit.reset(); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("calls", [](const PyJit& j) { return j.jit.calls(); })
      .def_property_readonly("fn", [](const PyJit& j) { return j.fn; })
      .def_property_readonly("stats", [](const PyJit& j) { return stats_dict(j.jit.unit().stats()); },
                             "The unit of the last call's signature: items, pruned, planned bytes (zeros before its call 2).")
      .def("units", [](const PyJit& j) {
        py::list l;
        for (const auto& e : j.jit.units()) {
          py::dict d;
          d["signature"] = e.signature;
          d["calls"] = e.calls;
          d["stats"] = stats_dict(e.unit->stats());
          l.append(d);
        }
        return l;
      });

  // the call itself bypasses pybind11's dispatcher (its argument vectors cost more than the replay):
  // the type's own tp_call, which translates exceptions as pybind11 does
  fast_call<PyJit>(m.attr("TinyJit"), [](PyJit& j, PyObject* args) { return j.call(args); });

  py::class_<PyUnit>(m, "ExecutionUnit", "A captured step, bound and ready to replay: unit.bind_input(0, x).bind_var(0, 17)(); unit.run() -> Event.")
      .def("bind_input", [](py::object self, size_t slot, const Buffer& b) { self.cast<PyUnit&>().u.bind_input(slot, b); return self; })
      .def("bind_var", [](py::object self, size_t slot, const py::object& v) {
        PyUnit& pu = self.cast<PyUnit&>();
        if (PyFloat_Check(v.ptr())) pu.u.bind_var_f(slot, v.cast<double>());
        else pu.u.bind_var(slot, v.cast<int64_t>());
        return self;
      })
      .def("bind", [](py::object self, const encore::BoundVar& v) { self.cast<PyUnit&>().u.bind(v); return self; })
      .def("bind_host_input", [](py::object self, size_t slot, const py::object& a) {
        PyUnit& pu = self.cast<PyUnit&>();
        py::array arr = contiguous(a);
        pu.u.bind_host_input(slot, arr.data(), static_cast<size_t>(arr.nbytes()));
        pu.host.at(slot) = arr;  // every later run reads these bytes: keep them alive
        return self;
      })
      .def("update", [](py::object self, const py::dict& buffers, const std::vector<encore::BoundVar>& vars) {
        std::map<Buffer, Buffer> map;
        for (auto [k, v] : buffers) map.emplace(k.cast<Buffer>(), v.cast<Buffer>());
        self.cast<PyUnit&>().u.update(map, vars);
        return self;
      }, py::arg("buffers"), py::arg("variables") = std::vector<encore::BoundVar>{})
      .def("run", [](PyUnit& pu, const std::vector<encore::Event>& wait_for) { return pu.u.run(wait_for); }, py::arg("wait_for") = std::vector<encore::Event>{},
           py::call_guard<py::gil_scoped_release>())
      .def("run_and_wait", [](PyUnit& pu) { return pu.u.run_and_wait(); }, py::call_guard<py::gil_scoped_release>())
      .def("__add__", [](const PyUnit& a, const PyUnit& b) {
        auto r = std::make_unique<PyUnit>();
        r->u = a.u + b.u;
        r->host.resize(r->u.num_host_inputs());
        return r;
      })
      .def("free_intermediates", [](PyUnit& pu) { pu.u.free_intermediates(); })
      .def_property_readonly("stats", [](const PyUnit& pu) { return stats_dict(pu.u.stats()); })
      .def_property_readonly("items", [](const PyUnit& pu) {
        std::vector<std::string> r;
        for (const auto& it : pu.u.items()) r.push_back(it.describe());
        return r;
      })
      .def_property_readonly("one_time", [](const PyUnit& pu) { return pu.u.one_time(); })
      .def_property_readonly("num_inputs", [](const PyUnit& pu) { return pu.u.num_inputs(); })
      .def_property_readonly("num_variables", [](const PyUnit& pu) { return pu.u.num_variables(); })
      .def_property_readonly("num_host_inputs", [](const PyUnit& pu) { return pu.u.num_host_inputs(); })
      .def("captured_input", [](const PyUnit& pu, size_t s) { return pu.u.captured_input(s); })
      .def("input", [](const PyUnit& pu, size_t s) { return pu.u.input(s); })
      .def("variable", [](const PyUnit& pu, size_t s) { return pu.u.variable(s); })
      .def("variable_slot", [](const PyUnit& pu, const encore::Variable& v) { return pu.u.variable_slot(v); })
      .def_property_readonly("outputs", [](const PyUnit& pu) { return pu.u.outputs(); })
      .def_property_readonly("devices", [](const PyUnit& pu) { return std::vector<encore::Device>(pu.u.devices().begin(), pu.u.devices().end()); });

  fast_call<PyUnit>(m.attr("ExecutionUnit"), [](PyUnit& pu, PyObject* args) {
    if (PyTuple_GET_SIZE(args)) throw py::type_error("ExecutionUnit() takes no arguments (bind inputs and variables first)");
    {
      py::gil_scoped_release nogil;
      pu.u();
    }
    return py::none();
  });

  py::class_<PyCapture>(m, "Capture", "Records this thread's launches, copies and copyins: `with encore.Capture() as cap: ...`; then cap.unit.")
      .def(py::init<const py::kwargs&>())
      .def("__enter__", &PyCapture::enter, py::return_value_policy::reference)
      .def("__exit__", [](PyCapture& c, const py::object& t, const py::object&, const py::object&) { c.exit(t); return false; })
      .def("add_input", [](PyCapture& c, const Buffer& b) { return c.cap().add_input(b); }, py::arg("buffer"))
      .def("add_host_input", &PyCapture::add_host_input, py::arg("array"))
      .def("add_output", [](PyCapture& c, const Buffer& b) { c.cap().add_output(b); }, py::arg("buffer"))
      .def_property_readonly("items_recorded", [](PyCapture& c) { return c.cap().items_recorded(); })
      .def("end", &PyCapture::end)
      .def_property_readonly("unit", [](const PyCapture& c) {
        if (c.unit_.is_none() || !c.unit_) throw encore::JitError("Capture: no unit yet (it is made when the `with` block ends, or by end())");
        return c.unit_;
      });
}

}  // namespace encore_py
