// numpy dtypes <-> encore dtypes: by kind and item size, native byte order only.
#include <array>
#include <string>

#include "common.hpp"

namespace encore_py {

using encore::DType;

std::optional<DType> dtype_of_numpy(const py::dtype& d) {
  const char kind = d.kind();
  const py::ssize_t n = d.itemsize();
  // a non-native byte order ('>f4' on x86) would be read as garbage: no match
  const char order = d.attr("byteorder").cast<std::string>()[0];
  constexpr char native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
  if (n > 1 && order != '=' && order != '|' && order != native) return std::nullopt;
  switch (kind) {
    case 'f': return n == 2 ? DType::f16 : n == 4 ? DType::f32 : n == 8 ? DType::f64 : std::optional<DType>{};
    case 'i': return n == 1 ? DType::i8 : n == 2 ? DType::i16 : n == 4 ? DType::i32 : n == 8 ? DType::i64 : std::optional<DType>{};
    case 'u': return n == 1 ? DType::u8 : n == 2 ? DType::u16 : n == 4 ? DType::u32 : n == 8 ? DType::u64 : std::optional<DType>{};
    case 'b': return n == 1 ? DType::boolean : std::optional<DType>{};
    default: return std::nullopt;
  }
}

DType to_dtype(const py::handle& h) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h))
    if (auto t = encore::parse_dtype(h.cast<std::string>())) return *t;
  py::dtype d;
  try {
    d = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
  } catch (py::error_already_set&) {
    throw py::type_error("not a dtype: " + py::repr(h).cast<std::string>() + " (give a numpy dtype such as np.float32, or an encore name such as 'f32')");
  }
  if (auto t = dtype_of_numpy(d)) return *t;
  throw py::type_error("numpy dtype " + py::str(d).cast<std::string>() + " (" + py::repr(d).cast<std::string>() +
                       ") has no encore dtype: encore has float16/32/64, int8-64, uint8-64 and bool, in native byte order");
}

py::dtype to_numpy(DType t) {
  // made once: the names are numpy's, bf16 travels as its raw 16 bits
  static const std::array<const char*, 13> names = {"float16", "float32", "float64", "int8",   "int16",  "int32", "int64",
                                                     "uint8",   "uint16",  "uint32",  "uint64", "bool",   "uint16"};
  return py::dtype(names.at(static_cast<size_t>(t)));
}

py::array contiguous(const py::handle& a) {
  py::array arr = py::array::ensure(a, py::array::c_style);
  if (!arr) {
    PyErr_Clear();
    throw py::type_error("expected a numpy array (or something numpy.asarray takes), got " + std::string(Py_TYPE(a.ptr())->tp_name));
  }
  if (!dtype_of_numpy(arr.dtype())) to_dtype(arr.dtype());  // throws the TypeError naming it
  return arr;
}

}  // namespace encore_py
