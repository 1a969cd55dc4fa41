#pragma once
// TinyJit's argument handling, which must be templates: a call's arguments flattened into the
// buffers, variables, scalars, host spans and keys its signature is made of, and the Buffers of
// what the step returns, found and replaced. Not for direct use (encore/jit.hpp).
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/jit_options.hpp"
#include "encore/variable.hpp"

namespace encore::detail {

// A plain scalar argument as seen at capture.
struct ScalarSeen {
  uint64_t bits = 0;
  uint8_t size = 0;
  char kind = 'i';  // 'i' signed, 'u' unsigned, 'f' floating, 'e' enum: for messages
  bool operator==(const ScalarSeen&) const = default;
};

// A host span argument: host input `slot` of the call, in argument order.
struct HostSpan {
  const void* data = nullptr;
  size_t count = 0;     // elements
  uint8_t elem = 0;     // bytes per element
  size_t bytes() const { return count * elem; }
};

// The flattened arguments of one call: reused between calls, so flattening allocates nothing once
// the vectors have grown.
struct CallArgs {
  std::vector<Buffer> buffers;
  std::vector<BoundVar> vars;
  std::vector<ScalarSeen> scalars;
  std::vector<HostSpan> hosts;
  std::vector<int64_t> keys;
  void clear() { buffers.clear(); vars.clear(); scalars.clear(); hosts.clear(); keys.clear(); }
  // member by member (std::swap would move each vector three times)
  void swap(CallArgs& o) noexcept {
    buffers.swap(o.buffers);
    vars.swap(o.vars);
    scalars.swap(o.scalars);
    hosts.swap(o.hosts);
    keys.swap(o.keys);
  }
};

template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_std_span : std::false_type {};
template <class T, size_t N> struct is_std_span<std::span<T, N>> : std::true_type {};
// A span of host numbers: a host input (TinyJit's header comment).
template <class T> struct is_host_span : std::false_type {};
// a struct of plain bytes (per-call parameters for encore::bytes_from; never a Buffer or a BoundVar)
template <class T>
inline constexpr bool is_host_struct = std::is_class_v<T> && std::is_trivially_copyable_v<T> && !std::is_same_v<T, Key> && !is_std_span<T>::value;
template <class T, size_t N>
struct is_host_span<std::span<T, N>> : std::bool_constant<std::is_arithmetic_v<std::remove_cv_t<T>> || is_host_struct<std::remove_cv_t<T>>> {};
template <class T> struct is_tuple_like : std::false_type {};
template <class... T> struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class T> void flatten(CallArgs& out, const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    out.buffers.push_back(v);
  } else if constexpr (std::is_same_v<U, BoundVar>) {
    out.vars.push_back(v);
  } else if constexpr (std::is_same_v<U, Key>) {
    out.keys.push_back(v.value);
  } else if constexpr (is_host_span<U>::value) {
    using E = std::remove_cv_t<typename U::element_type>;
    if constexpr (std::is_arithmetic_v<E>) out.hosts.push_back(HostSpan{v.data(), v.size(), static_cast<uint8_t>(sizeof(E))});
    else out.hosts.push_back(HostSpan{v.data(), v.size_bytes(), 1});  // structs: counted in bytes
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value || is_std_span<U>::value) {
    for (const auto& e : v) flatten(out, e);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (flatten(out, e), ...); }, v);
  } else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    ScalarSeen s;
    if constexpr (std::is_floating_point_v<U>) {
      double d = static_cast<double>(v);  // long double too: compared as double
      std::memcpy(&s.bits, &d, 8);
      s.kind = 'f';
    } else {
      std::memcpy(&s.bits, &v, sizeof(U));
      s.kind = std::is_enum_v<U> ? 'e' : std::is_signed_v<U> ? 'i' : 'u';
    }
    s.size = static_cast<uint8_t>(sizeof(U));
    out.scalars.push_back(s);
  } else if constexpr (std::is_same_v<U, Variable>) {
    static_assert(!std::is_same_v<U, Variable>, "pass variables to a TinyJit bound: var.bind(value)");
  } else {
    static_assert(std::is_arithmetic_v<U>,
                  "TinyJit arguments must be Buffers, BoundVars, Keys, arithmetic values or enums, or "
                  "std::vector/array/span/tuple/pair of them; capture anything else in the closure");
  }
}

template <class T> void collect_outputs(std::vector<Buffer>& out, const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    out.push_back(v);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    for (const auto& e : v) collect_outputs(out, e);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (collect_outputs(out, e), ...); }, v);
  } else {
    static_assert(std::is_same_v<U, Buffer>, "a TinyJit callable returns Buffers: one, a tuple/pair, a vector or array, or nothing");
  }
}

// Rebuilds an output value with every Buffer replaced by f(buffer), in collect_outputs order.
template <class T, class Fn> T map_outputs(const T& v, Fn& f) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    return f(v);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    U r = v;
    for (auto& e : r) e = map_outputs(e, f);
    return r;
  } else {
    return std::apply([&](const auto&... e) { return U{map_outputs(e, f)...}; }, v);
  }
}

}  // namespace encore::detail
