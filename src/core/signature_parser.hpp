#pragma once
// Kernel parameter lists read from OpenCL C source, for both devices: the NULL device has no
// compiler, and OpenCL programs are built without -cl-kernel-arg-info (which makes PoCL's code
// slower), so the source is what says which parameter is a const pointer, a float4 or a struct.
// The reader refuses rather than guesses: a macro it cannot expand or a type it does not know in a
// signature makes the whole program "unreadable", and the OpenCL device then asks the driver
// through a separate metadata build (src/opencl/cl_program.cpp).
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "encore/program.hpp"

namespace encore::detail {

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  // __attribute__((reqd_work_group_size(x, y, z))) when written with literals, else zeros (the NULL
  // device's compile work-group size; OpenCL devices report their own)
  std::array<size_t, 3> reqd_work_group_size{};
};

struct SignatureRead {
  std::vector<KernelSignature> kernels;
  std::string unreadable;  // why the signatures could not be read without a compiler; empty when they were
  bool ok() const { return unreadable.empty(); }
};

// The parameter lists of the __kernel functions in `source`. `headers` are the texts of the files it
// includes (their typedefs and #defines name types), `options` its build options (-D). Object-like
// macros that stand for type words (`#define REAL float`, `-DREAL=float`) are expanded as the
// compiler would, so type names read as clGetKernelArgInfo reports them.
SignatureRead read_signatures(const std::string& source, std::span<const std::string> headers = {}, const std::string& options = {});
// read_signatures for a source without headers; CompileError when unreadable (tests).
std::vector<KernelSignature> parse_kernel_signatures(const std::string& source);

// Fills in what the type names imply once the parameter lists are known (from the reader, the
// driver or the disk cache): the pointee of every pointer parameter (KernelParam::pointee), and for
// by-value parameters the scalar type a typedef or #define names and the size of a vector or a
// struct the source defines (KernelParam::value_bytes). `texts` are the source and its headers.
// Returns a note for each pointee it could not resolve.
std::vector<std::string> resolve_pointees(std::vector<KernelSignature>& sigs, std::span<const std::string> texts, const std::string& options);

// The dtype of a scalar type name ("uint", "unsigned int", "float"); nullopt for anything else.
std::optional<DType> scalar_dtype_of(const std::string& type_name);

}  // namespace encore::detail
