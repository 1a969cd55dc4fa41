#include "encore/dtype.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace encore {

namespace {
constexpr std::string_view kNames[] = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
}

std::string_view name(DType t) { return kNames[static_cast<int>(t)]; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : all_dtypes)
    if (kNames[static_cast<int>(t)] == s) return t;
  return std::nullopt;
}

namespace detail {

// One element of dtype `t` at `p`, printed for messages.
std::string value_str(DType t, const void* p) {
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case DType::f32: return std::to_string(get(float{}));
    case DType::f64: return std::to_string(get(double{}));
    case DType::i8: return std::to_string(get(int8_t{}));
    case DType::i16: return std::to_string(get(int16_t{}));
    case DType::i32: return std::to_string(get(int32_t{}));
    case DType::i64: return std::to_string(get(int64_t{}));
    case DType::u8: return std::to_string(get(uint8_t{}));
    case DType::u16: return std::to_string(get(uint16_t{}));
    case DType::u32: return std::to_string(get(uint32_t{}));
    case DType::u64: return std::to_string(get(uint64_t{}));
    case DType::f16: return "f16 bits " + std::to_string(get(uint16_t{}));
  }
  return "?";
}

}  // namespace detail

}  // namespace encore
