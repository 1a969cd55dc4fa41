#pragma once
// A unit's launch sizes: affine ones inline in SizeRef, other expressions compiled to a short
// postfix program over variable slots. Evaluated at bind and at set_var, never in the replay loop.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "encore/variable.hpp"
#include "core/size_ops.hpp"
#include "core/var_state.hpp"

namespace encore::detail {

// A launch size: mul * variable + add (var -1: the literal add), or expression `expr` of the plan.
struct SizeRef {
  int32_t var = -1;
  int32_t expr = -1;  // index in Plan::size_exprs; var, mul and add unused
  int64_t mul = 0, add = 0;
};

// One step of a postfix program: a leaf pushes mul * vars[var] + add (var -1: add); an operation
// pops its two operands and pushes its result.
struct SizeInstr {
  Size::Op op = Size::Op::leaf;
  int32_t var = -1;
  int64_t mul = 0, add = 0;
};

struct SizeProgram {
  std::vector<SizeInstr> code;
  std::vector<uint32_t> vars;  // the slots it reads, once each
  Size source;                 // for messages
};

// `slot` gives a variable's slot in the unit.
SizeProgram compile_size(const Size& s, const std::function<uint32_t(const Variable&)>& slot);

// The value under the slots' values; ArgumentError naming the expression and the values on an
// overflow or a division by zero. Allocates nothing unless it fails.
int64_t eval_size(const SizeProgram& p, const std::vector<VarValue>& vals, const std::vector<Variable>& vars);

// Throws eval_size's ArgumentError for the affine `s`, whose value overflowed under `vals`.
[[noreturn]] void affine_size_failed(const SizeRef& s, const std::vector<VarValue>& vals, const std::vector<Variable>& vars);

// A unit's launch size under the slots' values, with the arithmetic of Size::eval (so an eager
// launch and its replay agree on every value): the affine form inline, as it is the common one, an
// expression by its program in `exprs`. Allocates nothing unless it fails.
inline int64_t eval_size(const SizeRef& s, const std::vector<SizeProgram>& exprs, const std::vector<VarValue>& vals,
                         const std::vector<Variable>& vars) {
  if (s.expr >= 0) return eval_size(exprs[static_cast<size_t>(s.expr)], vals, vars);
  if (s.var < 0) return s.add;
  int64_t r;
  if (!affine_value(s.mul, vals[static_cast<size_t>(s.var)].i, s.add, &r)) affine_size_failed(s, vals, vars);
  return r;
}

// Capture-time check of a size that is not affine over its variables' ranges: JitError naming
// `where` when it may overflow, divide by zero, be negative, or (a local size) be below 1.
void check_size_range(const Size& s, bool local, const std::string& where);

// size.cpp: throws the ArgumentError for an evaluation of `s` that failed under `value`.
[[noreturn]] void size_eval_failed(const Size& s, const std::function<int64_t(const Variable&)>& value);

}  // namespace encore::detail
