// The checks that need the device: programs compile, every launch matches its kernel's parameters
// (buffers of the parameters' element types), views respect the device's base-address alignment,
// const buffers are never written, no temp or output is read (access in) before an item has touched
// it, and every output is written by some item (else its contents, and so the comparison, would be
// undefined). A first access that may write (inout) counts as a write, as in a capture (DESIGN rule 2).
#include "workload/binary.hpp"
#include "workload/reader.hpp"

namespace encore::workload {

using namespace detail;

namespace {

std::string signature(const Kernel& k) {
  std::string s;
  for (const KernelParam& p : k.params()) s += (s.empty() ? "" : ", ") + p.type_name + " " + p.name;
  return k.name() + "(" + s + ")";
}

std::string param_name(const KernelParam& p, size_t j) {
  return "parameter " + std::to_string(j) + " (" + p.type_name + " " + p.name + ")";
}

// The integer in the low size(from) bytes of `bits` (as ArgSpec holds it), sign-extended when
// `from` is signed.
struct IntValue {
  bool neg;
  int64_t s;    // when neg
  uint64_t u;   // when not
};
IntValue int_value(DType from, uint64_t bits) {
  const unsigned shift = 64 - 8 * static_cast<unsigned>(size(from));
  if (shift) bits &= ~uint64_t{0} >> shift;
  const int64_t s = static_cast<int64_t>(bits << shift) >> shift;
  return {is_signed(from) && s < 0, s, bits};
}

std::string int_str(const IntValue& v) { return v.neg ? std::to_string(v.s) : std::to_string(v.u); }

// Whether `v` fits integer dtype `to`.
bool int_fits(const IntValue& v, DType to) {
  switch (to) {
    case DType::i8: return v.neg ? v.s >= INT8_MIN : v.u <= INT8_MAX;
    case DType::i16: return v.neg ? v.s >= INT16_MIN : v.u <= INT16_MAX;
    case DType::i32: return v.neg ? v.s >= INT32_MIN : v.u <= INT32_MAX;
    case DType::i64: return v.neg || v.u <= INT64_MAX;
    case DType::u8: return !v.neg && v.u <= UINT8_MAX;
    case DType::u16: return !v.neg && v.u <= UINT16_MAX;
    case DType::u32: return !v.neg && v.u <= UINT32_MAX;
    case DType::u64: return !v.neg;
    default: return false;
  }
}

bool int_type(DType t) { return is_integer(t) && t != DType::boolean; }

// One argument and its kernel parameter, with its place in the file.
struct ArgAt {
  const ArgSpec& a;
  const KernelParam& p;
  size_t j;
  std::string path;
  [[noreturn]] void mismatch(const std::string& want) const {
    static constexpr const char* forms[] = {"a buffer", "a scalar", "a variable", "__local memory", "bytes"};
    fail(path, std::string(forms[static_cast<int>(a.kind)]) + " given for " + param_name(p, j) + ", which takes " + want);
  }
};

// The checks in step order, and what the items have done to each buffer so far.
struct Validator {
  const Workload& w;
  const Device& dev;
  const size_t align;
  Compiled& c;
  std::vector<bool> written, touched;

  // temps and outputs are created inside the step: reading one before any item touched it reads
  // undefined bytes (and eager and replay would differ with no diagnosis)
  void fresh_read(size_t b, const std::string& where, const std::string& what) const {
    const BufferSpec& s = w.buffers[b];
    if (touched[b] || (s.role != Role::temp && s.role != Role::output)) return;
    fail(where, what + " reads " + std::string(s.role == Role::temp ? "temp " : "output ") + quote(s.name) +
                    " before any item writes it: it is created inside the step, so its contents are undefined. Write it first, or "
                    "make it a state buffer (with an init) if it must keep its contents across calls");
  }

  // A copy reads its source and writes its destination; it has no kernel (an empty one holds its place).
  void copy(const ItemSpec& it, const std::string& path) {
    fresh_read(it.src, child(path, "copy"), "the copy");
    written[it.dst] = true;
    touched[it.src] = touched[it.dst] = true;
    c.kernels.emplace_back();
  }

  // A launch: its kernel exists and takes as many arguments as given, each of the form and type
  // its parameter takes.
  void launch(const ItemSpec& it, const std::string& path) {
    Kernel k;
    try {
      k = c.programs[it.program].kernel(it.kernel);
    } catch (const Error& e) {
      fail(child(path, "launch"), e.what());
    }
    c.kernels.push_back(k);
    const auto& params = k.params();
    if (params.size() != it.args.size())
      fail(child(path, "args"), "kernel " + signature(k) + " takes " + std::to_string(params.size()) + " arguments, got " +
                                    std::to_string(it.args.size()));
    for (size_t j = 0; j < it.args.size(); ++j) {
      const ArgAt x{it.args[j], params[j], j, index(child(path, "args"), j)};
      if (x.p.is_pointer && x.p.space == AddressSpace::local) {
        if (x.a.kind != ArgSpec::Kind::local) x.mismatch("__local memory ({\"local\": bytes})");
      } else if (x.p.is_pointer) {
        c.access.back()[j] = buffer_arg(k, x);
      } else if (x.a.kind == ArgSpec::Kind::bytes || x.p.by_value_aggregate()) {
        bytes_arg(x);
      } else {
        scalar_arg(x);
      }
    }
    for (const ArgSpec& a : it.args)
      if (a.kind == ArgSpec::Kind::buffer) touched[a.buffer] = true;
  }

  // A buffer for a pointer: elements the kernel reads as its own type, an access the parameter and
  // the buffer's role allow, an aligned view, no fresh read. Returns the access resolved.
  Access buffer_arg(const Kernel& k, const ArgAt& x) {
    const ArgSpec& a = x.a;
    const KernelParam& p = x.p;
    const size_t j = x.j;
    const std::string& ap = x.path;
    if (a.kind != ArgSpec::Kind::buffer) x.mismatch("a buffer");
    const BufferSpec& b = w.buffers[a.buffer];
    const size_t count = a.view ? a.count : b.count;
    if (!p.accepts(b.dtype, count))
      fail(ap, "buffer " + quote(b.name) + " (" + std::string(encore::name(b.dtype)) + "[" + std::to_string(count) + "]) passed to " +
                   param_name(p, j) + ", which takes " + std::string(encore::name(*p.pointee)) + " elements" +
                   (p.pointee_lanes > 1 ? " in groups of " + std::to_string(p.pointee_lanes) : std::string()) +
                   ": the kernel would misread it or go past its end (declare the buffer with the parameter's dtype)");
    Access acc = a.access == Access::none ? p.default_access() : a.access;
    const bool writes = acc == Access::out || acc == Access::inout;
    if (p.read_only() && writes) fail(ap, param_name(p, j) + " points to const data: its access can only be in, not " + encore::name(acc));
    if (b.role == Role::const_ && writes)
      fail(ap, "const buffer " + quote(b.name) + " passed to " + param_name(p, j) +
                   ", which the kernel may write (declare the parameter const, or pass {\"buf\": ..., \"access\": \"in\"})");
    if (a.view && (a.offset * size(b.dtype)) % align != 0)
      fail(child(ap, "offset"), "byte offset " + std::to_string(a.offset * size(b.dtype)) + " (element " + std::to_string(a.offset) +
                                    ") is not a multiple of the device's base-address alignment (" + std::to_string(align) + " B on " +
                                    dev.id() + ")");
    if (acc == Access::in)
      fresh_read(a.buffer, ap, "kernel " + k.name() + " parameter " + std::to_string(j) + " (" + (p.const_data ? "const " : "") + p.type_name + " " + p.name + ")");
    if (writes) written[a.buffer] = true;
    return acc;
  }

  // Bytes for a by-value aggregate: as many as OpenCL C's sizeof, of a type a file can pass.
  void bytes_arg(const ArgAt& x) const {
    const ArgSpec& a = x.a;
    const KernelParam& p = x.p;
    if (p.type_name.rfind("image", 0) == 0 || p.type_name == "sampler_t" || p.type_name == "event_t")
      fail(x.path, param_name(p, x.j) + " has a type workload files cannot pass");
    if (a.kind != ArgSpec::Kind::bytes) x.mismatch("{\"bytes\": \"<hex>\"} (a by-value " + p.type_name + ")");
    if (p.value_bytes && a.bytes.size() != p.value_bytes)
      fail(x.path, std::to_string(a.bytes.size()) + " bytes given for " + param_name(p, x.j) + ", which takes " + std::to_string(p.value_bytes) +
                       " (sizeof(" + p.type_name + ") in OpenCL C)");
  }

  // A scalar or a variable for a scalar parameter: of its type, or an integer whose every value fits it.
  void scalar_arg(const ArgAt& x) const {
    const ArgSpec& a = x.a;
    const KernelParam& p = x.p;
    const size_t j = x.j;
    const std::string& ap = x.path;
    if (!p.scalar) fail(ap, param_name(p, j) + " has a type workload files cannot pass");
    std::string want = std::string(encore::name(*p.scalar));
    if (a.kind != ArgSpec::Kind::scalar && a.kind != ArgSpec::Kind::variable) x.mismatch("a " + want + " scalar");
    const VariableSpec* var = a.kind == ArgSpec::Kind::variable ? &w.variables[a.variable] : nullptr;
    if (a.kind == ArgSpec::Kind::scalar && a.dtype != *p.scalar && int_type(a.dtype) && int_type(*p.scalar)) {
      // an integer converts to the parameter's integer type when it fits, as at a launch
      const IntValue v = int_value(a.dtype, a.bits);
      if (!int_fits(v, *p.scalar))
        fail(ap, "the " + std::string(encore::name(a.dtype)) + " value " + int_str(v) + " does not fit " + param_name(p, j) + " (" + want + ")");
    } else if (var && var->type == VarType::i64 && !a.as_given && int_type(*p.scalar)) {
      // an int variable without "as" takes the parameter's integer type: every value must fit it
      for (size_t k = 0; k < var->ivalues.size(); ++k)
        if (!int_fits(int_value(DType::i64, static_cast<uint64_t>(var->ivalues[k])), *p.scalar))
          fail(ap, "variable " + quote(var->name) + " value " + std::to_string(var->ivalues[k]) + " (values[" + std::to_string(k) +
                       "]) does not fit " + param_name(p, j) + " (" + want + ")");
    } else if (a.dtype != *p.scalar)
      fail(ap, std::string(a.kind == ArgSpec::Kind::variable ? "variable passed as " : "scalar of type ") + std::string(encore::name(a.dtype)) +
                   " given for " + param_name(p, j) + ", which takes " + want +
                   (a.kind == ArgSpec::Kind::variable ? " (use \"as\")" : " (write {\"" + want + "\": value})"));
  }

  // An output no item writes holds undefined bytes, so comparing it would mean nothing.
  void outputs_written() const {
    for (size_t b = 0; b < w.buffers.size(); ++b)
      if (w.buffers[b].role == Role::output && !written[b])
        fail(child("buffers", w.buffers[b].name), "output is never written by a step item (its contents would be undefined)");
  }
};

}  // namespace

Compiled validate(const Workload& w, const Device& dev) {
  Compiled c;
  for (const ProgramSpec& p : w.programs) {
    std::string path = child("programs", p.name);
    c.programs.push_back(build_program(p, dev, path));  // from its saved binary where it has one that fits
  }
  Validator v{w, dev, dev.info().base_align_bytes, c, std::vector<bool>(w.buffers.size(), false), std::vector<bool>(w.buffers.size(), false)};
  for (size_t i = 0; i < w.step.size(); ++i) {
    const ItemSpec& it = w.step[i];
    c.access.emplace_back(it.args.size(), Access::none);
    if (it.kind == ItemSpec::Kind::copy) v.copy(it, index("step", i));
    else v.launch(it, index("step", i));
  }
  v.outputs_written();
  return c;
}

}  // namespace encore::workload
