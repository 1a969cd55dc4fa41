#pragma once
// The C API's plumbing: one handle table (opaque handles are slot index + generation, checked on
// every call, so a NULL, destroyed, garbage or wrong-type handle is an error, never a crash), the
// objects behind handles, and guard(), which turns every C++ exception into a status + message.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/c_handles.hpp"
#include "encore/device.hpp"
#include "encore/encore.h"
#include "encore/error.hpp"
#include "encore/event.hpp"
#include "encore/execution_unit.hpp"
#include "encore/program.hpp"
#include "encore/variable.hpp"

namespace encore::capi {

enum class Kind : uint8_t { device = 1, buffer, program, kernel, variable, capture, unit, jit, event, size_expr };
const char* kind_name(Kind k);  // "encore_buffer"

struct Object {
  virtual ~Object() = default;
};

// An error raised by the C layer itself, with its status.
class StatusError : public Error {
 public:
  StatusError(encore_status s, const std::string& what) : Error(what), status(s) {}
  encore_status status;
};

[[noreturn]] void fail(encore_status s, const std::string& what);
// Throws INVALID_ARGUMENT "<what> is NULL" when p is null.
template <class P> void need(const P* p, const char* what) {
  if (!p) fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

// A kernel argument from its C form (args[i], for messages).
Arg to_arg(const encore_arg& a, size_t i);

// Registers an object; returns its handle value.
uintptr_t add_object(Kind k, std::shared_ptr<Object> obj);
// The live object behind a handle of kind k; INVALID_HANDLE otherwise. `what` names the parameter.
std::shared_ptr<Object> get_object(uintptr_t h, Kind k, const char* what);
// The live object behind h when it is one of kind k, else null (never throws: for liveness checks).
std::shared_ptr<Object> find_object(uintptr_t h, Kind k) noexcept;
// Unregisters and returns it (the caller lets it go outside the table's lock).
std::shared_ptr<Object> remove_object(uintptr_t h, Kind k, const char* what);

template <class H> uintptr_t raw(H h) { return reinterpret_cast<uintptr_t>(h); }

struct DeviceObj : Object { Device dev; };
struct BufferObj : Object { Buffer buf; };
struct ProgramObj : Object { Program prog; };
struct KernelObj : Object { Kernel kernel; };
struct VariableObj : Object { Variable var; explicit VariableObj(Variable v) : var(std::move(v)) {} };
struct SizeExprObj : Object { Size size; explicit SizeExprObj(Size s) : size(std::move(s)) {} };
struct CaptureObj : Object { std::unique_ptr<Capture> cap; };
struct UnitObj : Object {
  ExecutionUnit unit;
  std::vector<std::pair<std::string, Buffer>> named;  // what its maker named (encore_unit_buffer)
};
// Completion of enqueued work: complete when all parts are (no parts: complete already).
struct EventObj : Object { std::vector<Event> parts; };
struct JitObj;

template <class T> struct KindOf;
template <> struct KindOf<DeviceObj> { static constexpr Kind k = Kind::device; using H = encore_device; };
template <> struct KindOf<BufferObj> { static constexpr Kind k = Kind::buffer; using H = encore_buffer; };
template <> struct KindOf<ProgramObj> { static constexpr Kind k = Kind::program; using H = encore_program; };
template <> struct KindOf<KernelObj> { static constexpr Kind k = Kind::kernel; using H = encore_kernel; };
template <> struct KindOf<VariableObj> { static constexpr Kind k = Kind::variable; using H = encore_variable; };
template <> struct KindOf<SizeExprObj> { static constexpr Kind k = Kind::size_expr; using H = encore_size_expr; };
template <> struct KindOf<CaptureObj> { static constexpr Kind k = Kind::capture; using H = encore_capture; };
template <> struct KindOf<UnitObj> { static constexpr Kind k = Kind::unit; using H = encore_unit; };
template <> struct KindOf<JitObj> { static constexpr Kind k = Kind::jit; using H = encore_jit; };
template <> struct KindOf<EventObj> { static constexpr Kind k = Kind::event; using H = encore_event; };

// Typed access: get<BufferObj>(handle, "buf").
template <class T, class H> std::shared_ptr<T> get(H h, const char* what) {
  static_assert(std::is_same_v<H, typename KindOf<T>::H>, "handle type does not match the object type");
  return std::static_pointer_cast<T>(get_object(raw(h), KindOf<T>::k, what));
}
// Element i of a handle array, named "array[i]" in the error (the name is built only on failure).
template <class T, class H> std::shared_ptr<T> get_at(H h, const char* array, size_t i) {
  try {
    return get<T>(h, array);
  } catch (const StatusError&) {
    return get<T>(h, (std::string(array) + "[" + std::to_string(i) + "]").c_str());  // throws again, named
  }
}
// Registers obj and stores its handle in *out (out checked first by the caller).
template <class T> void put(std::shared_ptr<T> obj, typename KindOf<T>::H* out) {
  *out = reinterpret_cast<typename KindOf<T>::H>(add_object(KindOf<T>::k, std::move(obj)));
}
template <class T, class H> encore_status destroy(const char* fn, H h);

// The status of this thread's last failed call (with encore_last_error()'s message).
encore_status last_status() noexcept;
// Runs body; maps exceptions to a status and sets this thread's last error, prefixed by `fn`
// (set_error and current_exception_status: encore/c_handles.hpp).
template <class F> encore_status guard(const char* fn, F&& body) noexcept {
  try {
    body();
    return ENCORE_OK;
  } catch (...) {
    return current_exception_status(fn);
  }
}

template <class T, class H> encore_status destroy(const char* fn, H h) {
  std::shared_ptr<Object> keep;
  encore_status s = guard(fn, [&] { keep = remove_object(raw(h), KindOf<T>::k, "handle"); });
  if (s != ENCORE_OK) return s;
  return guard(fn, [&] { keep.reset(); });  // a destructor that throws still gives a status
}

// An enum field or parameter from C as its integer: C may store any int there, and loading a value
// outside the enumerators through the enum type is undefined behaviour in C++ (UBSan: -fsanitize=enum).
template <class E> int32_t enum_bits(const E& e) noexcept {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int32_t));
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Bounds on counts a C caller passes, so a garbage value is a named error instead of a huge
// allocation (the header states them).
constexpr size_t kMaxOutputs = 1024;      // encore_jit_create's num_outputs
constexpr unsigned kMaxSplitParts = Device::max_split_parts;  // encore_device_split's parts

// Native callbacks (encore_enqueue_native) running on this thread. Calls that enqueue, record or
// run work, or change a unit or jit, refuse to run inside one: that work would not be part of the
// step (a capture would record it besides the callback, and every replay would issue it again).
struct NativeScope {
  NativeScope() noexcept;
  ~NativeScope();
  NativeScope(const NativeScope&) = delete;
  NativeScope& operator=(const NativeScope&) = delete;
};
// ENCORE_ERROR_JIT when called from inside a native callback; `what` names the call's effect.
void check_not_in_native(const char* what);

// Converters shared by the C API files.
DType to_dtype(int32_t t, const char* what);
inline DType to_dtype(const encore_dtype& t, const char* what) { return to_dtype(enum_bits(t), what); }
encore_dtype from_dtype(DType t);
void fill_stats(const UnitStats& s, encore_unit_stats* out);

// Events: the parts of every event in a wait list (checked: INVALID_HANDLE naming the entry), in a
// vector reused per thread, so waiting allocates nothing once it has grown.
const std::vector<Event>& wait_events(const encore_event* wait_list, size_t num_wait);
// Adds d to v when not there yet.
void add_device(std::vector<Device>& v, const Device& d);

}  // namespace encore::capi
