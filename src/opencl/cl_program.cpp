// The OpenCL device's compiler: builds from source or a cached binary, binaries for the cache,
// kernel objects and their work-group limits, and the parameter lists the driver reports (checked
// against the ones read from the source).
#include <algorithm>

#include "cl_device.hpp"
#include "core/env.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"

namespace encore::detail {

namespace {

std::optional<DType> dtype_of_cl_type(std::string t) {
  if (!t.empty() && t.back() == '*') return std::nullopt;
  return scalar_dtype_of(t);
}

std::string kernel_str(cl_kernel k, cl_kernel_info what) {
  size_t n = 0;
  clGetKernelInfo(k, what, 0, nullptr, &n);
  std::string s(n, '\0');
  if (n) clGetKernelInfo(k, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
std::string arg_str(cl_kernel k, cl_uint i, cl_kernel_arg_info what) {
  size_t n = 0;
  cl::check(clGetKernelArgInfo(k, i, what, 0, nullptr, &n), "clGetKernelArgInfo");
  std::string s(n, '\0');
  if (n) clGetKernelArgInfo(k, i, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
KernelSignature signature(cl_kernel k) {
  KernelSignature sig;
  sig.name = kernel_str(k, CL_KERNEL_FUNCTION_NAME);
  cl_uint na = 0;
  cl::check(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof na, &na, nullptr), "clGetKernelInfo");
  for (cl_uint i = 0; i < na; ++i) {
    KernelParam p;
    p.name = arg_str(k, i, CL_KERNEL_ARG_NAME);
    p.type_name = arg_str(k, i, CL_KERNEL_ARG_TYPE_NAME);
    cl_kernel_arg_address_qualifier aq = 0;
    cl_kernel_arg_type_qualifier tq = 0;
    cl::check(clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, nullptr), "clGetKernelArgInfo");
    cl::check(clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof tq, &tq, nullptr), "clGetKernelArgInfo");
    p.space = aq == CL_KERNEL_ARG_ADDRESS_GLOBAL     ? AddressSpace::global
              : aq == CL_KERNEL_ARG_ADDRESS_CONSTANT ? AddressSpace::constant
              : aq == CL_KERNEL_ARG_ADDRESS_LOCAL    ? AddressSpace::local
                                                     : AddressSpace::private_;
    p.is_pointer = !p.type_name.empty() && p.type_name.back() == '*';
    p.const_data = p.is_pointer && (tq & CL_KERNEL_ARG_TYPE_CONST);
    if (!p.is_pointer) p.scalar = dtype_of_cl_type(p.type_name);
    sig.params.push_back(std::move(p));
  }
  return sig;
}

// A kernel of a built program: its name and argument count, and with arg_info its parameters.
struct Built {
  KernelSignature sig;
  cl_uint num_args = 0;
};
std::vector<Built> kernels_of(cl_program p, bool arg_info) {
  cl_uint nk = 0;
  cl::check(clCreateKernelsInProgram(p, 0, nullptr, &nk), "clCreateKernelsInProgram");
  std::vector<cl_kernel> ks(nk);
  if (nk) cl::check(clCreateKernelsInProgram(p, nk, ks.data(), nullptr), "clCreateKernelsInProgram");
  std::vector<cl::KernelH> owned;
  for (cl_kernel k : ks) owned.emplace_back(k);
  std::vector<Built> out;
  for (cl_kernel k : ks) {
    Built b;
    b.sig.name = kernel_str(k, CL_KERNEL_FUNCTION_NAME);
    cl::check(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof b.num_args, &b.num_args, nullptr), "clGetKernelInfo");
    if (arg_info) b.sig = signature(k);
    out.push_back(std::move(b));
  }
  return out;
}
// Why the parameter lists read from the source cannot be the program's ("" when they can): the
// same kernels, each with as many arguments.
std::string disagreement(const std::vector<KernelSignature>& read, const std::vector<Built>& built) {
  for (const Built& b : built) {
    const KernelSignature* s = nullptr;
    for (const KernelSignature& k : read)
      if (k.name == b.sig.name) s = &k;
    if (!s) return "the program has a kernel " + b.sig.name + " that the source's text does not show (a macro or an #include?)";
    if (s->params.size() != b.num_args)
      return "kernel " + b.sig.name + " has " + std::to_string(b.num_args) + " arguments, the source's text shows " + std::to_string(s->params.size());
  }
  for (const KernelSignature& k : read) {
    bool found = false;
    for (const Built& b : built) found = found || b.sig.name == k.name;
    if (!found) return "the source's text shows a kernel " + k.name + " that the program does not have (an #if branch?)";
  }
  return {};
}
// What differs between the parsed lists and the driver's ("" when nothing does).
std::string compare(const std::vector<KernelSignature>& read, const std::vector<Built>& truth) {
  if (std::string d = disagreement(read, truth); !d.empty()) return d;
  for (const Built& b : truth) {
    const KernelSignature* s = nullptr;
    for (const KernelSignature& k : read)
      if (k.name == b.sig.name) s = &k;
    for (size_t i = 0; i < b.sig.params.size(); ++i) {
      const KernelParam &x = s->params[i], &y = b.sig.params[i];
      auto str = [](const KernelParam& q) {
        return std::string(q.space == AddressSpace::global ? "global " : q.space == AddressSpace::constant ? "constant " : q.space == AddressSpace::local ? "local " : "") +
               (q.const_data ? "const " : "") + q.type_name + " " + q.name + (q.scalar ? std::string(" (") + std::string(encore::name(*q.scalar)) + ")" : "");
      };
      const bool same = x.name == y.name && x.type_name == y.type_name && x.space == y.space && x.is_pointer == y.is_pointer &&
                        x.scalar == y.scalar && x.default_access() == y.default_access() &&
                        (x.space != AddressSpace::global || x.const_data == y.const_data);
      if (!same) return "kernel " + b.sig.name + " parameter " + std::to_string(i) + ": parsed " + str(x) + ", driver " + str(y);
    }
  }
  return {};
}

}  // namespace

WorkGroupInfo ClKernel::work_group_info() const {
  WorkGroupInfo w;
  w.max_size = max_wg_;
  w.local_mem_bytes = local_bytes_;
  auto ask = [&](cl_kernel_work_group_info what, const char* name, size_t n, void* v) {
    cl::check(clGetKernelWorkGroupInfo(k_.get(), dev_, what, n, v, nullptr), name, name_);
  };
  ask(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, "clGetKernelWorkGroupInfo(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)",
      sizeof w.preferred_multiple, &w.preferred_multiple);
  cl_ulong priv = 0;
  ask(CL_KERNEL_PRIVATE_MEM_SIZE, "clGetKernelWorkGroupInfo(CL_KERNEL_PRIVATE_MEM_SIZE)", sizeof priv, &priv);
  w.private_mem_bytes = priv;
  size_t compile[3] = {0, 0, 0};
  ask(CL_KERNEL_COMPILE_WORK_GROUP_SIZE, "clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)", sizeof compile, compile);
  for (int d = 0; d < 3; ++d) w.compile_size[d] = compile[d];
  w.preferred_multiple = std::max<size_t>(w.preferred_multiple, 1);
  return w;
}

std::unique_ptr<BackendKernel> ClProgram::create_kernel(const std::string& name) {
  cl_int err = CL_SUCCESS;
  cl::KernelH k(clCreateKernel(p_.get(), name.c_str(), &err));
  cl::check(err, "clCreateKernel", name);
  size_t max_wg = 0;
  cl::check(clGetKernelWorkGroupInfo(k.get(), dev_, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, nullptr),
            "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)", name);
  cl_ulong local_bytes = 0;  // a driver that cannot say: 0, only the arguments are counted
  clGetKernelWorkGroupInfo(k.get(), dev_, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_bytes, &local_bytes, nullptr);
  return std::make_unique<ClKernel>(std::move(k), dev_, name, std::max<size_t>(max_wg, 1), local_bytes);
}

std::vector<unsigned char> ClProgram::binary() {
  if (exiting()) return {};  // the exit drain stored what changed; the driver may be gone now
  cl_uint nd = 0;
  cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, nullptr), "clGetProgramInfo");
  std::vector<cl_device_id> devs(nd);
  cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_DEVICES, nd * sizeof(cl_device_id), devs.data(), nullptr), "clGetProgramInfo");
  std::vector<size_t> sizes(nd);
  cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_BINARY_SIZES, nd * sizeof(size_t), sizes.data(), nullptr), "clGetProgramInfo");
  std::vector<std::vector<unsigned char>> bins(nd);
  std::vector<unsigned char*> ptrs(nd);
  for (cl_uint i = 0; i < nd; ++i) {
    bins[i].resize(sizes[i]);
    ptrs[i] = bins[i].data();
  }
  cl::check(clGetProgramInfo(p_.get(), CL_PROGRAM_BINARIES, nd * sizeof(unsigned char*), ptrs.data(), nullptr), "clGetProgramInfo");
  for (cl_uint i = 0; i < nd; ++i)
    if (devs[i] == dev_ && !bins[i].empty()) return bins[i];
  // PoCL 3.1 reports the binary of a program built for one device of a multi-device context in
  // slot 0, whatever the device's slot. Our programs are only ever built for dev_, so the one
  // non-empty binary is dev_'s.
  std::vector<unsigned char>* only = nullptr;
  for (auto& b : bins)
    if (!b.empty()) {
      if (only) return {};
      only = &b;
    }
  return only ? std::move(*only) : std::vector<unsigned char>{};
}


cl::ProgramH ClDevice::build_program(const std::string& source, const std::string& opts, const std::vector<unsigned char>* binary) {
  cl_int err = CL_SUCCESS;
  cl::ProgramH p;
  if (binary) {
    const unsigned char* b = binary->data();
    size_t n = binary->size();
    cl_int bstatus = CL_SUCCESS;
    p = cl::ProgramH(clCreateProgramWithBinary(ctx(), 1, &dev_, &n, &b, &bstatus, &err));
    cl::check(err != CL_SUCCESS ? err : bstatus, "clCreateProgramWithBinary", "cached binary");
  } else {
    const char* src = source.c_str();
    size_t len = source.size();
    p = cl::ProgramH(clCreateProgramWithSource(ctx(), 1, &src, &len, &err));
    cl::check(err, "clCreateProgramWithSource");
  }
  err = clBuildProgram(p.get(), 1, &dev_, opts.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p.get(), dev_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    if (n) clGetProgramBuildInfo(p.get(), dev_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (binary) throw OpenCLError(err, "clBuildProgram", "cached binary: " + log);
    throw CompileError("OpenCL C build failed on " + info.id + " (" + info.name + ") with " + cl_status_name(err) +
                           (opts.empty() ? "" : ", options \"" + opts + "\""),
                       log);
  }
  return p;
}

// Built without -cl-kernel-arg-info: PoCL's code is slower with it. The parameter lists come from
// the source (checked against the kernels the program has: names and argument counts), or, when
// the source could not be read or disagrees, from a second build with the flag whose binary only
// answers clGetKernelArgInfo and is never run.
BuildResult ClDevice::build(const std::string& source, const std::string& options, const std::vector<unsigned char>* binary,
                            const BuildSignatures& lists) {
  cl::ProgramH p = build_program(source, options, binary);
  const std::vector<KernelSignature>* signatures = lists.get();  // (after the driver's build: they may be read beside it)
  BuildResult r;
  const std::vector<Built> built = kernels_of(p.get(), false);
  std::string why = signatures ? disagreement(*signatures, built) : "the source could not be read";
  if (why.empty()) {
    r.kernels = *signatures;
    // A reading that rests on an assumption (a name taken as undefined that the driver may define, a
    // group under an undecided #if) is confirmed by the driver once, when built from source (the
    // disk cache keeps the confirmed lists); tests confirm every program.
    std::string confirm;
    for (const KernelSignature& k : *signatures) confirm = k.confirm.empty() ? confirm : k.confirm;
    if (env::check_signatures() || (!confirm.empty() && !binary)) {
      if (!confirm.empty()) {
        log(LogLevel::info, "program on " + info.id + ": the kernel reader " + confirm + "; confirmed by a metadata build (-cl-kernel-arg-info)");
        ENCORE_TESTING_DO(++testing::cl_metadata_builds;)
      }
      cl::ProgramH meta = build_program(source, options + " -cl-kernel-arg-info", nullptr);
      std::vector<Built> truth = kernels_of(meta.get(), true);
      if (std::string d = compare(r.kernels, truth); !d.empty()) {
        if (env::check_signatures())
          throw CompileError("ENCORE_CHECK_SIGNATURES: the signature parser disagrees with clGetKernelArgInfo on " + info.id + ": " + d, source);
        log(LogLevel::warning, "program on " + info.id + ": the kernel reader (" + confirm + ") disagrees with the driver: " + d +
                                   "; the driver's parameter types are used");
        r.kernels.clear();
        for (Built& b : truth) r.kernels.push_back(std::move(b.sig));
      }
    }
  } else {
    if (binary) throw OpenCLError(CL_INVALID_BINARY, "clCreateProgramWithBinary", "cached binary: " + why);
    log(LogLevel::info, "program on " + info.id + ": " + why + "; parameter types from a metadata build (-cl-kernel-arg-info)");
    ENCORE_TESTING_DO(++testing::cl_metadata_builds;)
    cl::ProgramH meta = build_program(source, options + " -cl-kernel-arg-info", nullptr);
    for (Built& b : kernels_of(meta.get(), true)) r.kernels.push_back(std::move(b.sig));
  }
  r.program = std::make_unique<ClProgram>(std::move(p), dev_);
  return r;
}

std::string ClDevice::cache_key_prefix() const {
  // (programs are built without -cl-kernel-arg-info since issue 19: entries built with it are not reused)
  std::string k = info.name + '\0' + info.driver_version + '\0' + info.version + '\0' + "no-arg-info";
  if (!info.parent.empty()) {  // a sub-device may get other code than the whole device: entries of its own
    k += '\0';
    k += "sub-device of " + std::to_string(info.compute_units) + " compute units";
  }
  return k;
}

}  // namespace encore::detail
