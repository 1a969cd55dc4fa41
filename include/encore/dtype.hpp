#pragma once
// Element types of buffers and scalar kernel arguments.
//   encore::DType t = encore::dtype_of<float>;  // DType::f32, size(t) == 4
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "encore/export.hpp"

namespace encore {

enum class DType : uint8_t { f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 };

inline constexpr DType all_dtypes[] = {DType::f16, DType::f32, DType::f64, DType::i8,  DType::i16, DType::i32,
                                       DType::i64, DType::u8,  DType::u16, DType::u32, DType::u64};

constexpr size_t size(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: return 1;
    case DType::f16: case DType::i16: case DType::u16: return 2;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    default: return 8;
  }
}
constexpr bool is_float(DType t) { return t == DType::f16 || t == DType::f32 || t == DType::f64; }
constexpr bool is_signed(DType t) { return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64; }

// "f32", "i64", ...
ENCORE_API std::string_view name(DType t);
ENCORE_API std::optional<DType> parse_dtype(std::string_view s);

// f16 is stored as raw bits; use encore::half for typed copies of f16 buffers.
struct half { uint16_t bits; };

template <class T> inline constexpr bool has_dtype = false;
template <class T> inline constexpr DType dtype_of = DType::f32;
#define ENCORE_DTYPE_OF(T, D) \
  template <> inline constexpr bool has_dtype<T> = true; \
  template <> inline constexpr DType dtype_of<T> = DType::D;
ENCORE_DTYPE_OF(half, f16)
ENCORE_DTYPE_OF(float, f32)
ENCORE_DTYPE_OF(double, f64)
ENCORE_DTYPE_OF(int8_t, i8)
ENCORE_DTYPE_OF(int16_t, i16)
ENCORE_DTYPE_OF(int32_t, i32)
ENCORE_DTYPE_OF(int64_t, i64)
ENCORE_DTYPE_OF(uint8_t, u8)
ENCORE_DTYPE_OF(uint16_t, u16)
ENCORE_DTYPE_OF(uint32_t, u32)
ENCORE_DTYPE_OF(uint64_t, u64)
#undef ENCORE_DTYPE_OF

}  // namespace encore
