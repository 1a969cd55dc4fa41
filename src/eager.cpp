// Eager execution: argument checks, ExecItem construction, running items, host transfers.
#include <chrono>
#include <limits>

#include "encore/device.hpp"
#include "encore/error.hpp"
#include "enqueue.hpp"

namespace encore {

using namespace detail;

namespace detail {

uint64_t var_arg_bits(const VarState& v, int64_t iv, double fv, DType as) {
  uint64_t bits = 0;
  auto too_big = [&](const char* t) {
    return ArgumentError("variable \"" + v.name + "\" = " + std::to_string(iv) + " does not fit its kernel argument type " + t);
  };
  switch (as) {
    case DType::i32:
      if (iv < std::numeric_limits<int32_t>::min() || iv > std::numeric_limits<int32_t>::max()) throw too_big("i32");
      { int32_t x = static_cast<int32_t>(iv); std::memcpy(&bits, &x, 4); }
      break;
    case DType::u32:
      if (iv < 0 || iv > std::numeric_limits<uint32_t>::max()) throw too_big("u32");
      { uint32_t x = static_cast<uint32_t>(iv); std::memcpy(&bits, &x, 4); }
      break;
    case DType::i64: std::memcpy(&bits, &iv, 8); break;
    case DType::u64:
      if (iv < 0) throw too_big("u64");
      std::memcpy(&bits, &iv, 8);
      break;
    case DType::f32: { float x = static_cast<float>(fv); std::memcpy(&bits, &x, 4); } break;
    case DType::f64: std::memcpy(&bits, &fv, 8); break;
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

static void eager_copy(const Buffer& dst, const Buffer& src) {
  BufferImpl& d = *dst.impl();
  BufferImpl& s = *src.impl();
  d.ensure_allocated();
  s.ensure_allocated();
  enqueue_copy(d, s, d.nbytes, nullptr);
  d.bump();
}

// Bumps the version of every buffer argument the item may write.
static void bump_written(const std::vector<Arg>& args) {
  for (const Arg& a : args)
    if (a.kind == Arg::Kind::buffer && (static_cast<uint8_t>(a.access) & static_cast<uint8_t>(Access::out))) a.buf.impl()->bump();
}

// Sets the arguments on the kernel's eager object and enqueues it; bumps what it writes. False when
// the launch was empty (a zero global size): nothing ran. dims/gws/lws/ns report what ran.
static bool run_kernel_eager(KernelImpl& k, const std::vector<Arg>& args, const Sizes& global, const Sizes& local,
                             LaunchDims& ld, uint64_t* ns, const ExecItem* traced = nullptr) {
  DeviceImpl& dev = *k.program->dev;
  int64_t g[3], l[3];
  for (uint8_t d = 0; d < global.n; ++d) g[d] = global.v[d].eval();
  for (uint8_t d = 0; d < local.n; ++d) l[d] = local.v[d].eval();
  try {
    resolve_launch(global.n, g, local.empty() ? nullptr : l, dev, *k.eager, ld, "launch");
  } catch (const ArgumentError& e) {  // the kernel's name only on failure: no string built per launch
    throw ArgumentError("kernel " + k.sig->name + ": " + e.what());
  }
  if (ld.empty) return false;
  const uint32_t dims = ld.dims;
  const size_t* lws = ld.lws;
  {
    std::lock_guard<std::mutex> lock(k.mu);
    BackendKernel& bk = *k.eager;
    for (uint32_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      switch (a.kind) {
        case Arg::Kind::buffer: bk.set_buffer(i, a.buf.impl()->handle()); break;
        case Arg::Kind::scalar: bk.set_arg(i, size(a.dtype), &a.bits); break;
        case Arg::Kind::local: bk.set_local(i, a.local_bytes); break;
        case Arg::Kind::bytes: bk.set_arg(i, a.value->size(), a.value->data()); break;
        case Arg::Kind::variable: {
          const VarState& v = *a.var->state();
          VarValue val = var_value(v);
          uint64_t bits = var_arg_bits(v, val.i, val.f, a.dtype);
          bk.set_arg(i, size(a.dtype), &bits);
          break;
        }
      }
    }
    if (traced) trace_item(dev, dev.launch_traced(bk, ld.dims, ld.gws, ld.lws), *traced, "eager", ld.dims, ld.gws);
    else enqueue_launch(dev, bk, ld, ns);
    std::array<size_t, 4> cfg{dims, lws[0], dims > 1 ? lws[1] : 0, dims > 2 ? lws[2] : 0};
    bool seen = false;
    for (const auto& c : k.seen_configs) seen = seen || c == cfg;
    if (!seen) {
      k.seen_configs.push_back(cfg);
      if (k.seen_configs.size() > 1 || !k.program->from_disk) {
        k.program->dirty = true;
        dev.programs_dirty = true;
      }
    }
  }
  bump_written(args);
  return true;
}

void run_item_eager(const ExecItem& item) {
  auto t0 = std::chrono::steady_clock::now();
  switch (item.kind) {
    case ItemKind::copy:
      eager_copy(item.dst, item.src);
      if (trace_active()) trace_item(*item.dst.impl()->dev, nullptr, item, "eager", 0, nullptr);
      if (debug_level() >= 2) debug_print_item(item, 0, nullptr, nullptr, 0, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      return;
    case ItemKind::upload: {
      BufferImpl& d = *item.dst.impl();
      d.ensure_allocated();
      enqueue_upload(d, item.data->data(), d.nbytes, true);
      d.bump();
      if (trace_active()) trace_item(*d.dev, nullptr, item, "eager", 0, nullptr);
      return;
    }
    case ItemKind::native: {
      std::vector<NativeMem*> mems;
      for (const Arg& a : item.args) {
        a.buf.impl()->ensure_allocated();
        mems.push_back(a.buf.impl()->handle());
      }
      enqueue_native(*item.native->dev, *item.native, mems.data(), mems.size());
      bump_written(item.args);
      if (trace_active()) trace_item(*item.native->dev, nullptr, item, "eager", 0, nullptr);
      return;
    }
    case ItemKind::kernel: break;
  }
  LaunchDims ld;
  uint64_t ns = 0;
  const bool traced = trace_active() && debug_level() < 2;
  if (!run_kernel_eager(*item.kernel.impl(), item.args, item.global, item.local, ld, debug_level() >= 2 ? &ns : nullptr, traced ? &item : nullptr))
    return;
  if (debug_level() >= 2)
    debug_print_item(item, ld.dims, ld.gws, ld.lws, ns, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

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

static void record(ExecItem&& item) {
  if (Recorder* r = current_recorder()) r->items.push_back(std::move(item));
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
      if (a.dtype != *p.scalar)
        throw ArgumentError(where(i) + ": expected " + std::string(encore::name(*p.scalar)) + ", got " + std::string(encore::name(a.dtype)) +
                            (a.kind == Arg::Kind::variable ? " (pass var.as(DType::...))" : " (cast the value to the parameter's type)"));
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
  record(std::move(item));
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
  record(std::move(item));
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
  record(std::move(item));
}

void Device::run(const ExecItem& item) const {
  if (item.kind == ItemKind::kernel) {
    launch_args(item.kernel, item.global, item.local, item.args, item.name, item.estimate);
  } else if (item.kind == ItemKind::copy) {
    copy(item.dst, item.src);
  } else if (item.kind == ItemKind::native) {
    run_native(item.native, item.args, item.name);
  } else {
    item.dst.copyin_bytes(item.data->data(), item.data->size());
  }
}

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
                   "Keep host reads out of the captured step, or set allow_copyout to accept a frozen value");
  transfer_range(*this, n, off, "copyout");
  impl_->ensure_allocated();
  impl_->dev->read(impl_->root()->mem, impl_->offset + off, dst, n);
  save_dirty_programs(*impl_->dev);
}

void run_schedule(std::span<const ExecItem> items, const std::map<Buffer, Buffer>& buffer_map, std::span<const BoundVar> var_vals) {
  VarScope scope(var_vals);
  auto map = [&](const Buffer& b) {
    if (!b) return b;
    if (auto it = buffer_map.find(b); it != buffer_map.end()) return it->second;
    return b;
  };
  for (const ExecItem& it : items) {
    ExecItem x = it;
    x.dst = map(x.dst);
    x.src = map(x.src);
    for (Arg& a : x.args)
      if (a.kind == Arg::Kind::buffer) a.buf = map(a.buf);
    x.device().run(x);
  }
}

}  // namespace encore
