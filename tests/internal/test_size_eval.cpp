// The two evaluators of launch-size expressions agree: Size::eval (eager launches, the tree) and a
// unit's compiled postfix program (bind and set_var), against an exact __int128 reference, on
// random trees and random values: the same value, or both an ArgumentError where the exact result
// does not fit int64 or a divisor is 0. Every in-range value lies inside Size::range().
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "encore/encore.hpp"
#include "core/size_ref.hpp"

namespace {

using encore::Size;
using encore::Variable;
using I128 = __int128;

struct Ref {
  bool ok = true;
  I128 v = 0;
};

bool fits(I128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

// Exact value, failing where encore must fail: an intermediate outside int64 or a division by zero.
Ref ref_eval(const Size& s, const std::vector<Variable>& vars, const std::vector<int64_t>& vals) {
  if (s.op() == Size::Op::leaf) {
    if (!s.var()) return {true, s.add()};
    for (size_t k = 0; k < vars.size(); ++k)
      if (vars[k] == *s.var()) {
        I128 v = I128(s.mul()) * vals[k];
        if (!fits(v)) return {false, 0};
        v += s.add();
        return {fits(v), v};
      }
    return {false, 0};
  }
  Ref a = ref_eval(s.lhs(), vars, vals), b = ref_eval(s.rhs(), vars, vals);
  if (!a.ok || !b.ok) return {false, 0};
  I128 r = 0;
  switch (s.op()) {
    case Size::Op::add: r = a.v + b.v; break;
    case Size::Op::sub: r = a.v - b.v; break;
    case Size::Op::mul: r = a.v * b.v; break;
    case Size::Op::floor_div:
    case Size::Op::ceil_div: {
      if (b.v == 0) return {false, 0};
      r = a.v / b.v;
      const bool inexact = a.v % b.v != 0, neg = (a.v < 0) != (b.v < 0);
      if (s.op() == Size::Op::floor_div && inexact && neg) --r;
      if (s.op() == Size::Op::ceil_div && inexact && !neg) ++r;
      break;
    }
    case Size::Op::min: r = a.v < b.v ? a.v : b.v; break;
    case Size::Op::max: r = a.v > b.v ? a.v : b.v; break;
    case Size::Op::leaf: break;
  }
  return {fits(r), r};
}

Size random_size(std::mt19937_64& rng, const std::vector<Variable>& vars, int depth) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  if (depth == 0 || pick(0, 3) == 0) {
    switch (pick(0, 3)) {
      case 0: return Size(pick(-20, 20));
      case 1: return Size(pick(0, 2) == 0 ? INT64_MAX - pick(0, 3) : INT64_MIN + pick(0, 3));
      default: return Size(vars[static_cast<size_t>(pick(0, static_cast<int64_t>(vars.size()) - 1))], pick(-3, 3), pick(-5, 5));
    }
  }
  static const Size::Op ops[] = {Size::Op::add, Size::Op::sub, Size::Op::mul, Size::Op::floor_div, Size::Op::ceil_div, Size::Op::min, Size::Op::max};
  return Size::make(ops[pick(0, 6)], random_size(rng, vars, depth - 1), random_size(rng, vars, depth - 1));
}

TEST(SizeEval, TreeAndCompiledProgramAgreeWithTheExactValue) {
  std::vector<Variable> vars{Variable{"a", -40, 40}, Variable{"b", 0, 9}, Variable{"c", -(int64_t{1} << 40), int64_t{1} << 40}};
  std::mt19937_64 rng(4);
  int values = 0, failures = 0;
  for (int t = 0; t < 3000; ++t) {
    Size s = random_size(rng, vars, 5);
    encore::detail::SizeProgram prog = encore::detail::compile_size(s, [&](const Variable& v) {
      for (uint32_t k = 0; k < vars.size(); ++k)
        if (vars[k] == v) return k;
      return uint32_t{0};
    });
    bool range_ok = true;
    Size::Range r{};
    try {
      r = s.range();
    } catch (const encore::ArgumentError&) {
      range_ok = false;
    }
    for (int k = 0; k < 8; ++k) {
      std::vector<int64_t> vals;
      std::vector<encore::BoundVar> bound;
      std::vector<encore::detail::VarValue> slots;
      for (const Variable& v : vars) {
        vals.push_back(std::uniform_int_distribution<int64_t>(v.min(), v.max())(rng));
        bound.push_back(v.bind(vals.back()));
        slots.push_back({vals.back(), 0});
      }
      Ref want = ref_eval(s, vars, vals);
      int64_t tree = 0, compiled = 0;
      bool tree_ok = true, compiled_ok = true;
      {
        encore::BindingScope scope(bound);
        try {
          tree = s.eval();
        } catch (const encore::ArgumentError&) {
          tree_ok = false;
        }
      }
      try {
        compiled = encore::detail::eval_size(prog, slots, vars);
      } catch (const encore::ArgumentError&) {
        compiled_ok = false;
      }
      ASSERT_EQ(tree_ok, want.ok) << s.str();
      ASSERT_EQ(compiled_ok, want.ok) << s.str();
      if (!want.ok) {
        ++failures;
        ASSERT_FALSE(range_ok) << s.str() << ": a value fails but the range did not say so";
        continue;
      }
      ++values;
      ASSERT_EQ(I128(tree), want.v) << s.str();
      ASSERT_EQ(compiled, tree) << s.str();
      if (range_ok) {
        ASSERT_LE(r.lo, tree) << s.str();
        ASSERT_LE(tree, r.hi) << s.str();
      }
    }
  }
  EXPECT_GT(values, 5000);
  EXPECT_GT(failures, 100);  // the sweep reaches overflows and divisions by zero
}

}  // namespace
