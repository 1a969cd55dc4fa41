#include "core/size_ref.hpp"

#include "encore/error.hpp"
#include "core/size_ops.hpp"

namespace encore::detail {

namespace {
// Size nests at most kSizeMaxDepth operations deep, so a postfix run holds at most one value more.
constexpr size_t kStack = kSizeMaxDepth + 2;

void emit(const Size& s, const std::function<uint32_t(const Variable&)>& slot, SizeProgram& p) {
  if (s.op() == Size::Op::leaf) {
    SizeInstr in;
    in.mul = s.mul();
    in.add = s.add();
    if (s.var()) {
      const uint32_t v = slot(*s.var());
      in.var = static_cast<int32_t>(v);
      bool seen = false;
      for (uint32_t x : p.vars) seen = seen || x == v;
      if (!seen) p.vars.push_back(v);
    }
    p.code.push_back(in);
    return;
  }
  emit(s.lhs(), slot, p);
  emit(s.rhs(), slot, p);
  p.code.push_back(SizeInstr{s.op(), -1, 0, 0});
}
}  // namespace

SizeProgram compile_size(const Size& s, const std::function<uint32_t(const Variable&)>& slot) {
  SizeProgram p;
  p.source = s;
  emit(s, slot, p);
  return p;
}

int64_t eval_size(const SizeProgram& p, const std::vector<VarValue>& vals, const std::vector<Variable>& vars) {
  int64_t st[kStack];
  size_t n = 0;
  bool ok = true;
  for (const SizeInstr& in : p.code) {
    if (in.op == Size::Op::leaf) {
      int64_t r = in.add;
      if (in.var >= 0 && !affine_value(in.mul, vals[static_cast<size_t>(in.var)].i, in.add, &r)) {
        ok = false;
        break;
      }
      if (n == kStack) {  // not reached: Size bounds the nesting
        ok = false;
        break;
      }
      st[n++] = r;
      continue;
    }
    if (n < 2 || !size_op(in.op, st[n - 2], st[n - 1], &st[n - 2])) {
      ok = false;
      break;
    }
    --n;
  }
  if (ok && n == 1) return st[0];
  size_eval_failed(p.source, [&](const Variable& v) {
    for (size_t k = 0; k < vars.size(); ++k)
      if (vars[k] == v) return vals[k].i;
    return int64_t{0};
  });
}

void affine_size_failed(const SizeRef& s, const std::vector<VarValue>& vals, const std::vector<Variable>& vars) {
  const size_t k = static_cast<size_t>(s.var);
  size_eval_failed(Size(vars[k], s.mul, s.add), [&](const Variable&) { return vals[k].i; });
}

void check_size_range(const Size& s, bool local, const std::string& where) {
  Size::Range r;
  try {
    r = s.range();
  } catch (const ArgumentError& e) {
    throw JitError(where + ": " + e.what());
  }
  const int64_t low = local ? 1 : 0;
  if (r.lo < low)
    throw JitError(where + ": launch size " + s.str() + " may be " + (local ? "below 1" : "negative") + " (as low as " +
                   std::to_string(r.lo) + ") for values in its variables' ranges; clamp it with max(" + s.str() + ", " +
                   std::to_string(low) + ") or narrow the ranges");
}

}  // namespace encore::detail
