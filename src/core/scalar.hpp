#pragma once
// Integer conversions between element types and element values printed for messages (src/core/dtype.cpp).
#include <cstdint>
#include <string>
#include "encore/dtype.hpp"

namespace encore::detail {

// An integer of dtype `from` (its low size(from) bytes of `bits`) as dtype `to`: false when it does
// not fit. Both integer dtypes (bool is 0..1). No allocation (the replay path binds through it).
bool convert_integer(DType from, uint64_t bits, DType to, uint64_t& out);
// "i32 holds -2147483648 to 2147483647", for messages.
std::string integer_range(DType t);

// One element of dtype `t` at `p` (little-endian bytes), printed for messages (src/core/dtype.cpp).
std::string value_str(DType t, const void* p);

}  // namespace encore::detail
