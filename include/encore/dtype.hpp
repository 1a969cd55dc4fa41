#pragma once
// Element types of buffers and scalar kernel arguments.
//   encore::DType t = encore::dtype_of<float>;  // DType::f32, size(t) == 4
//   static_assert(encore::dtype_of<long long> == encore::DType::i64);
//
// Every C++ integral type has a dtype by its size and signedness (char as the platform's char,
// long long i64, size_t u64 on 64-bit hosts); bool is DType::boolean (1 byte, 0 or 1).
// f16 (encore::half) and bf16 (encore::bfloat16) are stored as raw 16-bit patterns. bf16 is a
// storage type: buffers, copies and uploads carry its bits and a kernel sees them as ushort; encore
// does no arithmetic on it. f16 buffers are storage on every device (vload_half / vstore_half are
// core OpenCL C); half arithmetic and by-value half parameters need cl_khr_fp16 (Device::supports).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "encore/export.hpp"

namespace encore {

// New types are added at the end: the values are stored in caches and mirrored by encore.h.
enum class DType : uint8_t { f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, boolean, bf16 };

inline constexpr DType all_dtypes[] = {DType::f16, DType::f32, DType::f64, DType::i8,  DType::i16, DType::i32,     DType::i64,
                                       DType::u8,  DType::u16, DType::u32, DType::u64, DType::boolean, DType::bf16};

constexpr size_t size(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: case DType::boolean: return 1;
    case DType::f16: case DType::bf16: case DType::i16: case DType::u16: return 2;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    default: return 8;
  }
}
// bf16 counts as a float format (its values are reals), though encore only stores it.
constexpr bool is_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }
constexpr bool is_signed(DType t) { return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64; }
// The integer types, bool included (a host bool converts to an integer parameter as 0 or 1).
constexpr bool is_integer(DType t) { return !is_float(t); }

// "f32", "i64", "bool", "bf16", ...
ENCORE_API std::string_view name(DType t);
ENCORE_API std::optional<DType> parse_dtype(std::string_view s);

// f16 and bf16 are stored as raw bits; use these for typed copies of such buffers (uint16_t works too).
struct half { uint16_t bits; };
struct bfloat16 { uint16_t bits; };

namespace detail {
template <class T> constexpr std::optional<DType> dtype_for() {
  if constexpr (std::is_same_v<T, bool>) {
    static_assert(sizeof(bool) == 1, "encore stores bool as one byte");
    return DType::boolean;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr bool s = std::is_signed_v<T>;
    switch (sizeof(T)) {
      case 1: return s ? DType::i8 : DType::u8;
      case 2: return s ? DType::i16 : DType::u16;
      case 4: return s ? DType::i32 : DType::u32;
      case 8: return s ? DType::i64 : DType::u64;
      default: return std::nullopt;  // __int128: no dtype
    }
  } else if constexpr (std::is_same_v<T, float>) {
    return DType::f32;
  } else if constexpr (std::is_same_v<T, double>) {
    return DType::f64;
  } else if constexpr (std::is_same_v<T, half>) {
    return DType::f16;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return DType::bf16;
  } else {
    return std::nullopt;
  }
}
}  // namespace detail

template <class T> inline constexpr bool has_dtype = detail::dtype_for<std::remove_cv_t<T>>().has_value();
// The dtype of host type T (f32 where T has none: check has_dtype first).
template <class T> inline constexpr DType dtype_of = detail::dtype_for<std::remove_cv_t<T>>().value_or(DType::f32);

}  // namespace encore
