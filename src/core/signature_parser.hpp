#pragma once
// Kernel parameter lists read from OpenCL C source, for both devices: the NULL device has no
// compiler, and OpenCL programs are built without -cl-kernel-arg-info (which makes PoCL's code
// slower), so the source is what says which parameter is a const pointer, a float4 or a struct.
// The reader reads the program after preprocessing (core/preprocessor.hpp) and refuses rather than
// guesses: a function-like macro, an #if it cannot decide or a type it does not know in a signature
// makes the whole program "unreadable", and the OpenCL device then asks the driver through a
// separate metadata build (src/opencl/cl_program.cpp). A reading that rests on an assumption (a
// name taken as undefined that the driver might define) is marked for the driver to confirm.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/preprocessor.hpp"
#include "encore/program.hpp"

namespace encore::detail {

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  // __attribute__((reqd_work_group_size(x, y, z))) when written with literals, else zeros (the NULL
  // device's compile work-group size; OpenCL devices report their own)
  std::array<size_t, 3> reqd_work_group_size{};
  // Read from the source on an assumption (why): the OpenCL device confirms the whole program's
  // parameter lists with a metadata build. Empty when the source decides everything itself.
  std::string confirm{};
  // Per parameter (empty, or one entry each): a by-value struct's or 3-vector's padding, the byte
  // ranges [begin, end) no member covers. Launches zero them in the argument's copy, so bytes a
  // kernel never reads (uninitialised padding of a host struct) cannot tell call 0 from call 1.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> padding{};
};

struct SignatureRead {
  std::vector<KernelSignature> kernels;
  std::string unreadable;  // why the signatures could not be read without a compiler; empty when they were
  // When unreadable only for type names an undecided #if may declare: the lists with those types
  // as bare names (unchecked), for the NULL device, which has no driver to ask.
  std::vector<KernelSignature> unchecked;
  bool ok() const { return unreadable.empty(); }
};

// The parameter lists of the __kernel functions in `source`, as the compiler sees them after
// preprocessing with `options` (-D, -U), so type names read as clGetKernelArgInfo reports them.
// `headers` are the texts of the files it includes and `includes` says which directive names which
// (Includes::edges); an #include the reader was not given makes the program unreadable.
SignatureRead read_signatures(const std::string& source, std::span<const std::string> headers = {}, const std::string& options = {},
                              const IncludeMap* includes = nullptr);
// read_signatures for a source without headers; CompileError when unreadable (tests).
std::vector<KernelSignature> parse_kernel_signatures(const std::string& source);

// Fills in what the type names imply once the parameter lists are known (from the reader, the
// driver or the disk cache): the pointee of every pointer parameter (KernelParam::pointee), and for
// by-value parameters the scalar type a typedef or #define names and the size of a vector or a
// struct the source defines (KernelParam::value_bytes). The program as for read_signatures; its
// typedefs and structs count only where the reader's own parameter lists agree with `sigs` (the
// driver's, or the cache's), else only built-in type names resolve. Returns a note for each pointee
// it could not resolve.
std::vector<std::string> resolve_pointees(std::vector<KernelSignature>& sigs, const std::string& source, std::span<const std::string> headers,
                                          const std::string& options, const IncludeMap* includes);

// The dtype of a scalar type name ("uint", "unsigned int", "float"); nullopt for anything else.
std::optional<DType> scalar_dtype_of(const std::string& type_name);

}  // namespace encore::detail
