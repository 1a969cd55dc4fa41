#pragma once
// OpenCL C compiled for one device.
//   encore::Program p = dev.compile("__kernel void add1(__global float* x) { x[get_global_id(0)] += 1; }");
//   encore::Kernel k = p.kernel("add1");
//   dev.launch(k, {1024}, {}, x);
// Programs are cached in memory per (device, source, options) while any handle to them (a Program,
// a Kernel, a captured unit) lives, and on disk (ENCORE_CACHE, default ~/.cache/encore, "0"
// disables). The disk cache's key also holds the bytes of every file the source #includes, found
// as the compiler finds them (working directory, -I directories, transitively): an edited header is
// a new program in the next process. A program with an include encore cannot follow (not found, or
// computed by a macro) skips the disk cache; ENCORE_DEBUG=1 says why. A build failure throws
// CompileError with the build log.
// Threads: compile and kernel() from any thread; one Kernel may be launched from several threads at
// once (its arguments are set under a lock per kernel).
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "encore/dtype.hpp"
#include "encore/export.hpp"

namespace encore {

class Device;
namespace detail { struct ProgramImpl; struct KernelImpl; }

// How a kernel touches a buffer argument.
enum class Access : uint8_t { none = 0, in = 1, out = 2, inout = 3 };
ENCORE_API const char* name(Access a);

enum class AddressSpace : uint8_t { global, constant, local, private_ };

// One kernel parameter as declared in the source.
struct KernelParam {
  std::string name;
  std::string type_name;      // "float*", "int"
  AddressSpace space = AddressSpace::private_;
  bool is_pointer = false;
  bool const_data = false;    // pointer to const (or __constant) data
  std::optional<DType> scalar;  // for by-value scalars
  // A pointer to __global or __constant data: the element type a buffer passed to it must have,
  // where encore knows the pointee (a scalar, a vector's element type, or a typedef or simple
  // #define of one in the program's source or headers). nullopt where any buffer fits (void*,
  // char*, uchar* and their vectors, structs, unions) and where the pointee could not be resolved
  // (ENCORE_DEBUG=1 says so once at compile); pass bytes as another type on purpose with
  // Buffer::as(dtype).
  std::optional<DType> pointee;
  uint8_t pointee_lanes = 1;  // elements per pointee: float4* 4, float3* 4 (a 3-vector takes 4), else 1
  // A by-value parameter: the bytes its argument must have where the type tells (a scalar; a
  // vector, a 3-vector taking 4 lanes; a struct the program's source defines, laid out by OpenCL's
  // alignment rules). 0 where encore cannot tell (a struct with attributes, pointers, bit-fields,
  // or one it cannot find): encore::bytes values of any size are then passed as given, and a wrong
  // size is the driver's error (CL_INVALID_ARG_SIZE) on OpenCL and unchecked on the NULL device.
  size_t value_bytes = 0;
  // Whether the argument is a by-value aggregate (a vector or a struct): passed with encore::bytes.
  bool by_value_aggregate() const { return !is_pointer && !scalar; }
  // What the kernel's body shows it does with a __global/__constant pointer, read from the source
  // at compile (for programs from the reader, the driver and the disk cache alike): none when the
  // body never names it; in when every use only reads an element (p[i], *p, vloadN); inout for a
  // store, an atomic, a vstoreN, the pointer passed to a function, assigned, cast or offset, its
  // address taken, named by a function-like macro's call (its arguments, its body, transitively)
  // or used in the statement such a call stands in, and for every pointer of a kernel whose body
  // the reader cannot follow (an undecided #if, a macro pasting tokens, inline asm). nullopt where it was not inferred (the
  // program's preprocessing could not be followed, or rests on an assumption). ENCORE_DEBUG=1
  // prints each kernel's answers and why a pointer is inout.
  //   for (const encore::KernelParam& p : kernel.params()) std::cout << p.name << " " << encore::name(p.default_access()) << "\n";
  std::optional<Access> inferred_access;
  // Whether the body only stores whole elements through it (p[i] = v, vstoreN(v, i, p + off); no
  // use reads through it):
  // an inferred inout whose old contents nothing the kernel computes can depend on. An encore::out
  // claim on it is then proven by the source, and the capture's access check does not run the
  // launch a second time for it (CaptureOptions::check_access). False where not inferred.
  bool inferred_store_only = false;
  // Whether the source declares the data read-only (a pointer to const, or __constant): such a
  // parameter cannot be passed as out or inout.
  bool read_only() const { return is_pointer && (const_data || space == AddressSpace::constant); }
  // Default access of a pointer argument (what a launch uses unless it says encore::in/out/inout):
  // none for a pointer the body never names, in for read-only data and for what inferred_access
  // says is only read, else inout. Non-pointer and __local parameters: none. A claim that lets an
  // item be pruned or reordered (in or none where the source has no const, out) is checked on the
  // data at capture (CaptureOptions::check_access).
  Access default_access() const {
    if (!is_pointer || space == AddressSpace::local || inferred_access == Access::none) return Access::none;
    if (read_only()) return Access::in;
    return inferred_access.value_or(Access::inout);
  }
  // Whether a buffer of `count` elements of `dtype` may be passed to this pointer parameter: its
  // pointee's element type, in whole pointees (a float4* takes f32 buffers of 4k elements). bf16
  // buffers go to ushort* (bf16's bits), bool buffers to uchar* / char* (which take any buffer: the
  // size of OpenCL C's bool is the compiler's choice, so a bool* parameter is not checked), f16
  // buffers to half*.
  bool accepts(DType dtype, size_t count) const {
    // bf16 has no OpenCL C type: kernels take its bits as ushort
    return !pointee || ((dtype == *pointee || (dtype == DType::bf16 && *pointee == DType::u16)) && count % pointee_lanes == 0);
  }
};

// What a kernel's compiled code allows per work-group on its device (OpenCL's CL_KERNEL_* work-group
// queries). On the NULL device: the device's limits, no memory of its own, and the
// reqd_work_group_size the source declares.
//   encore::WorkGroupInfo w = kernel.work_group_info();
//   size_t local = w.max_size / w.preferred_multiple * w.preferred_multiple;
struct WorkGroupInfo {
  size_t max_size = 1;            // CL_KERNEL_WORK_GROUP_SIZE: the most work-items per group (encore's automatic local size keeps to it)
  size_t preferred_multiple = 1;  // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
  uint64_t local_mem_bytes = 0;   // CL_KERNEL_LOCAL_MEM_SIZE: __local memory the kernel declares itself (__local arguments come on top)
  uint64_t private_mem_bytes = 0; // CL_KERNEL_PRIVATE_MEM_SIZE: per work-item
  std::array<size_t, 3> compile_size{};  // CL_KERNEL_COMPILE_WORK_GROUP_SIZE: reqd_work_group_size, zeros when none
};

class Kernel;

class ENCORE_API Program {
 public:
  Program() = default;
  Device device() const;
  const std::string& source() const;
  const std::string& options() const;
  std::vector<std::string> kernel_names() const;
  // ArgumentError naming the kernels that exist when there is no such kernel.
  Kernel kernel(const std::string& name) const;
  // The compiled binary (empty on the NULL device).
  std::vector<unsigned char> binary() const;
  // True when this program was loaded from the on-disk cache.
  bool from_disk_cache() const;
  // True when this program was built from a binary given to Device::compile_binary.
  bool from_binary() const;
  // What a binary of this program fits: Device::binary_key(source(), options()). Saved with
  // binary() (taken once the program's launches have run: on PoCL each launch configuration is
  // compiled at its first launch and kept in the binary from then on), it lets a later process
  // build the program without compiling (Device::compile_binary).
  std::string binary_key() const;
  // Write the binary to the disk cache now (it is also re-written after new launch configurations
  // when the program is released).
  void save_cache() const;

  detail::ProgramImpl* impl() const { return impl_.get(); }
  explicit Program(std::shared_ptr<detail::ProgramImpl> p) : impl_(std::move(p)) {}
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<detail::ProgramImpl> impl_;
};

class ENCORE_API Kernel {
 public:
  Kernel() = default;
  const std::string& name() const;
  const std::vector<KernelParam>& params() const;
  Program program() const;
  Device device() const;
  // The work-group limits of this kernel on its device, asked of the driver each call.
  WorkGroupInfo work_group_info() const;
  bool operator==(const Kernel& o) const { return impl_ == o.impl_; }
  explicit operator bool() const { return impl_ != nullptr; }

  detail::KernelImpl* impl() const { return impl_.get(); }
  explicit Kernel(std::shared_ptr<detail::KernelImpl> k) : impl_(std::move(k)) {}

 private:
  std::shared_ptr<detail::KernelImpl> impl_;
};

}  // namespace encore
