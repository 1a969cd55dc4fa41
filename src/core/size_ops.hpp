#pragma once
// The arithmetic of launch-size expressions, shared by Size (eager values, capture-time ranges)
// and a unit's compiled sizes (src/core/size_ref.cpp), so the two cannot disagree on a value.
#include <algorithm>
#include <cstdint>

#include "encore/variable.hpp"

namespace encore::detail {

// How deep Size nests operations: bounds a unit's evaluation stack (size_ref.cpp) and the parser.
inline constexpr uint8_t kSizeMaxDepth = 32;

// mul * v + add into *out; false when the value does not fit int64. Exact in 128 bits: an affine
// form folded from steps that each fit ((n - 5) * 2 as 2n - 10) has a product that may not.
inline bool affine_value(int64_t mul, int64_t v, int64_t add, int64_t* out) {
  __extension__ typedef __int128 wide;
  const wide r = static_cast<wide>(mul) * v + add;
  if (r < INT64_MIN || r > INT64_MAX) return false;
  *out = static_cast<int64_t>(r);
  return true;
}

// a op b into *out; false on an int64 overflow or a division by zero.
inline bool size_op(Size::Op op, int64_t a, int64_t b, int64_t* out) {
  switch (op) {
    case Size::Op::add: return !__builtin_add_overflow(a, b, out);
    case Size::Op::sub: return !__builtin_sub_overflow(a, b, out);
    case Size::Op::mul: return !__builtin_mul_overflow(a, b, out);
    case Size::Op::floor_div:
    case Size::Op::ceil_div: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      int64_t q = a / b;
      const bool inexact = a % b != 0;
      const bool negative = (a < 0) != (b < 0);
      if (op == Size::Op::floor_div && inexact && negative) --q;
      if (op == Size::Op::ceil_div && inexact && !negative) ++q;  // the quotient is below INT64_MAX here
      *out = q;
      return true;
    }
    case Size::Op::min: *out = std::min(a, b); return true;
    case Size::Op::max: *out = std::max(a, b); return true;
    case Size::Op::leaf: break;
  }
  return false;
}

// Bounds of a op b for a in [a.lo, a.hi], b in [b.lo, b.hi]; false when some pair overflows or
// divides by zero. Each operation is monotone in each operand (division once the divisor's sign
// is fixed), so its extremes lie at the corners.
inline bool size_range_op(Size::Op op, Size::Range a, Size::Range b, Size::Range* out) {
  if ((op == Size::Op::floor_div || op == Size::Op::ceil_div) && b.lo <= 0 && b.hi >= 0) return false;
  int64_t c[4];
  if (!size_op(op, a.lo, b.lo, &c[0]) || !size_op(op, a.lo, b.hi, &c[1]) || !size_op(op, a.hi, b.lo, &c[2]) ||
      !size_op(op, a.hi, b.hi, &c[3]))
    return false;
  out->lo = *std::min_element(c, c + 4);
  out->hi = *std::max_element(c, c + 4);
  return true;
}

}  // namespace encore::detail
