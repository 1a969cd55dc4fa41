#include "encore/dtype.hpp"

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

}  // namespace encore
