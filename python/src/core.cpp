// Device, Buffer, Program, Kernel, Event, Variable: thin wrappers over the C++ handles (each Python
// object holds a copy of a shared handle). Blocking calls release the GIL.
#include <cstring>
#include <sstream>
#include <string>

#include "common.hpp"

namespace encore_py {

using encore::Buffer;
using encore::Device;
using encore::DType;
using namespace py::literals;

namespace {

py::dict info_dict(const encore::DeviceInfo& i) {
  return py::dict("id"_a = i.id, "parent"_a = i.parent, "name"_a = i.name, "vendor"_a = i.vendor, "version"_a = i.version,
                  "driver_version"_a = i.driver_version, "platform"_a = i.platform, "is_gpu"_a = i.is_gpu, "compute_units"_a = i.compute_units,
                  "global_mem_bytes"_a = i.global_mem_bytes, "max_alloc_bytes"_a = i.max_alloc_bytes, "base_align_bytes"_a = i.base_align_bytes,
                  "max_work_group_size"_a = i.max_work_group_size, "local_mem_bytes"_a = i.local_mem_bytes,
                  "command_buffer_version"_a = i.command_buffer_version);
}

// Whether host elements of type `t` may be copied into / out of `b` (the C++ rule: the same
// dtype, or the raw bits of f16 / bf16 / bool buffers). The message is C++'s.
void check_host_type(const Buffer& b, DType t) {
  const DType d = b.dtype();
  if (t == d || (t == DType::u16 && (d == DType::f16 || d == DType::bf16)) || (t == DType::u8 && d == DType::boolean)) return;
  throw encore::ArgumentError("Buffer copy: host element type " + std::string(encore::name(t)) + " does not match " + b.describe() +
                              " (convert with array.astype(" + py::str(to_numpy(d)).cast<std::string>() + "))");
}

void copyin(const Buffer& b, const py::handle& src, size_t offset) {
  py::array a = contiguous(src);
  const DType t = *dtype_of_numpy(a.dtype());
  check_host_type(b, t);
  const void* p = a.data();
  const size_t n = static_cast<size_t>(a.nbytes());
  if (offset > SIZE_MAX / encore::size(t)) throw encore::ArgumentError("Buffer copy: offset " + std::to_string(offset) + " overflows");
  py::gil_scoped_release nogil;  // copyin blocks until the data is taken
  if (offset) b.copyin_bytes(p, n, offset * encore::size(t));
  else b.copyin_bytes(p, n);
}

// The destination of a copyout: `out` when given (C-contiguous, writeable, a matching dtype), else
// a new array of the buffer's elements from `offset` on (`count` of them, or all the rest).
py::array copyout_target(const Buffer& b, const py::object& out, size_t offset, std::optional<size_t> count) {
  if (out.is_none()) {
    if (offset > b.count()) throw encore::ArgumentError("Buffer copy: offset " + std::to_string(offset) + " past the end of " + b.describe());
    return py::array(to_numpy(b.dtype()), std::vector<py::ssize_t>{static_cast<py::ssize_t>(count.value_or(b.count() - offset))});
  }
  if (!py::isinstance<py::array>(out)) throw py::type_error("copyout: out must be a numpy array");
  py::array a = py::reinterpret_borrow<py::array>(out);
  if (!(a.flags() & py::array::c_style) || !a.writeable()) throw py::type_error("copyout: out must be a C-contiguous, writeable numpy array");
  check_host_type(b, to_dtype(a.dtype()));
  return a;
}

}  // namespace

void init_core(py::module_& m) {
  py::enum_<DType>(m, "DType", "encore's element types; numpy dtypes convert to these (bf16: stored as uint16 bits)")
      .value("f16", DType::f16).value("f32", DType::f32).value("f64", DType::f64)
      .value("i8", DType::i8).value("i16", DType::i16).value("i32", DType::i32).value("i64", DType::i64)
      .value("u8", DType::u8).value("u16", DType::u16).value("u32", DType::u32).value("u64", DType::u64)
      .value("bool", DType::boolean).value("bf16", DType::bf16);
  m.def("dtype", [](const py::object& d) { return to_dtype(d); }, py::arg("dtype"),
        "The encore DType of a numpy dtype (or an encore name such as 'f32'); TypeError naming a dtype with no match.");
  m.def("numpy_dtype", [](const py::object& d) { return to_numpy(to_dtype(d)); }, py::arg("dtype"),
        "The numpy dtype that holds an encore dtype (bf16: uint16).");

  py::class_<encore::Event>(m, "Event", "Completion of enqueued work; an empty Event is complete.")
      .def(py::init<>())
      .def("wait", &encore::Event::wait, py::call_guard<py::gil_scoped_release>(), "Blocks (GIL released) until the work completed.")
      .def_property_readonly("done", &encore::Event::done)
      .def("__bool__", [](const encore::Event& e) { return static_cast<bool>(e); });

  py::class_<Device>(m, "Device", "One device with its queue, allocator and compiler: Device.open(), Device.open('NULL'), Device.open('CL:1').")
      .def_static("open", [](const std::string& name) { return Device::open(name); }, py::arg("name") = "",
                  py::call_guard<py::gil_scoped_release>())
      .def_static("list", [] {
        py::list l;
        for (const auto& i : Device::list()) l.append(info_dict(i));
        return l;
      })
      .def("split", &Device::split, py::arg("parts"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("info", [](const Device& d) { return info_dict(d.info()); })
      .def_property_readonly("id", [](const Device& d) { return d.id(); })
      .def_property_readonly("is_null", &Device::is_null)
      .def("supports", [](const Device& d, const py::object& t) { return d.supports(to_dtype(t)); }, py::arg("dtype"))
      .def("alloc", [](const Device& d, const py::array& a) {
        Buffer b = d.alloc(to_dtype(a.dtype()), static_cast<size_t>(a.size()));
        copyin(b, a, 0);
        return b;
      }, py::arg("array"), "A buffer holding a copy of a numpy array (its dtype, its element count).")
      .def("alloc", [](const Device& d, const py::object& t, size_t count) { return d.alloc(to_dtype(t), count); },
           py::arg("dtype"), py::arg("count"), "A buffer of `count` elements of `dtype` (a numpy dtype or an encore name).")
      .def("compile", &Device::compile, py::arg("source"), py::arg("options") = "", py::call_guard<py::gil_scoped_release>())
      .def("copy", &Device::copy, py::arg("dst"), py::arg("src"))
      .def("fill", [](const Device& d, const Buffer& b, const py::object& v) {
        // the value as one element of the buffer's dtype, through numpy's conversion
        py::array one(to_numpy(b.dtype()), std::vector<py::ssize_t>{1});
        one.attr("__setitem__")(0, v);
        d.fill_bytes(b, one.data(), encore::size(b.dtype()));
      }, py::arg("buffer"), py::arg("value"), "Sets every element of `buffer` to `value` (converted to its dtype).")
      .def("synchronize", &Device::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("marker", &Device::marker)
      .def("wait_for", [](const Device& d, const std::vector<encore::Event>& e) { d.wait_for(e); }, py::arg("events"))
      .def("allocator_stats", [](const Device& d) {
        const encore::AllocatorStats s = d.allocator_stats();
        return py::dict("bytes_in_use"_a = s.bytes_in_use, "peak_bytes"_a = s.peak_bytes, "cached_bytes"_a = s.cached_bytes,
                        "allocations"_a = s.allocations, "reuses"_a = s.reuses);
      })
      .def("free_cache", &Device::free_cache)
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return reinterpret_cast<uintptr_t>(d.impl()); })
      .def("__repr__", [](const Device& d) { return "<encore.Device " + d.id() + " '" + d.info().name + "'>"; });

  py::class_<Buffer>(m, "Buffer", "A handle to device memory: dev.alloc(np.float32, n); copyin(array); copyout() -> array.")
      .def_property_readonly("device", &Buffer::device)
      .def_property_readonly("dtype", [](const Buffer& b) { return to_numpy(b.dtype()); }, "The numpy dtype (bf16: uint16)")
      .def_property_readonly("encore_dtype", &Buffer::dtype)
      .def_property_readonly("count", &Buffer::count)
      .def_property_readonly("nbytes", &Buffer::nbytes)
      .def_property_readonly("offset", &Buffer::offset)
      .def_property_readonly("is_view", &Buffer::is_view)
      .def_property_readonly("base", &Buffer::base)
      .def_property_readonly("allocated", &Buffer::allocated)
      .def_property_readonly("version", &Buffer::version)
      .def_property("name", &Buffer::name, [](Buffer& b, std::string n) { b.set_name(std::move(n)); })
      .def("__len__", &Buffer::count)
      .def("view", &Buffer::view, py::arg("offset"), py::arg("count"))
      .def("view_as", [](const Buffer& b, const py::object& t, size_t byte_offset, size_t count) { return b.view_as(to_dtype(t), byte_offset, count); },
           py::arg("dtype"), py::arg("byte_offset"), py::arg("count"))
      .def("as_dtype", [](const Buffer& b, const py::object& t) { return b.as(to_dtype(t)); }, py::arg("dtype"),
           "All bytes as elements of another dtype (C++ Buffer::as): to pass them to a parameter of that type on purpose.")
      .def("copyin", &copyin, py::arg("array"), py::arg("offset") = 0,
           "Copies a numpy array of the buffer's dtype in, from element `offset` on (blocks until the data is taken).")
      .def("copyout", [](const Buffer& b, const py::object& out, size_t offset, std::optional<size_t> count) {
        py::array a = copyout_target(b, out, offset, count);
        void* p = a.mutable_data();
        const size_t n = static_cast<size_t>(a.nbytes());
        {
          py::gil_scoped_release nogil;  // waits for the device work that writes this buffer
          b.copyout_bytes(p, n, offset * encore::size(b.dtype()));
        }
        return a;
      }, py::arg("out") = py::none(), py::arg("offset") = 0, py::arg("count") = py::none(),
           "The buffer's elements (from `offset`, `count` of them) as a new numpy array, or into `out`.")
      .def("copyout_async", [](const Buffer& b, const py::array& out, size_t offset) {
        py::array a = copyout_target(b, out, offset, {});
        return b.copyout_async_bytes(a.mutable_data(), static_cast<size_t>(a.nbytes()), offset * encore::size(b.dtype()));
      }, py::arg("out"), py::arg("offset") = 0, py::keep_alive<0, 2>(),
           "Queues a read into `out` and returns its Event at once (`out` is kept alive by the Event).")
      .def("touch", &Buffer::touch)
      .def("overlaps", &Buffer::overlaps)
      .def("__eq__", [](const Buffer& a, const py::object& o) { return py::isinstance<Buffer>(o) && a == o.cast<const Buffer&>(); })
      .def("__hash__", [](const Buffer& b) { return reinterpret_cast<uintptr_t>(b.impl()); })
      .def("__repr__", [](const Buffer& b) { return "<encore.Buffer " + b.describe() + ">"; });

  py::class_<encore::KernelParam>(m, "KernelParam", "One kernel parameter as declared in the source.")
      .def_readonly("name", &encore::KernelParam::name)
      .def_readonly("type_name", &encore::KernelParam::type_name)
      .def_readonly("is_pointer", &encore::KernelParam::is_pointer)
      .def_readonly("const_data", &encore::KernelParam::const_data)
      .def_readonly("value_bytes", &encore::KernelParam::value_bytes)
      .def_property_readonly("scalar", [](const encore::KernelParam& p) { return p.scalar ? py::object(to_numpy(*p.scalar)) : py::object(py::none()); })
      .def_property_readonly("pointee", [](const encore::KernelParam& p) { return p.pointee ? py::object(to_numpy(*p.pointee)) : py::object(py::none()); })
      .def("__repr__", [](const encore::KernelParam& p) { return "<encore.KernelParam " + p.type_name + " " + p.name + ">"; });

  py::class_<encore::Program>(m, "Program", "OpenCL C compiled for one device: dev.compile(src); prog.kernel(name).")
      .def_property_readonly("device", &encore::Program::device)
      .def_property_readonly("source", &encore::Program::source)
      .def_property_readonly("options", &encore::Program::options)
      .def_property_readonly("kernel_names", &encore::Program::kernel_names)
      .def_property_readonly("from_disk_cache", &encore::Program::from_disk_cache)
      .def("kernel", &encore::Program::kernel, py::arg("name"))
      .def("binary", [](const encore::Program& p) {
        const auto b = p.binary();
        return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
      })
      .def("save_cache", &encore::Program::save_cache);

  py::class_<encore::Kernel>(m, "Kernel", "A kernel of a Program: launch it with dev.launch(k, global_, local, *args).")
      .def_property_readonly("name", &encore::Kernel::name)
      .def_property_readonly("params", &encore::Kernel::params)
      .def_property_readonly("program", &encore::Kernel::program)
      .def_property_readonly("device", &encore::Kernel::device)
      .def("work_group_info", [](const encore::Kernel& k) {
        const encore::WorkGroupInfo w = k.work_group_info();
        return py::dict("max_size"_a = w.max_size, "preferred_multiple"_a = w.preferred_multiple, "local_mem_bytes"_a = w.local_mem_bytes,
                        "private_mem_bytes"_a = w.private_mem_bytes,
                        "compile_size"_a = py::make_tuple(w.compile_size[0], w.compile_size[1], w.compile_size[2]));
      })
      .def("__eq__", [](const encore::Kernel& a, const encore::Kernel& b) { return a == b; })
      .def("__hash__", [](const encore::Kernel& k) { return reinterpret_cast<uintptr_t>(k.impl()); })
      .def("__repr__", [](const encore::Kernel& k) { return "<encore.Kernel " + k.name() + ">"; });

  m.def("set_log_sink", [](py::object fn) {
    if (fn.is_none()) return encore::set_log_sink({});
    // called from any thread: takes the GIL; the function object is released under the GIL too
    auto held = std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* o) {
      if (!Py_IsInitialized()) return;  // at exit: leak rather than touch a finalised interpreter
      py::gil_scoped_acquire gil;
      delete o;
    });
    encore::set_log_sink([held](encore::LogLevel l, std::string_view msg) {
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      static const char* names[] = {"error", "warning", "info", "debug"};
      try {
        (*held)(names[static_cast<int>(l)], py::str(msg.data(), msg.size()));
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("encore log sink");
      }
    });
  }, py::arg("sink"), "Sends encore's messages to sink(level: str, message: str) instead of stderr (None restores stderr).");
}

}  // namespace encore_py
