#pragma once
// A named per-call value: an integer with bounds (positions, lengths) or a float parameter
// (learning rate, time step). Bind it each call; a new value never re-captures.
//   encore::Variable pos{"pos", 1, 4096};
//   dev.launch(k, {pos * 64}, {}, x, pos);   // pos as an int (or long, ...) argument and in the launch size
//   jit(x, pos.bind(17));
//
// Which value eager work sees (a binding belongs to a call and a thread):
// - inside a TinyJit call (warm-up, capture, verify, disabled), the BoundVars passed to that call
//   (or to an enclosing TinyJit call, or a BindingScope opened inside the step);
// - otherwise the value last bound with bind() on the calling thread;
// - otherwise the initial value (min for integers, 0 clamped to the bounds for floats).
// Inside a TinyJit call, a launch that uses a Variable the call was not passed is a JitError, on
// every path of the call (warm-up, capture, verify, ENCORE_JIT=0): replay binds only the values
// passed to each call, so the thread's bind() would reach eager calls but never replays.
//   t.bind(i); jit(x);          // JitError if the step launches with t
//   jit(x, t.bind(i));          // eager and replay both see i
// Reading value() on the host inside the step is not checked (it is host code: frozen at capture
// like any host value). Code of yours that runs again at each replay (a native call's function, a
// host item's) reads that call's BoundVars with value() as eager code does.
// A value bound on one thread never reaches another thread's work, so threads may share one
// Variable and bind it concurrently. An ExecutionUnit keeps its own values (bind_var / update).
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "encore/dtype.hpp"
#include "encore/export.hpp"

namespace encore {

enum class VarType : uint8_t { i64, f32, f64 };

namespace detail {
struct VarState;
struct SizeNode;
}  // namespace detail

struct BoundVar;
class Size;

class ENCORE_API Variable {
 public:
  // Integer variable with inclusive bounds; its value starts at min.
  Variable(std::string name, int64_t min, int64_t max);
  // Float variables: per-call float kernel arguments (never launch sizes). f32 bounds are clamped
  // to the float range, so a value that would reach the kernel as inf is out of bounds.
  static Variable f32(std::string name, double min = -1e300, double max = 1e300);
  static Variable f64(std::string name, double min = -1e300, double max = 1e300);

  // Checks bounds (ArgumentError when outside), makes it this thread's current value, returns the
  // pair for passing to a TinyJit. Any integral or floating type.
  BoundVar bind(int64_t value) const;
  BoundVar bind(double value) const;
  template <std::integral T> BoundVar bind(T value) const;
  BoundVar bind(float value) const;

  const std::string& name() const;
  VarType type() const;
  bool is_float() const { return type() != VarType::i64; }
  int64_t min() const;
  int64_t max() const;
  double fmin() const;
  double fmax() const;
  int64_t value() const;   // this thread's current integer value (see the rule above)
  double fvalue() const;   // this thread's current float value

  // As a kernel argument an integer variable takes the parameter's integer type (an int, a long, a
  // ulong parameter: each value is checked against that type when bound); as(t) fixes the type
  // (any integer dtype but bool), which must then be the parameter's. A float variable is passed
  // as its own type.
  struct As;
  As as(DType t) const;

  bool operator==(const Variable& o) const { return s_ == o.s_; }
  detail::VarState* state() const { return s_.get(); }
  const std::shared_ptr<detail::VarState>& shared_state() const { return s_; }

 private:
  friend class Size;  // holds a null Variable for a literal (smaller than an optional)
  explicit Variable(std::shared_ptr<detail::VarState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::VarState> s_;
};

// A value for a Variable, as passed to a TinyJit call or ExecutionUnit::update.
struct BoundVar {
  Variable var;
  int64_t i = 0;
  double f = 0;
};

// Makes `vars` the values that eager work on this thread sees until the scope ends (the innermost
// scope wins). TinyJit opens one around every eager run of its callable. `vars` must outlive it.
//   std::vector<encore::BoundVar> vals{k.bind(3)};
//   { encore::BindingScope s(vals); dev.launch(kern, {n}, {}, y, k); }   // k = 3 here
// A `call` scope (TinyJit's) is closed: a launch inside it that uses a Variable neither it nor a
// scope inside it holds is a JitError, instead of falling through to outer scopes' or the
// thread's values.
class ENCORE_API BindingScope {
 public:
  explicit BindingScope(std::span<const BoundVar> vars, bool call = false);
  ~BindingScope();
  BindingScope(const BindingScope&) = delete;
  BindingScope& operator=(const BindingScope&) = delete;
  std::span<const BoundVar> vars;
  const BindingScope* outer;
  bool call;
};

namespace detail {
// Throws ArgumentError: an unsigned value above INT64_MAX cannot be a variable's value.
[[noreturn]] ENCORE_API void variable_value_too_large(const Variable& v, unsigned long long value);
}  // namespace detail

template <std::integral T> BoundVar Variable::bind(T value) const {
  if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
    if (value > static_cast<T>(INT64_MAX)) detail::variable_value_too_large(*this, value);
  return bind(static_cast<int64_t>(value));
}
inline BoundVar Variable::bind(float value) const { return bind(static_cast<double>(value)); }

struct Variable::As {
  Variable var;
  DType type;
};

// A launch size: a literal, mul * var + add for an integer Variable, or a small integer
// expression of those with + - *, floor and ceiling division, min and max.
//   Size s = pos * 4 + 1;                        // the affine form: literals fold into it
//   Size rows = 16 * ((n - i) / 16 - 1);         // '/' is floor division (rounds toward -inf)
//   Size g = ceil_div(n, 64) * 64, w = min(n, Size(256));
//   Size p = Size::parse("16*((n-i)/16-1)", {n, i});
// Values are computed with int64 arithmetic that never wraps: an overflow or a division by zero
// is an ArgumentError naming the expression when it is evaluated (at an eager launch, and in an
// ExecutionUnit when it is bound or a variable changes: never inside replay). A capture checks
// every expression that is not affine over its Variables' whole ranges (interval arithmetic): one
// that may overflow, divide by zero, be negative (a global size; 0 is an empty launch, as in eager
// work) or be below 1 (a local size) for some values in those ranges is a JitError at capture.
// Clamp with max(expr, 0) or narrow the ranges. An affine size is checked for the value bound.
class ENCORE_API Size {
 public:
  enum class Op : uint8_t { leaf, add, sub, mul, floor_div, ceil_div, min, max };
  // Bounds of a size over its variables' ranges: lo <= value <= hi.
  struct Range {
    int64_t lo = 0, hi = 0;
  };

  Size() = default;
  // Any integral literal converts implicitly (int, uint32_t, size_t, long long, ...). An unsigned
  // value above INT64_MAX becomes negative and is rejected as a negative size at launch.
  template <std::integral T> Size(T v) : add_(static_cast<int64_t>(v)) {}  // NOLINT
  Size(const Variable& v, int64_t mul = 1, int64_t add = 0);  // NOLINT: a Variable is a size
  // `op` over a and b (not leaf). Literals and affine forms of one variable fold where the folded
  // constants fit int64; otherwise a node is kept. ArgumentError past 32 levels of nesting.
  static Size make(Op op, const Size& a, const Size& b);
  // Reads the text form (what str() writes): integers, the names of `vars`, + - * / (floor),
  // parentheses, min(a,b) max(a,b) ceil_div(a,b) floor_div(a,b). ArgumentError naming the
  // position on a syntax error or an unknown name.
  static Size parse(std::string_view text, const std::vector<Variable>& vars);

  Op op() const;
  // leaf: var (null for a literal), mul and add; an operation: var() null, mul() 0, add() 0
  int64_t mul() const { return mul_; }
  int64_t add() const { return add_; }
  const Variable* var() const { return var_.s_ ? &var_ : nullptr; }
  // an operation's operands (ArgumentError on a leaf)
  const Size& lhs() const;
  const Size& rhs() const;
  bool is_literal() const { return !var_.s_ && !node_; }
  bool is_affine() const { return !node_; }
  bool uses_variable() const { return var_.s_ || node_; }
  // Every variable it uses, once each, in order of first appearance.
  void variables(std::vector<Variable>& out) const;

  // Value with the variables' current values on this thread. ArgumentError on an int64 overflow
  // or a division by zero.
  int64_t eval() const;
  // Value with every variable it uses at `var_value` (meant for sizes of one variable).
  int64_t eval(int64_t var_value) const;
  // Over the variables' ranges; ArgumentError when some values in them overflow or divide by zero.
  Range range() const;
  // The text form, e.g. "16*((n-i)/16-1)"; names come from `name` when given.
  std::string str() const;
  std::string str(const std::function<std::string(const Variable&)>& name) const;
  // Same form, same constants, same variables (by identity).
  bool operator==(const Size& o) const;

 private:
  int64_t mul_ = 0, add_ = 0;
  Variable var_{std::shared_ptr<detail::VarState>()};  // null state: no variable
  std::shared_ptr<const detail::SizeNode> node_;
};

ENCORE_API Size operator+(const Size& a, const Size& b);
ENCORE_API Size operator-(const Size& a, const Size& b);
ENCORE_API Size operator*(const Size& a, const Size& b);
ENCORE_API Size operator/(const Size& a, const Size& b);  // floor division
ENCORE_API Size operator-(const Size& a);
ENCORE_API Size floor_div(const Size& a, const Size& b);
ENCORE_API Size ceil_div(const Size& a, const Size& b);
ENCORE_API Size min(const Size& a, const Size& b);
ENCORE_API Size max(const Size& a, const Size& b);

// The affine forms built inline (a launch often builds its sizes each call); the same results as
// the general operators above, which take over where a constant would not fit int64.
inline Size operator*(const Variable& v, int64_t m) { return Size(v, m, 0); }
inline Size operator*(int64_t m, const Variable& v) { return Size(v, m, 0); }
inline Size operator+(const Variable& v, int64_t a) { return Size(v, 1, a); }
inline Size operator+(const Size& s, int64_t a) {
  int64_t r;
  if (!s.is_affine() || __builtin_add_overflow(s.add(), a, &r)) return Size::make(Size::Op::add, s, Size(a));
  return s.var() ? Size(*s.var(), s.mul(), r) : Size(r);
}
inline Size operator-(const Size& s, int64_t a) {
  int64_t r;
  if (!s.is_affine() || __builtin_sub_overflow(s.add(), a, &r)) return Size::make(Size::Op::sub, s, Size(a));
  return s.var() ? Size(*s.var(), s.mul(), r) : Size(r);
}

}  // namespace encore
