// Device::launch: the arguments checked against the kernel's parameters (types, devices, sizes,
// access), then run eagerly and recorded as a kernel item (src/exec/kernel_item.cpp).
#include <algorithm>
#include <cstring>
#include <utility>
#include <memory>

#include "encore/device.hpp"
#include "encore/error.hpp"
#include "exec/access_check.hpp"
#include "exec/enqueue.hpp"
#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "core/program_impl.hpp"
#include "core/recorder.hpp"
#include "core/scalar.hpp"
#include "exec/eager.hpp"

namespace encore {

using namespace detail;

// Why `b` cannot be passed to pointer parameter `p` (p.accepts said no), and what to do.
static std::string pointee_mismatch(const KernelParam& p, const Buffer& b) {
  const std::string want(encore::name(*p.pointee));
  if (b.dtype() == *p.pointee)
    return "expected a whole number of " + p.type_name.substr(0, p.type_name.size() - 1) + " (" + std::to_string(p.pointee_lanes) +
           " " + want + " elements each), got " + b.describe() + "; the kernel would read or write past its end. Pass a buffer of a multiple of " +
           std::to_string(p.pointee_lanes) + " elements";
  return "expected a buffer of " + want + " (the parameter's element type), got " + b.describe() +
         "; the kernel would misread its bytes or go past its end. Pass a " + want + " buffer, or reinterpret these bytes on purpose with "
         "buf.as(DType::" + want + ")";
}

// A scalar or variable argument of another type than its parameter `want`: a host integer converts
// to an integer parameter when its value fits, an integer Variable passed without as() takes the
// parameter's integer type (each value checked when it is bound); anything else is an error.
template <class Where> static void adapt_scalar(Arg& a, DType want, const Where& where) {
  if (a.kind == Arg::Kind::scalar && is_integer(a.dtype) && is_integer(want) && want != DType::boolean) {
    uint64_t bits = 0;
    if (!convert_integer(a.dtype, a.bits, want, bits))
      throw ArgumentError(where() + ": the host value " + value_str(a.dtype, &a.bits) + " (" + std::string(encore::name(a.dtype)) +
                          ") does not fit the parameter's type (" + integer_range(want) + ")");
    a.dtype = want;
    a.bits = bits;
    return;
  }
  if (a.kind == Arg::Kind::variable && !a.exact && !a.var->is_float() && is_integer(want) && want != DType::boolean) {
    a.dtype = want;
    return;
  }
  // only errors from here on: the strings are built for the message alone
  const std::string w(encore::name(want)), got(encore::name(a.dtype));
  if (a.kind == Arg::Kind::variable)
    throw ArgumentError(where() + ": expected " + w + ", got variable \"" + a.var->name() + "\" passed as " + got +
                        (a.exact            ? " (as(DType::" + got + ") given; drop it to take the parameter's type)"
                         : a.var->is_float() ? std::string(" (a float variable is passed as its own type)")
                                             : std::string(" (an integer variable cannot be a float argument: use Variable::f32 or f64)")));
  throw ArgumentError(where() + ": expected " + w + ", got " + got + " (" + value_str(a.dtype, &a.bits) + "; cast the value to the parameter's type)");
}

// A by-value vector or struct parameter takes encore::bytes of its size (where known); a scalar
// parameter takes them too when they are its size (a value built elsewhere as raw bytes).
static void check_by_value(const KernelParam& p, const Arg& a, const std::string& where) {
  static const char* opaque[] = {"image", "sampler_t", "event_t", "queue_t", "clk_event_t"};
  for (const char* o : opaque)
    if (p.type_name.rfind(o, 0) == 0) throw ArgumentError(where + ": unsupported parameter type " + p.type_name);
  const std::string want = p.value_bytes ? std::to_string(p.value_bytes) + " bytes" : "bytes";
  if (a.kind != Arg::Kind::bytes)
    throw ArgumentError(where + ": expected encore::bytes(value) with the " + want + " of a " + p.type_name +
                        " (e.g. std::array<float, 4> for a float4, or a struct laid out as the kernel's), got " +
                        (a.kind == Arg::Kind::buffer ? "a buffer" : a.kind == Arg::Kind::local ? "__local memory" : a.kind == Arg::Kind::variable ? "a Variable" : "a scalar"));
  if (p.value_bytes && a.value->size() != p.value_bytes)
    throw ArgumentError(where + ": expected " + want + " (sizeof(" + p.type_name + ") in OpenCL C" +
                        (!p.type_name.empty() && p.type_name.back() == '3' ? ", where a 3-vector takes the room of 4" : "") + "), got " +
                        std::to_string(a.value->size()) + " bytes");
}

// A struct's padding holds whatever the host left there (uninitialised bytes differ call to call):
// the argument's copy gets zeros there, so only member bytes tell two calls' values apart.
static void zero_padding(Arg& a, const std::vector<std::pair<uint32_t, uint32_t>>& pad) {
  const std::vector<unsigned char>& v = *a.value;
  bool dirty = false;
  for (auto [b, e] : pad)
    for (uint32_t k = b; k < e && !dirty; ++k) dirty = v[k] != 0;
  if (!dirty) return;
  auto z = std::make_shared<std::vector<unsigned char>>(v);
  for (auto [b, e] : pad) std::fill(z->begin() + b, z->begin() + e, static_cast<unsigned char>(0));
  a.value = std::move(z);
}

// While a capture records: by-value bytes copied from inside one of its host inputs are recorded as
// from it (slot, offset), so replay passes each call's bytes. By address, as a copyin from a span
// is found, and only while the bytes there are still the ones copied (a value made earlier from
// memory a host input now reuses stays a constant). bytes_from requires it.
template <class Where> static void find_host_bytes(Arg& a, const Where& where) {
  const void* src = std::exchange(a.src, nullptr);
  a.host_slot = -1;  // a slot belongs to the capture that found it (an item submitted again is found afresh)
  a.host_offset = 0;
  Recorder* r = current_recorder();
  if (!r || !src) return;
  const size_t n = a.value->size();
  const uintptr_t at = reinterpret_cast<uintptr_t>(src);
  for (size_t k = 0; k < r->hosts.size(); ++k)
    if (const uintptr_t h = reinterpret_cast<uintptr_t>(r->hosts[k].first), hn = r->hosts[k].second; at >= h && n <= hn && at - h <= hn - n) {
      if (std::memcmp(src, a.value->data(), n) != 0) break;
      a.host_slot = static_cast<int32_t>(k);
      a.host_offset = at - h;
      return;
    }
  if (a.per_call)
    throw JitError(where() + ": encore::bytes_from names " + std::to_string(n) + " bytes that lie inside no host input of this capture (" +
                   std::to_string(r->hosts.size()) + " host inputs): replay could only pass the bytes seen now. Pass the span the call "
                   "was given (a std::span<const T> argument of the TinyJit call, Capture::add_host_input), or a part of it, not a copy");
}

void Device::launch_args(const Kernel& k, const Sizes& global, const Sizes& local, std::vector<Arg> args, std::string name,
                         Estimate estimate) const {
  if (!k) throw ArgumentError("launch: null kernel");
  KernelImpl& ki = *k.impl();
  if (ki.program->dev != shared_impl())
    throw ArgumentError("launch: kernel " + k.name() + " was compiled for " + ki.program->dev->info.id + ", launched on " + id());
  const auto& params = ki.sig->params;
  auto where = [&](size_t i) {
    return "kernel " + k.name() + " argument " + std::to_string(i) + " (" + params[i].type_name + " " + params[i].name + ")";
  };
  if (args.size() != params.size()) {
    std::string sig;
    for (const auto& p : params) sig += (sig.empty() ? "" : ", ") + p.type_name + " " + p.name;
    throw ArgumentError("kernel " + k.name() + " takes " + std::to_string(params.size()) + " arguments (" + sig + "), got " +
                        std::to_string(args.size()));
  }
  if (global.n == 0) throw ArgumentError("launch " + k.name() + ": global size needs 1 to 3 dimensions");
  if (!local.empty() && local.n != global.n)
    throw ArgumentError("launch " + k.name() + ": local size has " + std::to_string(local.n) + " dimensions, global " + std::to_string(global.n));
  bool local_args = false;
  for (size_t i = 0; i < args.size(); ++i) {
    Arg& a = args[i];
    const KernelParam& p = params[i];
    if (p.is_pointer && p.space == AddressSpace::local) {
      if (a.kind != Arg::Kind::local || a.local_bytes == 0) throw ArgumentError(where(i) + ": expected __local memory (encore::LocalMem{bytes})");
      local_args = true;
    } else if (p.is_pointer) {
      if (a.kind != Arg::Kind::buffer) throw ArgumentError(where(i) + ": expected a buffer");
      if (!a.buf) throw ArgumentError(where(i) + ": null buffer");
      const BufferImpl& bi = *a.buf.impl();
      if (bi.dev != shared_impl())
        throw ArgumentError(where(i) + ": buffer " + a.buf.describe() + " is not on " + id());
      if (!p.accepts(bi.dtype, bi.count)) throw ArgumentError(where(i) + ": " + pointee_mismatch(p, a.buf));
      if (a.access == Access::none) a.access = p.default_access();
      if (p.read_only() && has(a.access, Access::out))
        throw ArgumentError(where(i) + ": a const/__constant parameter cannot be written (access " + encore::name(a.access) + ")");
    } else if (a.kind == Arg::Kind::bytes || p.by_value_aggregate()) {
      check_by_value(p, a, where(i));
      if (a.kind == Arg::Kind::bytes) find_host_bytes(a, [&] { return where(i); });
      if (i < ki.sig->padding.size() && !ki.sig->padding[i].empty() && a.kind == Arg::Kind::bytes && a.value->size() == p.value_bytes)
        zero_padding(a, ki.sig->padding[i]);
    } else {
      if (!p.scalar) throw ArgumentError(where(i) + ": unsupported parameter type " + p.type_name);
      if (a.kind != Arg::Kind::scalar && a.kind != Arg::Kind::variable)
        throw ArgumentError(where(i) + ": expected a " + std::string(encore::name(*p.scalar)) + " scalar");
      if (a.dtype != *p.scalar) adapt_scalar(a, *p.scalar, [&] { return where(i); });
      if (*p.scalar == DType::f16 && !supports(DType::f16))
        throw ArgumentError(where(i) + ": a by-value half needs cl_khr_fp16, which " + id() + " (" + info().name + ") does not report");
    }
  }
  // without __local arguments only the kernel's own __local memory can be over the limit
  if (local_args || ki.eager->local_mem_bytes() > ki.program->dev->info.local_mem_bytes)
    check_local_memory(*ki.program->dev, *ki.eager, args, k.name());
  check_not_in_host("launch a kernel");
  const Recorder* rec = current_recorder();
  if (!rec && debug_level() < 2 && !trace_active()) {
    // the common eager case: run straight from the arguments, no ExecItem to build and destroy
    LaunchDims ld;
    run_kernel_eager(ki, args, global, local, ld, nullptr);
    return;
  }
  ExecItem item;
  item.kind = ItemKind::kernel;
  item.kernel = k;
  item.args = std::move(args);
  item.global = global;
  item.local = local;
  item.name = std::move(name);
  item.estimate = estimate;
  if (rec && rec->check_access && rec->dry == 0 && has_access_claims(ki, item.args))
    run_checking_access(item);
  else
    run_item_eager(item);
  record_item(std::move(item));
}

}  // namespace encore
