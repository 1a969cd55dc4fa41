#pragma once
// Shared by the binding's files: numpy dtype <-> encore::DType, and the per-file init functions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

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

void init_errors(py::module_& m);
void init_core(py::module_& m);
void init_launch(py::module_& m);
void init_jit(py::module_& m);
void init_opencl(py::module_& m);

}  // namespace encore_py
