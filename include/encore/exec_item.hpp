#pragma once
// ExecItem: one unit of device work (a kernel launch, a buffer copy, a host upload, a fill, or
// native work that an OpenCL library or engine enqueues itself), as run eagerly and as recorded by a capture.
//   for (const encore::ExecItem& it : unit.items()) std::cout << it.describe() << "\n";
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/program.hpp"
#include "encore/variable.hpp"

namespace encore {

// 1 to 3 launch sizes; an empty Sizes as the local size lets encore choose.
struct ENCORE_API Sizes {
  std::array<Size, 3> v{};
  uint8_t n = 0;
  Sizes() = default;
  Sizes(std::initializer_list<Size> s);
  Sizes(const Size& s) : n(1) { v[0] = s; }  // NOLINT
  bool empty() const { return n == 0; }
  bool uses_variable() const;
};

// A buffer argument with its access stated at launch: encore::in(x), encore::out(y), encore::inout(z).
struct BufferArg {
  Buffer buf;
  Access access = Access::none;  // none: the parameter's default (KernelParam::default_access)
};
inline BufferArg in(Buffer b) { return {std::move(b), Access::in}; }
inline BufferArg out(Buffer b) { return {std::move(b), Access::out}; }
inline BufferArg inout(Buffer b) { return {std::move(b), Access::inout}; }

// __local memory of `bytes` for a `__local T*` parameter.
struct LocalMem {
  size_t bytes;
};

// The bytes of a by-value argument for a vector or struct parameter (float4, a struct the kernel
// takes by value), copied when made. Any trivially copyable value:
//   dev.launch(k, {n}, {}, x, encore::bytes(std::array<float, 4>{1, 2, 3, 4}), encore::bytes(params));
// The size is checked where the parameter's type tells it (KernelParam::value_bytes: vectors, 3-vectors
// taking 4 lanes, structs the source defines); otherwise encore trusts it. A struct must be laid out
// as OpenCL C lays it out (natural alignment; no pointers). Inside a capture it is a constant like a
// plain scalar (a value that differs between calls 0 and 1 is a JitError), unless its bytes come
// from a host input: see bytes_from.
namespace detail {
// Throws ArgumentError: bytes_from's range lies outside its host input.
[[noreturn]] ENCORE_API void bytes_outside(size_t offset, size_t n, size_t total);
}  // namespace detail

struct ByValue {
  std::shared_ptr<const std::vector<unsigned char>> data;
  const void* src = nullptr;  // where the bytes were copied from (a capture looks for a host input there)
  bool per_call = false;      // made by bytes_from: a capture requires a host input there
};
// `n` bytes from `p` (ArgumentError when n is 0, or p is null).
ENCORE_API ByValue bytes(const void* p, size_t n);
template <class T>
ByValue bytes(const T& v) {
  static_assert(std::is_trivially_copyable_v<T>, "encore::bytes: the value must be trivially copyable");
  static_assert(!std::is_pointer_v<T>, "encore::bytes: pass the value, not a pointer to it (or bytes(ptr, size))");
  return bytes(static_cast<const void*>(&v), sizeof(T));
}

// The per-call form: a by-value argument whose bytes are read, on every replay, from a host input
// (a std::span<const T> argument of the TinyJit call, Capture::add_host_input): a struct of
// per-frame parameters, a float4 that changes every step. A capture records the host input's slot,
// the byte offset and the size; each replay passes that call's bytes (no allocation), and the
// capture check compares that place, not the value. `n` bytes at byte `offset` of `host` (by
// default the rest of it); ArgumentError when they lie outside it, and JitError at capture when
// `host` is not a host input of that capture (a copy of one would be frozen).
//   auto step = [&](const Buffer& x, std::span<const Params> p) { dev.launch(k, {n}, {}, x, encore::bytes_from(p)); return x; };
//   jit(x, std::span<const Params>(&params, 1));   // params may change before every call
// A plain encore::bytes(p[0]) of a host input's element is per-call too (a capture finds the host
// input by its address, as a copyin from a span is found).
ENCORE_API ByValue bytes_from(const void* p, size_t n);
template <class T>
ByValue bytes_from(std::span<const T> host, size_t offset = 0, size_t n = SIZE_MAX) {
  static_assert(std::is_trivially_copyable_v<T>, "encore::bytes_from: the host input's elements must be trivially copyable");
  const size_t total = host.size_bytes();
  if (offset > total || (n != SIZE_MAX && n > total - offset)) detail::bytes_outside(offset, n, total);
  return bytes_from(reinterpret_cast<const unsigned char*>(host.data()) + offset, n == SIZE_MAX ? total - offset : n);
}

// One kernel argument as given to Device::launch.
struct ENCORE_API Arg {
  enum class Kind : uint8_t { buffer, scalar, variable, local, bytes };
  Kind kind = Kind::scalar;
  Buffer buf;
  Access access = Access::none;
  DType dtype = DType::i32;  // scalar or variable type as passed
  uint64_t bits = 0;         // scalar value, little-endian in the low bytes
  std::optional<Variable> var;
  size_t local_bytes = 0;
  // Scalars and variables of another type than their parameter: a host integer converts to an
  // integer parameter when it fits (ArgumentError naming the value and the range otherwise), an
  // integer Variable takes an integer parameter's type (each value checked when bound). exact
  // (set by Variable::as) keeps the type given: it must be the parameter's.
  bool exact = false;
  std::shared_ptr<const std::vector<unsigned char>> value;  // bytes: the by-value argument
  // bytes from a host input (bytes_from, or bytes of memory inside one; set by a capture): its
  // slot and the byte offset into it; replay passes that slot's bytes bound then. -1: `value`.
  int32_t host_slot = -1;
  uint64_t host_offset = 0;
  const void* src = nullptr;  // ByValue::src, read only while the launch is made
  bool per_call = false;      // ByValue::per_call

  Arg(const Buffer& b) : kind(Kind::buffer), buf(b) {}  // NOLINT
  Arg(const BufferArg& b) : kind(Kind::buffer), buf(b.buf), access(b.access) {}  // NOLINT
  Arg(const Variable& v);  // NOLINT: an integer parameter's type for integer variables, its own type for float ones
  Arg(const Variable::As& v) : kind(Kind::variable), dtype(v.type), var(v.var), exact(true) {}  // NOLINT
  Arg(LocalMem l) : kind(Kind::local), local_bytes(l.bytes) {}  // NOLINT
  Arg(ByValue b) : kind(Kind::bytes), value(std::move(b.data)), src(b.src), per_call(b.per_call) {}  // NOLINT
  // Any value with a dtype: every integral type (bool, char, long long, size_t, ...), float,
  // double, encore::half, encore::bfloat16.
  template <class T, class = std::enable_if_t<has_dtype<T>>>
  Arg(T v) : kind(Kind::scalar), dtype(dtype_of<T>) { std::memcpy(&bits, &v, sizeof(T)); }  // NOLINT
};

// What an item does. Each kind's operations (its buffers, its queue, how it runs eagerly, binds and
// replays) live in one place inside the library, so a kind is added there and here only.
// host, branch, loop: steps that decide (encore/control.hpp); a branch's alternatives and a loop's
// body follow their item directly in the step's item list (Flow::spans items each).
enum class ItemKind : uint8_t { kernel, copy, upload, native, fill, host, branch, loop };

namespace detail { struct DeviceImpl; struct NativeMem; struct Flow; }
// Native work (encore::opencl::enqueue_native, a Communicator collective): the library's own type.
struct NativeCall;

// A byte range of one storage (base buffer) that an item reads and/or writes.
struct StorageAccess {
  Buffer storage;                         // the base buffer (Buffer::base of buf)
  uint64_t lo = 0, hi = 0;                // byte range [lo, hi)
  Access access = Access::none;
  Buffer buf;                             // the handle as passed (maybe a view)
};

struct Estimate {
  double ops = 0, bytes = 0;
};

struct ENCORE_API ExecItem {
  ItemKind kind = ItemKind::kernel;
  // kernel
  Kernel kernel;
  std::vector<Arg> args;  // buffer args carry their resolved access (none only for a pointer the kernel never names)
  Sizes global, local;
  // copy: dst <- src; upload: dst <- *data; fill: every element of dst <- *data (one element's bytes)
  Buffer dst, src;
  std::shared_ptr<const std::vector<unsigned char>> data;
  // upload from a host input (a span passed to the TinyJit call, Capture::add_host_input): its
  // slot and the byte offset into it; replay uploads that slot's bytes bound then. -1: `data`,
  // the bytes seen at capture, on every replay.
  int32_t host_slot = -1;
  uint64_t host_offset = 0;
  // native: the call; its buffers (with their declared access) are `args`
  std::shared_ptr<const NativeCall> native;
  // host, branch, loop: the function, the child sequences' lengths, the loop's bound (src/exec/flow.hpp);
  // their Variables are `args` (a branch's condition, a loop's count, what a host item sets), a host
  // item's reads too
  std::shared_ptr<const detail::Flow> flow;
  // metadata
  std::string name;
  Estimate estimate;

  // The storage ranges this item touches, with their access.
  std::vector<StorageAccess> accesses() const;
  bool uses_variables() const;
  Device device() const;
  std::string describe() const;
};

}  // namespace encore
