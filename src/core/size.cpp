// encore::Size: launch sizes as literals, affine forms and small expression trees; their values,
// ranges and text form (read back by size_parse.cpp). A unit compiles them to slots
// (src/core/size_ref.cpp).
#include <string>

#include "encore/error.hpp"
#include "encore/variable.hpp"
#include "core/var_state.hpp"
#include "core/size_ops.hpp"
#include "core/size_ref.hpp"

namespace encore {

namespace detail {
// An operation over two sizes. Immutable once made, so sizes share subtrees freely.
struct SizeNode {
  Size::Op op;
  Size a, b;
  uint8_t depth;
};
}  // namespace detail

namespace {

const char* op_name(Size::Op op) {
  switch (op) {
    case Size::Op::add: return "+";
    case Size::Op::sub: return "-";
    case Size::Op::mul: return "*";
    case Size::Op::floor_div: return "/";
    case Size::Op::ceil_div: return "ceil_div";
    case Size::Op::min: return "min";
    case Size::Op::max: return "max";
    case Size::Op::leaf: break;
  }
  return "?";
}

bool same_var(const Variable* a, const Variable* b) { return a && b && a->state() == b->state(); }

// An affine form from folded constants into *out, or false when the operands do not fold or a
// constant does not fit int64 (the caller then keeps the operation as a node, whose evaluation
// reports the overflow for the values hit).
bool fold(Size::Op op, const Size& a, const Size& b, Size* out) {
  if (!a.is_affine() || !b.is_affine()) return false;
  int64_t m, c;
  if (a.is_literal() && b.is_literal()) {
    if (!detail::size_op(op, a.add(), b.add(), &c)) return false;
    *out = Size(c);
    return true;
  }
  switch (op) {
    case Size::Op::add:
    case Size::Op::sub: {
      const Variable* v = a.var() ? a.var() : b.var();
      if (a.var() && b.var() && !same_var(a.var(), b.var())) return false;
      if (!detail::size_op(op, a.var() ? a.mul() : 0, b.var() ? b.mul() : 0, &m) || !detail::size_op(op, a.add(), b.add(), &c))
        return false;
      *out = Size(*v, m, c);
      return true;
    }
    case Size::Op::mul: {
      if (!a.is_literal() && !b.is_literal()) return false;
      const Size& lin = a.is_literal() ? b : a;
      const int64_t k = a.is_literal() ? a.add() : b.add();
      if (__builtin_mul_overflow(lin.mul(), k, &m) || __builtin_mul_overflow(lin.add(), k, &c)) return false;
      *out = Size(*lin.var(), m, c);
      return true;
    }
    default: return false;
  }
}

// Precedence of a size's text form: 1 a sum, 2 a product, 3 an atom (number, name, call, -x).
int level(const Size& s) {
  switch (s.op()) {
    case Size::Op::leaf:
      if (!s.var()) return 3;
      if (s.add() != 0) return 1;
      return s.mul() == 1 || s.mul() == -1 ? 3 : 2;
    case Size::Op::add:
    case Size::Op::sub: return 1;
    case Size::Op::mul:
    case Size::Op::floor_div: return 2;
    default: return 3;
  }
}

void write(const Size& s, const std::function<std::string(const Variable&)>& name, std::string& out);

void write_at(const Size& s, int min_level, const std::function<std::string(const Variable&)>& name, std::string& out) {
  if (level(s) >= min_level) return write(s, name, out);
  out += '(';
  write(s, name, out);
  out += ')';
}

void write(const Size& s, const std::function<std::string(const Variable&)>& name, std::string& out) {
  if (s.op() == Size::Op::leaf) {
    if (!s.var()) {
      out += std::to_string(s.add());
      return;
    }
    if (s.mul() == -1) out += '-';
    else if (s.mul() != 1) out += std::to_string(s.mul()) + "*";
    out += name(*s.var());
    if (s.add() > 0) out += "+" + std::to_string(s.add());
    else if (s.add() == INT64_MIN) out += "+" + std::to_string(s.add());  // -INT64_MIN does not exist
    else if (s.add() < 0) out += "-" + std::to_string(-s.add());
    return;
  }
  const Size::Op op = s.op();
  if (level(s) == 3) {
    out += std::string(op_name(op)) + "(";
    write(s.lhs(), name, out);
    out += ", ";
    write(s.rhs(), name, out);
    out += ')';
    return;
  }
  const int l = level(s);
  write_at(s.lhs(), l, name, out);
  out += op_name(op);
  write_at(s.rhs(), l + 1, name, out);  // left-associative: a right operand of equal rank needs parentheses
}

std::string values_str(const Size& s, const std::function<int64_t(const Variable&)>& value) {
  std::vector<Variable> vs;
  s.variables(vs);
  std::string r;
  for (const Variable& v : vs) r += (r.empty() ? "" : ", ") + v.name() + " = " + std::to_string(value(v));
  return r;
}

// The value with each variable's value from `value`; false (and the failing operation in *bad) on
// an overflow or a division by zero.
template <class F> bool eval_with(const Size& s, const F& value, int64_t* out, const Size** bad) {
  if (s.op() == Size::Op::leaf) {
    if (!s.var()) {
      *out = s.add();
      return true;
    }
    int64_t r;
    if (!detail::affine_value(s.mul(), value(*s.var()), s.add(), &r)) {
      *bad = &s;
      return false;
    }
    *out = r;
    return true;
  }
  int64_t a, b;
  if (!eval_with(s.lhs(), value, &a, bad) || !eval_with(s.rhs(), value, &b, bad)) return false;
  if (!detail::size_op(s.op(), a, b, out)) {
    *bad = &s;
    return false;
  }
  return true;
}

[[noreturn]] void eval_failed(const Size& s, const Size& bad, const std::function<int64_t(const Variable&)>& value) {
  const bool div = bad.op() == Size::Op::floor_div || bad.op() == Size::Op::ceil_div;
  int64_t d = 0;
  const Size* inner = nullptr;
  const bool by_zero = div && eval_with(bad.rhs(), value, &d, &inner) && d == 0;
  if (s.is_affine() && s.var())
    throw ArgumentError("launch size " + std::to_string(s.mul()) + " * " + s.var()->name() + " + " + std::to_string(s.add()) +
                        " overflows int64 for " + values_str(s, value) + " (choose a smaller value or tighter variable bounds)");
  throw ArgumentError("launch size " + s.str() + (by_zero ? " divides by zero (" + bad.rhs().str() + " is 0)" : " overflows int64") +
                      " for " + values_str(s, value) + " (choose other values or tighter variable bounds)");
}

bool range_with(const Size& s, Size::Range* out, const Size** bad) {
  if (s.op() == Size::Op::leaf) {
    if (!s.var()) {
      *out = {s.add(), s.add()};
      return true;
    }
    // monotone in the variable: its extremes at the bounds' values
    int64_t lo, hi;
    if (!detail::affine_value(s.mul(), s.var()->min(), s.add(), &lo) || !detail::affine_value(s.mul(), s.var()->max(), s.add(), &hi)) {
      *bad = &s;
      return false;
    }
    *out = {std::min(lo, hi), std::max(lo, hi)};
    return true;
  }
  Size::Range a, b;
  if (!range_with(s.lhs(), &a, bad) || !range_with(s.rhs(), &b, bad)) return false;
  if (!detail::size_range_op(s.op(), a, b, out)) {
    *bad = &s;
    return false;
  }
  return true;
}

}  // namespace

Size::Size(const Variable& v, int64_t mul, int64_t add) : mul_(mul), add_(add), var_(v) {
  if (v.is_float()) throw ArgumentError("Variable \"" + v.name() + "\" is a float variable: it cannot be a launch size");
}

Size Size::make(Op op, const Size& a, const Size& b) {
  if (op == Op::leaf) throw ArgumentError("Size::make: an operation is needed, got Op::leaf");
  Size folded;
  if (fold(op, a, b, &folded)) return folded;
  const uint8_t depth = static_cast<uint8_t>(1 + std::max(a.node_ ? a.node_->depth : 0, b.node_ ? b.node_->depth : 0));
  if (depth > detail::kSizeMaxDepth)
    throw ArgumentError("launch size expression nests " + std::to_string(depth) + " operations deep, over the limit of " +
                        std::to_string(detail::kSizeMaxDepth) + " (" + std::string(op_name(op)) + " of " + a.str() + " and " + b.str() + ")");
  Size s;
  s.node_ = std::make_shared<const detail::SizeNode>(detail::SizeNode{op, a, b, depth});
  return s;
}

Size::Op Size::op() const { return node_ ? node_->op : Op::leaf; }

const Size& Size::lhs() const {
  if (!node_) throw ArgumentError("Size::lhs: " + str() + " is not an operation");
  return node_->a;
}
const Size& Size::rhs() const {
  if (!node_) throw ArgumentError("Size::rhs: " + str() + " is not an operation");
  return node_->b;
}

void Size::variables(std::vector<Variable>& out) const {
  if (node_) {
    node_->a.variables(out);
    node_->b.variables(out);
    return;
  }
  if (!var_.s_) return;
  for (const Variable& v : out)
    if (v == var_) return;
  out.push_back(var_);
}

int64_t Size::eval() const {
  if (!var_.s_ && !node_) return add_;
  auto value = [](const Variable& v) { return detail::var_value(*v.state()).i; };
  if (!node_) {  // the affine form: one lookup, no tree walk
    int64_t r;
    if (detail::affine_value(mul_, value(var_), add_, &r)) return r;
    eval_failed(*this, *this, value);
  }
  int64_t r = 0;
  const Size* bad = nullptr;
  if (!eval_with(*this, value, &r, &bad)) eval_failed(*this, *bad, value);
  return r;
}

int64_t Size::eval(int64_t var_value) const {
  auto value = [var_value](const Variable&) { return var_value; };
  int64_t r = 0;
  const Size* bad = nullptr;
  if (!eval_with(*this, value, &r, &bad)) eval_failed(*this, *bad, value);
  return r;
}

Size::Range Size::range() const {
  Range r;
  const Size* bad = nullptr;
  if (range_with(*this, &r, &bad)) return r;
  std::vector<Variable> vs;
  variables(vs);
  std::string ranges;
  for (const Variable& v : vs)
    ranges += (ranges.empty() ? "" : ", ") + v.name() + " in [" + std::to_string(v.min()) + ", " + std::to_string(v.max()) + "]";
  Range d{};
  const Size* inner = nullptr;
  const bool div = bad->op() == Op::floor_div || bad->op() == Op::ceil_div;
  const bool zero = div && range_with(bad->rhs(), &d, &inner) && d.lo <= 0 && d.hi >= 0;
  throw ArgumentError("launch size " + str() +
                      (zero ? " may divide by zero: its divisor " + bad->rhs().str() + " can be 0" : " may overflow int64 (in " + bad->str() + ")") +
                      " for values in its variables' ranges (" + ranges + "); narrow the ranges" +
                      (zero ? " or divide by max(divisor, 1)" : ""));
}

std::string Size::str() const {
  return str([](const Variable& v) { return v.name(); });
}

std::string Size::str(const std::function<std::string(const Variable&)>& name) const {
  std::string out;
  write(*this, name, out);
  return out;
}

bool Size::operator==(const Size& o) const {
  if (node_ || o.node_) {
    if (!node_ || !o.node_) return false;
    return node_ == o.node_ || (node_->op == o.node_->op && node_->a == o.node_->a && node_->b == o.node_->b);
  }
  return mul_ == o.mul_ && add_ == o.add_ && var_ == o.var_;
}

Size operator+(const Size& a, const Size& b) { return Size::make(Size::Op::add, a, b); }
Size operator-(const Size& a, const Size& b) { return Size::make(Size::Op::sub, a, b); }
Size operator*(const Size& a, const Size& b) { return Size::make(Size::Op::mul, a, b); }
Size operator/(const Size& a, const Size& b) { return Size::make(Size::Op::floor_div, a, b); }
Size operator-(const Size& a) { return Size::make(Size::Op::sub, Size(0), a); }
Size floor_div(const Size& a, const Size& b) { return Size::make(Size::Op::floor_div, a, b); }
Size ceil_div(const Size& a, const Size& b) { return Size::make(Size::Op::ceil_div, a, b); }
Size min(const Size& a, const Size& b) { return Size::make(Size::Op::min, a, b); }
Size max(const Size& a, const Size& b) { return Size::make(Size::Op::max, a, b); }

namespace detail {
void size_eval_failed(const Size& s, const std::function<int64_t(const Variable&)>& value) {
  int64_t r = 0;
  const Size* bad = nullptr;
  if (!eval_with(s, value, &r, &bad)) eval_failed(s, *bad, value);
  throw ArgumentError("launch size " + s.str() + ": evaluation failed for " + values_str(s, value));  // not reached
}
}  // namespace detail

}  // namespace encore
