#include "encore/dtype.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

namespace encore {

namespace {
constexpr std::string_view kNames[] = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "bf16"};
static_assert(std::size(kNames) == std::size(all_dtypes));
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
    case DType::bf16: return "bf16 bits " + std::to_string(get(uint16_t{}));
    case DType::boolean: {
      const uint8_t b = get(uint8_t{});
      return b == 0 ? "false" : b == 1 ? "true" : "bool byte " + std::to_string(b);
    }
  }
  return "?";
}

// The range of integer dtype `t` (bool: 0 and 1).
static void integer_bounds(DType t, int64_t& lo, uint64_t& hi) {
  lo = 0;
  switch (t) {
    case DType::boolean: hi = 1; break;
    case DType::u8: hi = UINT8_MAX; break;
    case DType::u16: hi = UINT16_MAX; break;
    case DType::u32: hi = UINT32_MAX; break;
    case DType::u64: hi = UINT64_MAX; break;
    case DType::i8: lo = INT8_MIN; hi = INT8_MAX; break;
    case DType::i16: lo = INT16_MIN; hi = INT16_MAX; break;
    case DType::i32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
  }
}

// Pure arithmetic, no allocation: replay's variable binding calls it.
bool convert_integer(DType from, uint64_t bits, DType to, uint64_t& out) {
  const unsigned shift = 64 - 8 * static_cast<unsigned>(size(from));
  if (shift) bits &= ~uint64_t{0} >> shift;
  bool negative = false;
  int64_t sv = 0;
  if (is_signed(from)) {
    sv = static_cast<int64_t>(bits << shift) >> shift;  // sign-extended
    negative = sv < 0;
  }
  int64_t lo;
  uint64_t hi;
  integer_bounds(to, lo, hi);
  if (negative ? sv < lo : bits > hi) return false;
  const uint64_t v = negative ? static_cast<uint64_t>(sv) : bits;
  const unsigned to_shift = 64 - 8 * static_cast<unsigned>(size(to));
  out = to_shift ? v & (~uint64_t{0} >> to_shift) : v;
  return true;
}

std::string integer_range(DType t) {
  int64_t lo;
  uint64_t hi;
  integer_bounds(t, lo, hi);
  return std::string(name(t)) + " holds " + std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace detail

}  // namespace encore
