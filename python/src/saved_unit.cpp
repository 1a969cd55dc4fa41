// Saved units from Python: encore.save_unit writes a captured unit as a workload file with its
// programs' binaries, encore.load_unit loads one that replays at its first call, with no compile
// where the binaries fit the device and no warm-up call (encore/workload.hpp, docs/engines-and-c-api.md).
// Built where the harness is (meson option `harness`, on by default; the wheel leaves it out): else
// both raise encore.Error saying so.
#include <filesystem>
#include <string>

#include <pybind11/stl/filesystem.h>

#include "common.hpp"
#if ENCORE_PY_WORKLOAD
#include "encore/workload.hpp"
#endif

namespace encore_py {

namespace {

PyObject* workload_cls = nullptr;

void add_workload_error(py::module_& m) {
  workload_cls = PyErr_NewExceptionWithDoc("encore.WorkloadError", "A workload or saved-unit file the format or the device refuses: the message names its JSON path.",
                                           m.attr("Error").ptr(), nullptr);
  m.attr("WorkloadError") = py::handle(workload_cls);
}

}  // namespace

#if ENCORE_PY_WORKLOAD

namespace {

// load_unit's keywords: how the unit replays (UnitOptions), and nothing a capture or a jit takes.
encore::UnitOptions unit_options(const py::kwargs& kw) {
  static const char* const allowed[] = {"prune", "plan", "max_in_flight", "min_items_in_flight", "concurrent"};
  for (auto [k, v] : kw) {
    const std::string n = py::str(k);
    bool ok = false;
    for (const char* a : allowed) ok = ok || n == a;
    if (!ok)
      throw py::type_error("load_unit: unknown option '" + n + "' (it takes how the unit replays: prune, plan, max_in_flight, "
                           "min_items_in_flight, concurrent)");
  }
  encore::UnitOptions o = jit_options(kw).unit;
  o.validate();
  return o;
}

// A loaded unit and the buffers the file named: what encore::workload::LoadedUnit holds.
struct PyLoaded {
  py::object unit;  // an encore.ExecutionUnit
  std::vector<std::string> names;
  std::vector<encore::Buffer> buffers;
  std::vector<std::string> from_source;
  encore::Buffer buffer(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return buffers[i];
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    throw encore::ArgumentError("LoadedUnit.buffer: no buffer named \"" + name + "\" in the file (it has " + known + ")");
  }
};

}  // namespace

void init_saved_unit(py::module_& m) {
  add_workload_error(m);
  m.attr("has_saved_units") = true;
  // registered after init_errors' translator, so tried before it
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const encore::WorkloadError& e) {
      PyErr_SetString(workload_cls, e.what());
    }
  });

  m.def(
      "save_unit",
      [](const py::object& unit, const std::filesystem::path& path, const std::string& name, bool binaries) {
        const encore::ExecutionUnit* u = jit_unit(unit);
        if (!u) {
          PyUnit* pu = fast_cast<PyUnit>(unit);
          if (!pu) throw py::type_error("save_unit: expected an encore.ExecutionUnit or an encore.TinyJit, got " + std::string(Py_TYPE(unit.ptr())->tp_name));
          u = &pu->u;
        }
        encore::workload::SaveOptions o;
        o.name = name;
        o.binaries = binaries;
        py::gil_scoped_release nogil;
        encore::workload::save_workload(*u, path, o);
      },
      py::arg("unit"), py::arg("path"), py::arg("name") = "", py::arg("binaries") = true,
      "Writes a captured unit (an ExecutionUnit, or a TinyJit's: its last call's signature's, not while another thread calls it) as a workload file (inputs, state and outputs with their bytes now) and, with binaries, each program's "
      "device binary beside it (PATH's stem.data/), so load_unit starts without compiling.");

  py::class_<PyLoaded>(m, "LoadedUnit", "A saved unit loaded by load_unit: .unit replays at its first call; .buffer(name) is a buffer the file named.")
      .def_readonly("unit", &PyLoaded::unit)
      .def_readonly("names", &PyLoaded::names)
      .def_readonly("buffers", &PyLoaded::buffers)
      .def_readonly("from_source", &PyLoaded::from_source)
      .def("buffer", &PyLoaded::buffer, py::arg("name"));

  m.def(
      "load_unit",
      [](const encore::Device& dev, const std::filesystem::path& path, const py::kwargs& kw) {
        const encore::UnitOptions opt = unit_options(kw);
        encore::workload::LoadedUnit l;
        {
          py::gil_scoped_release nogil;
          l = encore::workload::load_unit(dev, path, opt);
        }
        auto pu = std::make_unique<PyUnit>();
        pu->u = std::move(l.unit);
        pu->host.resize(pu->u.num_host_inputs());
        PyLoaded r;
        r.unit = py::cast(std::move(pu));
        r.names = std::move(l.names);
        r.buffers = std::move(l.buffers);
        r.from_source = std::move(l.from_source);
        return r;
      },
      py::arg("device"), py::arg("path"),
      "Loads a unit save_unit (or encore-bench) wrote: it replays at its first call, with no warm-up call and no compile where the "
      "saved binaries fit the device (else from source: .from_source names those programs). Keywords: how it replays (prune, plan, "
      "max_in_flight, min_items_in_flight, concurrent).");
}

#else

namespace {
struct NoLoadedUnit {};
}  // namespace

void init_saved_unit(py::module_& m) {
  add_workload_error(m);
  m.attr("has_saved_units") = false;
  py::class_<NoLoadedUnit>(m, "LoadedUnit", "What load_unit returns; this build has none (built with -Dharness=false).");
  auto unavailable = [](const py::args&, const py::kwargs&) {
    throw encore::Error("save_unit/load_unit: this build of encore has no workload support (built with -Dharness=false, as the wheel is); "
                        "build encore from source with the harness on");
  };
  m.def("save_unit", unavailable);
  m.def("load_unit", unavailable);
}

#endif

}  // namespace encore_py
