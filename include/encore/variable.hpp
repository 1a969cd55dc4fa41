#pragma once
// A named per-call value: an integer with bounds (positions, lengths) or a float parameter
// (learning rate, time step). Bind it each call; a new value never re-captures.
//   encore::Variable pos{"pos", 1, 4096};
//   dev.launch(k, {pos * 64}, {}, x, pos);   // pos as an int argument and in the launch size
//   jit(x, pos.bind(17));
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "encore/dtype.hpp"
#include "encore/export.hpp"

namespace encore {

enum class VarType : uint8_t { i64, f32, f64 };

namespace detail { struct VarState; }

struct BoundVar;
class Size;

class ENCORE_API Variable {
 public:
  // Integer variable with inclusive bounds; its value starts at min.
  Variable(std::string name, int64_t min, int64_t max);
  // Float variables: per-call float kernel arguments (never launch sizes).
  static Variable f32(std::string name, double min = -1e300, double max = 1e300);
  static Variable f64(std::string name, double min = -1e300, double max = 1e300);

  // Checks bounds (ArgumentError when outside), makes it the current value, returns the pair
  // for passing to a TinyJit.
  BoundVar bind(int64_t value) const;
  BoundVar bind(double value) const;
  BoundVar bind(int value) const;
  BoundVar bind(float value) const;

  const std::string& name() const;
  VarType type() const;
  bool is_float() const { return type() != VarType::i64; }
  int64_t min() const;
  int64_t max() const;
  double fmin() const;
  double fmax() const;
  int64_t value() const;   // current integer value
  double fvalue() const;   // current float value

  // As a kernel argument the variable is passed as i32 unless asked otherwise (i32/u32/i64/u64).
  struct As;
  As as(DType t) const;

  bool operator==(const Variable& o) const { return s_ == o.s_; }
  detail::VarState* state() const { return s_.get(); }
  const std::shared_ptr<detail::VarState>& shared_state() const { return s_; }

 private:
  explicit Variable(std::shared_ptr<detail::VarState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::VarState> s_;
};

// A value for a Variable, as passed to a TinyJit call or ExecutionUnit::update.
struct BoundVar {
  Variable var;
  int64_t i = 0;
  double f = 0;
};

inline BoundVar Variable::bind(int value) const { return bind(static_cast<int64_t>(value)); }
inline BoundVar Variable::bind(float value) const { return bind(static_cast<double>(value)); }

struct Variable::As {
  Variable var;
  DType type;
};

// A launch size: a literal, or mul * var + add for an integer Variable.
//   Size s = pos * 4 + 1;
class ENCORE_API Size {
 public:
  Size(int64_t v = 0) : add_(v) {}  // NOLINT: literal sizes convert implicitly
  Size(int v) : add_(v) {}          // NOLINT
  Size(size_t v) : add_(static_cast<int64_t>(v)) {}  // NOLINT
  Size(const Variable& v, int64_t mul = 1, int64_t add = 0);
  int64_t mul() const { return mul_; }
  int64_t add() const { return add_; }
  const Variable* var() const { return var_ ? &*var_ : nullptr; }
  // Value with the variable's current value (or the given one).
  int64_t eval() const;
  int64_t eval(int64_t var_value) const { return mul_ * var_value + add_; }

 private:
  int64_t mul_ = 0, add_ = 0;
  std::optional<Variable> var_;
};

inline Size operator*(const Variable& v, int64_t m) { return Size(v, m, 0); }
inline Size operator*(int64_t m, const Variable& v) { return Size(v, m, 0); }
inline Size operator+(const Variable& v, int64_t a) { return Size(v, 1, a); }
inline Size operator+(const Size& s, int64_t a) { return s.var() ? Size(*s.var(), s.mul(), s.add() + a) : Size(s.add() + a); }
inline Size operator-(const Size& s, int64_t a) { return s + (-a); }

}  // namespace encore
