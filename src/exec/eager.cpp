// Eager execution: argument checks, ExecItem construction, running items, host transfers.
#include <chrono>
#include <limits>

#include "encore/device.hpp"
#include "encore/error.hpp"
#include "exec/enqueue.hpp"
#include "exec/kind.hpp"

namespace encore {

using namespace detail;

namespace detail {

uint64_t var_arg_bits(const VarState& v, int64_t iv, double fv, DType as) {
  uint64_t bits = 0;
  switch (as) {
    case DType::f32: { float x = static_cast<float>(fv); std::memcpy(&bits, &x, 4); } break;
    case DType::f64: std::memcpy(&bits, &fv, 8); break;
    case DType::i8: case DType::i16: case DType::i32: case DType::i64:
    case DType::u8: case DType::u16: case DType::u32: case DType::u64:
      if (!convert_integer(DType::i64, static_cast<uint64_t>(iv), as, bits))
        throw ArgumentError("variable \"" + v.name + "\" = " + std::to_string(iv) + " does not fit its kernel argument type " +
                            std::string(name(as)) + " (" + integer_range(as) + ")");
      break;
    default: throw ArgumentError("variable \"" + v.name + "\" cannot be passed as " + std::string(name(as)));
  }
  return bits;
}

void save_dirty_programs(DeviceImpl& d) {
  if (!d.programs_dirty.exchange(false)) return;
  std::lock_guard<std::mutex> lock(d.programs_mu);
  for (auto& [_, w] : d.programs)
    if (auto p = w.lock(); p && p->dirty.exchange(false)) p->save();
}

void run_item_eager(const ExecItem& item) { kind_of(item).run_eager(item); }

}  // namespace detail

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
  for (size_t i = 0; i < args.size(); ++i) {
    Arg& a = args[i];
    const KernelParam& p = params[i];
    if (p.is_pointer && p.space == AddressSpace::local) {
      if (a.kind != Arg::Kind::local || a.local_bytes == 0) throw ArgumentError(where(i) + ": expected __local memory (encore::LocalMem{bytes})");
    } else if (p.is_pointer) {
      if (a.kind != Arg::Kind::buffer) throw ArgumentError(where(i) + ": expected a buffer");
      if (!a.buf) throw ArgumentError(where(i) + ": null buffer");
      if (a.buf.impl()->dev != shared_impl())
        throw ArgumentError(where(i) + ": buffer " + a.buf.describe() + " is not on " + id());
      if (!p.accepts(a.buf.dtype(), a.buf.count())) throw ArgumentError(where(i) + ": " + pointee_mismatch(p, a.buf));
      if (a.access == Access::none) a.access = p.default_access();
      if (p.default_access() == Access::in && a.access != Access::in)
        throw ArgumentError(where(i) + ": a const/__constant parameter cannot be written (access " + encore::name(a.access) + ")");
    } else if (a.kind == Arg::Kind::bytes || p.by_value_aggregate()) {
      check_by_value(p, a, where(i));
    } else {
      if (!p.scalar) throw ArgumentError(where(i) + ": unsupported parameter type " + p.type_name);
      if (a.kind != Arg::Kind::scalar && a.kind != Arg::Kind::variable)
        throw ArgumentError(where(i) + ": expected a " + std::string(encore::name(*p.scalar)) + " scalar");
      if (a.dtype != *p.scalar) adapt_scalar(a, *p.scalar, [&] { return where(i); });
      if (*p.scalar == DType::f16 && !supports(DType::f16))
        throw ArgumentError(where(i) + ": a by-value half needs cl_khr_fp16, which " + id() + " (" + info().name + ") does not report");
    }
  }
  check_local_memory(*ki.program->dev, *ki.eager, args, k.name());
  if (!current_recorder() && debug_level() < 2 && !trace_active()) {
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
  run_item_eager(item);
  record_item(std::move(item));
}

void Device::run_native(std::shared_ptr<const NativeCall> call, std::vector<Arg> buffers, std::string name) const {
  if (!call) throw ArgumentError("native call: null");
  if (call->dev != shared_impl()) throw ArgumentError("native call " + name + ": made for another device than " + id());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Arg& a = buffers[i];
    std::string where = "native call " + name + " buffer " + std::to_string(i);
    if (a.kind != Arg::Kind::buffer || !a.buf) throw ArgumentError(where + ": expected a buffer (encore::in/out/inout(buf))");
    if (a.access == Access::none)
      throw ArgumentError(where + ": state its access with encore::in, encore::out or encore::inout (encore cannot see what native code does)");
    if (a.buf.impl()->dev != shared_impl()) throw ArgumentError(where + ": " + a.buf.describe() + " is not on " + id());
  }
  ExecItem item;
  item.kind = ItemKind::native;
  item.native = std::move(call);
  item.args = std::move(buffers);
  item.name = std::move(name);
  run_item_eager(item);
  record_item(std::move(item));
}

void Device::copy(const Buffer& dst, const Buffer& src) const {
  if (!dst || !src) throw ArgumentError("copy: null buffer");
  if (dst.impl()->dev != shared_impl()) throw ArgumentError("copy: destination " + dst.describe() + " is not on " + id());
  if (dst.nbytes() != src.nbytes())
    throw ArgumentError("copy: sizes differ: destination " + dst.describe() + " has " + std::to_string(dst.nbytes()) + " bytes, source " +
                        src.describe() + " has " + std::to_string(src.nbytes()));
  // OpenCL rejects overlapping copies (CL_MEM_COPY_OVERLAP) where the NULL device would memmove:
  // one clear error on every device instead
  if (dst.overlaps(src))
    throw ArgumentError("copy: destination " + dst.describe() + " and source " + src.describe() + " overlap");
  ExecItem item;
  item.kind = ItemKind::copy;
  item.dst = dst;
  item.src = src;
  run_item_eager(item);
  record_item(std::move(item));
}

void Device::run(const ExecItem& item) const { detail::kind_of(item).submit(item); }

void Buffer::copyin_bytes(const void* src, size_t n) const {
  if (!impl_) throw ArgumentError("copyin: null buffer");
  if (n != impl_->nbytes)
    throw ArgumentError("copyin: " + std::to_string(n) + " bytes given, " + describe() + " holds " + std::to_string(impl_->nbytes) +
                        " (a partial copyin takes an offset: copyin(data, offset))");
  copyin_bytes(src, n, 0);
}

// The byte range [off, off + n) of `b` as a buffer of its own: `b` itself when that is all of it,
// else a region (typed like `b` when the range holds whole elements, else bytes).
static Buffer transfer_range(const Buffer& b, size_t n, size_t off, const char* what) {
  size_t end = 0;
  if (n == 0 || __builtin_add_overflow(off, n, &end) || end > b.nbytes())
    throw ArgumentError(std::string(what) + ": " + std::to_string(n) + " bytes at byte offset " + std::to_string(off) +
                        " do not fit in " + b.describe() + " (" + std::to_string(b.nbytes()) + " bytes)");
  if (off == 0 && n == b.nbytes()) return b;
  const size_t es = size(b.dtype());
  return off % es == 0 && n % es == 0 ? region(b, b.dtype(), off, n / es) : region(b, DType::u8, off, n);
}

void Buffer::copyin_bytes(const void* src, size_t n, size_t off) const {
  if (!impl_) throw ArgumentError("copyin: null buffer");
  const Buffer dst = transfer_range(*this, n, off, "copyin");
  if (Recorder* r = current_recorder()) {
    // recorded as an upload holding a snapshot: replayed every call, like any other write
    ExecItem item;
    item.kind = ItemKind::upload;
    item.dst = dst;
    auto p = static_cast<const unsigned char*>(src);
    item.data = std::make_shared<const std::vector<unsigned char>>(p, p + n);
    // from a host input: replay uploads what that input holds then (as addresses: `src` may point anywhere)
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    for (size_t k = 0; k < r->hosts.size(); ++k)
      if (const uintptr_t h = reinterpret_cast<uintptr_t>(r->hosts[k].first), hn = r->hosts[k].second; at >= h && n <= hn && at - h <= hn - n) {
        item.host_slot = static_cast<int32_t>(k);
        item.host_offset = at - h;
        break;
      }
    run_item_eager(item);
    r->items.push_back(std::move(item));
    return;
  }
  BufferImpl& d = *dst.impl();
  d.ensure_allocated();
  enqueue_upload(d, static_cast<const unsigned char*>(src), n, true);
  d.bump();
}

void Buffer::copyout_bytes(void* dst, size_t n) const {
  if (!impl_) throw ArgumentError("copyout: null buffer");
  if (n != impl_->nbytes)
    throw ArgumentError("copyout: " + std::to_string(n) + " bytes requested, " + describe() + " holds " + std::to_string(impl_->nbytes) +
                        " (a partial copyout takes an offset: copyout(data, offset))");
  copyout_bytes(dst, n, 0);
}

void Buffer::copyout_bytes(void* dst, size_t n, size_t off) const {
  if (!impl_) throw ArgumentError("copyout: null buffer");
  if (Recorder* r = current_recorder(); r && !r->allow_copyout)
    throw JitError("copyout of " + describe() +
                   " during a capture: its value would steer later host code, which replay never re-runs (frozen silently). "
                   "Keep host reads out of the captured step, or set CaptureOptions::allow_copyout (JitOptions::capture.allow_copyout) to accept a frozen value");
  transfer_range(*this, n, off, "copyout");
  impl_->ensure_allocated();
  impl_->dev->read(impl_->root()->mem, impl_->offset + off, dst, n);
}

}  // namespace encore
