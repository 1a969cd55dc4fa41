// C API: the handle table, errors, devices, buffers, programs, kernels, variables, launches.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "capi/c_words.hpp"
#include "capi/handles.hpp"
#include "encore/exec_item.hpp"
#include "src/capi/capi_config.h"  // generated: ENCORE_CAPI_VERSION

namespace encore::capi {

namespace {

// Slot index in the low bits of a handle, generation in the high bits; 0 is never a handle.
constexpr unsigned kIndexBits = sizeof(uintptr_t) >= 8 ? 32 : 20;
constexpr uintptr_t kIndexMask = (uintptr_t(1) << kIndexBits) - 1;
constexpr uintptr_t kGenMask = sizeof(uintptr_t) >= 8 ? 0x7fffffffu : 0x7ffu;

struct Slot {
  std::shared_ptr<Object> obj;
  uintptr_t gen = 1;
  Kind kind = Kind::device;
};

struct Table {
  std::mutex mu;
  std::vector<Slot> slots;
  std::vector<size_t> free;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: handles may be released from static destructors
  return *t;
}

std::string describe_handle(uintptr_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(h));
  return buf;
}

// Finds the slot of h: INVALID_HANDLE with what was expected and found otherwise. Lock held.
Slot& find(Table& t, uintptr_t h, Kind k, const char* what) {
  if (h == 0) fail(ENCORE_ERROR_INVALID_HANDLE, std::string(what) + " is a NULL " + kind_name(k));
  uintptr_t index = (h & kIndexMask) - 1, gen = h >> kIndexBits;
  if ((h & kIndexMask) == 0 || index >= t.slots.size() || gen == 0 || gen > kGenMask)
    fail(ENCORE_ERROR_INVALID_HANDLE, std::string(what) + " (" + describe_handle(h) + ") is not an " + kind_name(k) +
                                          " handle (never created by encore, or corrupted)");
  Slot& s = t.slots[index];
  if (s.gen != gen || !s.obj)
    fail(ENCORE_ERROR_INVALID_HANDLE, std::string(what) + " is an " + kind_name(k) + " handle that was already destroyed");
  if (s.kind != k)
    fail(ENCORE_ERROR_INVALID_HANDLE, std::string(what) + ": expected an " + kind_name(k) + " handle, found an " +
                                          kind_name(s.kind));
  return s;
}

thread_local std::string last_error;

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::device: return "encore_device";
    case Kind::buffer: return "encore_buffer";
    case Kind::program: return "encore_program";
    case Kind::kernel: return "encore_kernel";
    case Kind::variable: return "encore_variable";
    case Kind::capture: return "encore_capture";
    case Kind::unit: return "encore_unit";
    case Kind::jit: return "encore_jit";
    case Kind::event: return "encore_event";
    case Kind::size_expr: return "encore_size_expr";
  }
  return "encore handle";
}

void fail(encore_status s, const std::string& what) { throw StatusError(s, what); }

uintptr_t add_object(Kind k, std::shared_ptr<Object> obj) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  size_t index;
  if (!t.free.empty()) {
    index = t.free.back();
    t.free.pop_back();
  } else {
    if (t.slots.size() >= kIndexMask) fail(ENCORE_ERROR_OUT_OF_MEMORY, "too many live encore handles");
    t.slots.emplace_back();
    index = t.slots.size() - 1;
  }
  Slot& s = t.slots[index];
  s.obj = std::move(obj);
  s.kind = k;
  return (s.gen << kIndexBits) | (index + 1);
}

std::shared_ptr<Object> get_object(uintptr_t h, Kind k, const char* what) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return find(t, h, k, what).obj;
}

std::shared_ptr<Object> find_object(uintptr_t h, Kind k) noexcept {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  uintptr_t index = (h & kIndexMask) - 1, gen = h >> kIndexBits;
  if ((h & kIndexMask) == 0 || index >= t.slots.size()) return nullptr;
  const Slot& s = t.slots[index];
  return s.gen == gen && s.kind == k ? s.obj : nullptr;
}

std::shared_ptr<Object> remove_object(uintptr_t h, Kind k, const char* what) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Slot& s = find(t, h, k, what);
  std::shared_ptr<Object> obj = std::move(s.obj);
  s.obj.reset();
  s.gen = s.gen >= kGenMask ? 1 : s.gen + 1;  // stale handles to this slot no longer match
  t.free.push_back(static_cast<size_t>(&s - t.slots.data()));
  return obj;
}

namespace {
thread_local encore_status last_status_ = ENCORE_OK;
}  // namespace
encore_status last_status() noexcept { return last_status_; }

encore_status set_error(const char* fn, encore_status s, const std::string& msg) noexcept {
  last_status_ = s;
  try {
    last_error.assign(fn);
    last_error += ": ";
    last_error += in_c_words(msg);  // the message in the C API's names (c_words.hpp)
  } catch (...) {
    last_error.clear();  // out of memory for the message itself: keep the status
  }
  return s;
}

encore_status current_exception_status(const char* fn) noexcept {
  try {
    throw;
  } catch (const StatusError& e) {
    return set_error(fn, e.status, e.what());
  } catch (const CompileError& e) {
    return set_error(fn, ENCORE_ERROR_COMPILE, e.what());  // what() ends with the build log
  } catch (const OpenCLError& e) {
    int st = e.status();
    bool oom = st == -4 /* CL_MEM_OBJECT_ALLOCATION_FAILURE */ || st == -5 /* CL_OUT_OF_RESOURCES */ ||
               st == -6 /* CL_OUT_OF_HOST_MEMORY */ || st == -61 /* CL_INVALID_BUFFER_SIZE */;
    return set_error(fn, oom ? ENCORE_ERROR_OUT_OF_MEMORY : ENCORE_ERROR_DEVICE, e.what());
  } catch (const DeviceError& e) {
    return set_error(fn, ENCORE_ERROR_DEVICE, e.what());
  } catch (const ArgumentError& e) {
    return set_error(fn, ENCORE_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const JitError& e) {
    return set_error(fn, ENCORE_ERROR_JIT, e.what());
  } catch (const std::bad_alloc&) {
    return set_error(fn, ENCORE_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(fn, ENCORE_ERROR_UNKNOWN, e.what());
  } catch (...) {
    return set_error(fn, ENCORE_ERROR_UNKNOWN, "unknown exception");
  }
}

namespace {
thread_local unsigned native_depth = 0;
}  // namespace

NativeScope::NativeScope() noexcept { ++native_depth; }
NativeScope::~NativeScope() { --native_depth; }

void check_not_in_native(const char* what) {
  if (native_depth)
    fail(ENCORE_ERROR_JIT, std::string("called from inside a native callback (encore_enqueue_native): a native callback cannot ") + what +
                               " through encore (that work would not be part of the step: a capture would record it besides the "
                               "callback, and every replay would issue it again). Enqueue native work on the queue the callback "
                               "receives, or issue the encore call before or after encore_enqueue_native");
}

DType to_dtype(int32_t t, const char* what) {
  switch (t) {
    case ENCORE_F16: return DType::f16;
    case ENCORE_F32: return DType::f32;
    case ENCORE_F64: return DType::f64;
    case ENCORE_I8: return DType::i8;
    case ENCORE_I16: return DType::i16;
    case ENCORE_I32: return DType::i32;
    case ENCORE_I64: return DType::i64;
    case ENCORE_U8: return DType::u8;
    case ENCORE_U16: return DType::u16;
    case ENCORE_U32: return DType::u32;
    case ENCORE_U64: return DType::u64;
    case ENCORE_BOOL: return DType::boolean;
    case ENCORE_BF16: return DType::bf16;
    default: break;
  }
  fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string(what) + ": expected an encore_dtype (ENCORE_F16 .. ENCORE_BF16), found " +
                                          std::to_string(t));
}

encore_dtype from_dtype(DType t) {
  switch (t) {
    case DType::f16: return ENCORE_F16;
    case DType::f32: return ENCORE_F32;
    case DType::f64: return ENCORE_F64;
    case DType::i8: return ENCORE_I8;
    case DType::i16: return ENCORE_I16;
    case DType::i32: return ENCORE_I32;
    case DType::i64: return ENCORE_I64;
    case DType::u8: return ENCORE_U8;
    case DType::u16: return ENCORE_U16;
    case DType::u32: return ENCORE_U32;
    case DType::u64: return ENCORE_U64;
    case DType::boolean: return ENCORE_BOOL;
    case DType::bf16: return ENCORE_BF16;
  }
  return ENCORE_DTYPE_DEFAULT;
}

void add_device(std::vector<Device>& v, const Device& d) {
  if (!d) return;
  for (const Device& e : v)
    if (e == d) return;
  v.push_back(d);
}

namespace {

std::string str_or_empty(const char* s) { return s ? std::string(s) : std::string(); }

// A launch size from the C form.
Size to_size(const encore_size& s, const char* what) {
  if (s.expr) {
    if (s.var) fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string(what) + ": a size with an expr has no var (set var to NULL)");
    return get<SizeExprObj>(s.expr, what)->size;
  }
  if (!s.var) return Size(s.add);
  auto v = get<VariableObj>(s.var, what);
  if (v->var.is_float())
    fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string(what) + ": variable \"" + v->var.name() +
                                            "\" is a float variable; launch sizes need an integer variable");
  return Size(v->var, s.mul, s.add);
}

}  // namespace

// The largest by-value argument encore_arg_bytes may give: OpenCL devices take a few KiB of
// arguments in all (CL_DEVICE_MAX_PARAMETER_SIZE, at least 1024 bytes).
constexpr size_t kMaxByValueBytes = 64 * 1024;

Arg to_arg(const encore_arg& a, size_t i) {
  auto what = [&] { return "args[" + std::to_string(i) + "]"; };  // built only for a message
  auto buffer = [&](Access acc) {
    auto b = get_at<BufferObj>(a.value.buffer, "args", i);
    return Arg(BufferArg{b->buf, acc});
  };
  const int32_t kind = enum_bits(a.kind);
  switch (kind) {
    case ENCORE_ARG_BUFFER: return buffer(Access::none);
    case ENCORE_ARG_BUFFER_IN: return buffer(Access::in);
    case ENCORE_ARG_BUFFER_OUT: return buffer(Access::out);
    case ENCORE_ARG_BUFFER_INOUT: return buffer(Access::inout);
    case ENCORE_ARG_I32: return Arg(a.value.i32);
    case ENCORE_ARG_U32: return Arg(a.value.u32);
    case ENCORE_ARG_I64: return Arg(a.value.i64);
    case ENCORE_ARG_U64: return Arg(a.value.u64);
    case ENCORE_ARG_F32: return Arg(a.value.f32);
    case ENCORE_ARG_F64: return Arg(a.value.f64);
    case ENCORE_ARG_VARIABLE: {
      auto v = get_at<VariableObj>(a.value.variable.var, "args", i);
      const int32_t as = enum_bits(a.value.variable.as);
      if (as == ENCORE_DTYPE_DEFAULT) return Arg(v->var);
      if (as < ENCORE_F16 || as > ENCORE_BF16) to_dtype(as, (what() + ".value.variable.as").c_str());
      return Arg(v->var.as(to_dtype(as, "")));
    }
    case ENCORE_ARG_LOCAL_BYTES: return Arg(LocalMem{a.value.local_bytes});
    case ENCORE_ARG_BYTES:
    case ENCORE_ARG_BYTES_FROM:
      // checked before a byte is read: a stale or garbage size would read past the caller's value
      if (a.value.bytes.size == 0 || a.value.bytes.size > kMaxByValueBytes)
        fail(ENCORE_ERROR_INVALID_ARGUMENT, what() + ".value.bytes.size: expected 1 to " + std::to_string(kMaxByValueBytes) +
                                                " bytes (a by-value vector or struct), found " + std::to_string(a.value.bytes.size));
      need(a.value.bytes.data, (what() + ".value.bytes.data").c_str());
      return Arg(kind == ENCORE_ARG_BYTES ? encore::bytes(a.value.bytes.data, a.value.bytes.size)
                                          : encore::bytes_from(a.value.bytes.data, a.value.bytes.size));
    default: break;
  }
  fail(ENCORE_ERROR_INVALID_ARGUMENT, what() + ".kind: expected an encore_arg_kind (ENCORE_ARG_BUFFER .. "
                                             "ENCORE_ARG_BYTES_FROM), found " + std::to_string(kind));
}

namespace {

// Host transfers move the whole buffer: nbytes must be its size.
void check_nbytes(const Buffer& b, size_t nbytes) {
  if (nbytes != b.nbytes())
    fail(ENCORE_ERROR_INVALID_ARGUMENT, "nbytes: expected " + std::to_string(b.nbytes()) + " (the size of " + b.describe() +
                                            "), found " + std::to_string(nbytes));
}

void check_dims(size_t dims) {
  if (dims < 1 || dims > 3)
    fail(ENCORE_ERROR_INVALID_ARGUMENT, "dims: expected 1, 2 or 3 launch dimensions, found " + std::to_string(dims));
}

// A by-value argument's size against its parameter's, where the kernel's source tells it, before
// its bytes are read: value.bytes.size is a field a caller may leave stale.
void check_bytes_size(const Kernel& k, const encore_arg& a, size_t i) {
  const int32_t kind = enum_bits(a.kind);
  if ((kind != ENCORE_ARG_BYTES && kind != ENCORE_ARG_BYTES_FROM) || i >= k.params().size()) return;
  const char* maker = kind == ENCORE_ARG_BYTES ? "encore_arg_bytes" : "encore_arg_bytes_from";
  const KernelParam& p = k.params()[i];
  const std::string where = "args[" + std::to_string(i) + "]: kernel " + k.name() + " argument " + std::to_string(i) + " (" +
                            p.type_name + " " + p.name + ")";
  if (p.is_pointer)
    fail(ENCORE_ERROR_INVALID_ARGUMENT, where + ": expected a buffer (encore_arg_buffer), found " + maker);
  if (p.value_bytes && a.value.bytes.size != p.value_bytes)
    fail(ENCORE_ERROR_INVALID_ARGUMENT,
         where + ": expected " + std::to_string(p.value_bytes) + " bytes (sizeof(" + p.type_name + ") in OpenCL C" +
             (!p.type_name.empty() && p.type_name.back() == '3' ? ", where a 3-vector takes the room of 4" : "") +
             "), found value.bytes.size " + std::to_string(a.value.bytes.size) + " (checked before reading the bytes)");
}

std::vector<Arg> to_args(const Kernel& k, const encore_arg* args, size_t num_args) {
  if (num_args) need(args, "args (with num_args > 0)");
  for (size_t i = 0; i < num_args; ++i) check_bytes_size(k, args[i], i);
  std::vector<Arg> v;
  v.reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) v.push_back(to_arg(args[i], i));
  return v;
}

void launch(encore_device dev, encore_kernel kernel, const Sizes& global, const Sizes& local, const encore_arg* args,
            size_t num_args, const char* name) {
  auto d = get<DeviceObj>(dev, "dev");
  auto k = get<KernelObj>(kernel, "kernel");
  if (size_t n = k->kernel.params().size(); num_args > n)  // before sizing anything by it
    fail(ENCORE_ERROR_INVALID_ARGUMENT, "num_args: kernel " + k->kernel.name() + " takes " + std::to_string(n) + " arguments, found " +
                                            std::to_string(num_args));
  d->dev.launch_args(k->kernel, global, local, to_args(k->kernel, args, num_args), str_or_empty(name));
}

}  // namespace

}  // namespace encore::capi

using namespace encore;
using namespace encore::capi;

extern "C" {

const char* encore_last_error(void) { return last_error.c_str(); }

const char* encore_status_name(encore_status status) {
  switch (enum_bits(status)) {
    case ENCORE_OK: return "ENCORE_OK";
    case ENCORE_ERROR_INVALID_ARGUMENT: return "ENCORE_ERROR_INVALID_ARGUMENT";
    case ENCORE_ERROR_INVALID_HANDLE: return "ENCORE_ERROR_INVALID_HANDLE";
    case ENCORE_ERROR_DEVICE: return "ENCORE_ERROR_DEVICE";
    case ENCORE_ERROR_COMPILE: return "ENCORE_ERROR_COMPILE";
    case ENCORE_ERROR_JIT: return "ENCORE_ERROR_JIT";
    case ENCORE_ERROR_OUT_OF_MEMORY: return "ENCORE_ERROR_OUT_OF_MEMORY";
    case ENCORE_ERROR_UNSUPPORTED: return "ENCORE_ERROR_UNSUPPORTED";
    case ENCORE_ERROR_WORKLOAD: return "ENCORE_ERROR_WORKLOAD";
    case ENCORE_ERROR_UNKNOWN: return "ENCORE_ERROR_UNKNOWN";
    default: break;
  }
  return "ENCORE_STATUS_UNKNOWN";
}

const char* encore_version(void) { return ENCORE_CAPI_VERSION; }

size_t encore_dtype_size(encore_dtype dtype) {
  const int32_t t = enum_bits(dtype);
  if (t < ENCORE_F16 || t > ENCORE_BF16) return 0;
  return size(to_dtype(t, "dtype"));
}

// ---- devices

encore_status encore_device_open(const char* name, encore_device* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto o = std::make_shared<DeviceObj>();
    o->dev = Device::open(name ? std::string_view(name) : std::string_view());
    put(std::move(o), out);
  });
}

encore_status encore_device_destroy(encore_device dev) { return destroy<DeviceObj>(__func__, dev); }

encore_status encore_device_info(encore_device dev, const char** id, const char** name) {
  return guard(__func__, [&] {
    auto d = get<DeviceObj>(dev, "dev");
    need(id, "id");
    need(name, "name");
    *id = d->dev.info().id.c_str();  // DeviceInfo lives with the device
    *name = d->dev.info().name.c_str();
  });
}

encore_status encore_device_supports(encore_device dev, encore_dtype dtype, int* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = 0;
    auto d = get<DeviceObj>(dev, "dev");
    *out = d->dev.supports(to_dtype(enum_bits(dtype), "dtype")) ? 1 : 0;
  });
}

encore_status encore_device_split(encore_device dev, unsigned parts, encore_device* out) {
  return guard(__func__, [&] {
    auto d = get<DeviceObj>(dev, "dev");
    need(out, "out");
    if (parts > kMaxSplitParts)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "parts: at most " + std::to_string(kMaxSplitParts) + " sub-devices, got " + std::to_string(parts));
    std::vector<std::shared_ptr<DeviceObj>> objs;
    for (Device& sub : d->dev.split(parts)) {
      objs.push_back(std::make_shared<DeviceObj>());
      objs.back()->dev = std::move(sub);
    }
    size_t made = 0;
    try {
      for (; made < objs.size(); ++made) put(std::move(objs[made]), &out[made]);
    } catch (...) {
      for (size_t i = 0; i < made; ++i) destroy<DeviceObj>(__func__, out[i]);
      throw;
    }
  });
}

encore_status encore_device_synchronize(encore_device dev) {
  return guard(__func__, [&] { get<DeviceObj>(dev, "dev")->dev.synchronize(); });
}

// ---- buffers

encore_status encore_buffer_alloc(encore_device dev, encore_dtype dtype, size_t count, encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto d = get<DeviceObj>(dev, "dev");
    auto o = std::make_shared<BufferObj>();
    o->buf = d->dev.alloc(to_dtype(dtype, "dtype"), count);
    put(std::move(o), out);
  });
}

encore_status encore_buffer_view(encore_buffer buf, size_t offset, size_t count, encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto b = get<BufferObj>(buf, "buf");
    auto o = std::make_shared<BufferObj>();
    o->buf = b->buf.view(offset, count);
    put(std::move(o), out);
  });
}

encore_status encore_buffer_as(encore_buffer buf, encore_dtype dtype, encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto b = get<BufferObj>(buf, "buf");
    auto o = std::make_shared<BufferObj>();
    o->buf = b->buf.as(to_dtype(dtype, "dtype"));
    put(std::move(o), out);
  });
}

encore_status encore_buffer_retain(encore_buffer buf, encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto o = std::make_shared<BufferObj>();
    o->buf = get<BufferObj>(buf, "buf")->buf;
    put(std::move(o), out);
  });
}

encore_status encore_buffer_destroy(encore_buffer buf) { return destroy<BufferObj>(__func__, buf); }

encore_status encore_buffer_get_info(encore_buffer buf, encore_buffer_info* out) {
  return guard(__func__, [&] {
    auto b = get<BufferObj>(buf, "buf");
    need(out, "out");
    out->dtype = from_dtype(b->buf.dtype());
    out->count = b->buf.count();
    out->nbytes = b->buf.nbytes();
    out->offset = b->buf.offset();
    out->is_view = b->buf.is_view() ? 1 : 0;
  });
}

encore_status encore_buffer_copyin(encore_buffer buf, const void* src, size_t nbytes) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a copyin");
    auto b = get<BufferObj>(buf, "buf");
    check_nbytes(b->buf, nbytes);
    if (nbytes) need(src, "src");
    b->buf.copyin_bytes(src, nbytes);
  });
}

encore_status encore_buffer_copyout(encore_buffer buf, void* dst, size_t nbytes) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a copyout");
    auto b = get<BufferObj>(buf, "buf");
    check_nbytes(b->buf, nbytes);
    if (nbytes) need(dst, "dst");
    b->buf.copyout_bytes(dst, nbytes);
  });
}

// Elements [offset, offset + count) of `b` as a byte range; INVALID_ARGUMENT when it does not fit
// (the message follows the function's name, which guard puts first).
static std::pair<size_t, size_t> element_range(const Buffer& b, size_t offset, size_t count) {
  const size_t es = size(b.dtype());
  size_t off = 0, n = 0, end = 0;
  if (count == 0 || __builtin_mul_overflow(offset, es, &off) || __builtin_mul_overflow(count, es, &n) ||
      __builtin_add_overflow(off, n, &end) || end > b.nbytes())
    fail(ENCORE_ERROR_INVALID_ARGUMENT, "offset, count: elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                                            std::to_string(count) + ") do not fit in " + b.describe() + " (" + std::to_string(b.count()) +
                                            " elements)");
  return {off, n};
}

encore_status encore_buffer_write(encore_buffer buf, size_t offset, const void* src, size_t count) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a write");
    auto b = get<BufferObj>(buf, "buf");
    auto [off, n] = element_range(b->buf, offset, count);
    need(src, "src");
    b->buf.copyin_bytes(src, n, off);
  });
}

encore_status encore_buffer_read(encore_buffer buf, size_t offset, void* dst, size_t count) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a read");
    auto b = get<BufferObj>(buf, "buf");
    auto [off, n] = element_range(b->buf, offset, count);
    need(dst, "dst");
    b->buf.copyout_bytes(dst, n, off);
  });
}

encore_status encore_buffer_fill(encore_buffer buf, const void* value, size_t value_size) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a fill");
    auto b = get<BufferObj>(buf, "buf");
    need(value, "value");
    b->buf.device().fill_bytes(b->buf, value, value_size);
  });
}

encore_status encore_buffer_touch(encore_buffer buf) {
  return guard(__func__, [&] { get<BufferObj>(buf, "buf")->buf.touch(); });
}

encore_status encore_buffer_set_name(encore_buffer buf, const char* name) {
  return guard(__func__, [&] {
    auto b = get<BufferObj>(buf, "buf");
    need(name, "name");
    b->buf.set_name(name);
  });
}

// ---- programs and kernels

encore_status encore_program_compile(encore_device dev, const char* source, const char* options, encore_program* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto d = get<DeviceObj>(dev, "dev");
    need(source, "source");
    auto o = std::make_shared<ProgramObj>();
    o->prog = d->dev.compile(source, str_or_empty(options));
    put(std::move(o), out);
  });
}

encore_status encore_program_destroy(encore_program prog) { return destroy<ProgramObj>(__func__, prog); }

encore_status encore_kernel_create(encore_program prog, const char* name, encore_kernel* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto p = get<ProgramObj>(prog, "prog");
    need(name, "name");
    auto o = std::make_shared<KernelObj>();
    o->kernel = p->prog.kernel(name);
    put(std::move(o), out);
  });
}

encore_status encore_kernel_destroy(encore_kernel kernel) { return destroy<KernelObj>(__func__, kernel); }

encore_status encore_kernel_work_group_info(encore_kernel kernel, encore_work_group_info* out) {
  return guard(__func__, [&] {
    need(out, "out");
    // the caller's struct may be an older (smaller) or newer (larger) version: fill what both know
    constexpr size_t first = offsetof(encore_work_group_info, compile_size) + sizeof out->compile_size;
    if (out->size < first)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "out->size: expected sizeof(encore_work_group_info) (at least " + std::to_string(first) +
                                              "), found " + std::to_string(out->size) + "; set it before the call");
    auto k = get<KernelObj>(kernel, "kernel");
    const WorkGroupInfo w = k->kernel.work_group_info();
    encore_work_group_info v{};
    v.size = out->size;
    v.max_size = w.max_size;
    v.preferred_multiple = w.preferred_multiple;
    v.local_mem_bytes = w.local_mem_bytes;
    v.private_mem_bytes = w.private_mem_bytes;
    for (int d = 0; d < 3; ++d) v.compile_size[d] = w.compile_size[d];
    std::memcpy(out, &v, std::min(out->size, sizeof v));
  });
}

// ---- variables

encore_status encore_variable_create_int(const char* name, int64_t min, int64_t max, encore_variable* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(name, "name");
    put(std::make_shared<VariableObj>(Variable(name, min, max)), out);
  });
}

encore_status encore_variable_create_f32(const char* name, double min, double max, encore_variable* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(name, "name");
    put(std::make_shared<VariableObj>(Variable::f32(name, min, max)), out);
  });
}

encore_status encore_variable_create_f64(const char* name, double min, double max, encore_variable* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(name, "name");
    put(std::make_shared<VariableObj>(Variable::f64(name, min, max)), out);
  });
}

encore_status encore_variable_destroy(encore_variable var) { return destroy<VariableObj>(__func__, var); }

// ---- size expressions

encore_status encore_size_expr_parse(const char* text, const encore_variable* vars, size_t num_vars, encore_size_expr* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    need(text, "text");
    if (num_vars) need(vars, "vars");
    std::vector<Variable> vs;
    for (size_t i = 0; i < num_vars; ++i) vs.push_back(get_at<VariableObj>(vars[i], "vars", i)->var);
    put(std::make_shared<SizeExprObj>(Size::parse(text, vs)), out);
  });
}

encore_status encore_size_expr_range(encore_size_expr expr, int64_t* lo, int64_t* hi) {
  return guard(__func__, [&] {
    need(lo, "lo");
    need(hi, "hi");
    Size::Range r = get<SizeExprObj>(expr, "expr")->size.range();
    *lo = r.lo;
    *hi = r.hi;
  });
}

encore_status encore_size_expr_eval(encore_size_expr expr, int64_t* value) {
  return guard(__func__, [&] {
    need(value, "value");
    *value = get<SizeExprObj>(expr, "expr")->size.eval();
  });
}

encore_status encore_size_expr_destroy(encore_size_expr expr) { return destroy<SizeExprObj>(__func__, expr); }

encore_status encore_variable_bind_int(encore_variable var, int64_t value, encore_bound_var* out) {
  return guard(__func__, [&] {
    BoundVar b = get<VariableObj>(var, "var")->var.bind(value);
    if (out) *out = encore_bound_var{var, b.i, b.f};
  });
}

encore_status encore_variable_bind_float(encore_variable var, double value, encore_bound_var* out) {
  return guard(__func__, [&] {
    BoundVar b = get<VariableObj>(var, "var")->var.bind(value);
    if (out) *out = encore_bound_var{var, b.i, b.f};
  });
}

// ---- launches and copies

encore_status encore_launch(encore_device dev, encore_kernel kernel, const size_t* global, const size_t* local,
                            size_t dims, const encore_arg* args, size_t num_args) {
  return guard(__func__, [&] {
    check_not_in_native("launch a kernel");
    check_dims(dims);
    need(global, "global");
    Sizes g, l;
    g.n = static_cast<uint8_t>(dims);
    for (size_t i = 0; i < dims; ++i) g.v[i] = Size(global[i]);
    if (local) {
      l.n = static_cast<uint8_t>(dims);
      for (size_t i = 0; i < dims; ++i) l.v[i] = Size(local[i]);
    }
    launch(dev, kernel, g, l, args, num_args, nullptr);
  });
}

encore_status encore_launch_sized(encore_device dev, encore_kernel kernel, const encore_size* global,
                                  const encore_size* local, size_t dims, const encore_arg* args, size_t num_args,
                                  const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("launch a kernel");
    check_dims(dims);
    need(global, "global");
    Sizes g, l;
    g.n = static_cast<uint8_t>(dims);
    for (size_t i = 0; i < dims; ++i) g.v[i] = to_size(global[i], "global");
    if (local) {
      l.n = static_cast<uint8_t>(dims);
      for (size_t i = 0; i < dims; ++i) l.v[i] = to_size(local[i], "local");
    }
    launch(dev, kernel, g, l, args, num_args, name);
  });
}

encore_status encore_copy(encore_device dev, encore_buffer dst, encore_buffer src) {
  return guard(__func__, [&] {
    check_not_in_native("enqueue a copy");
    auto d = get<DeviceObj>(dev, "dev");
    auto a = get<BufferObj>(dst, "dst");
    auto b = get<BufferObj>(src, "src");
    d->dev.copy(a->buf, b->buf);
  });
}

}  // extern "C"
