#include "encore/variable.hpp"

#include <algorithm>
#include <cmath>

#include "encore/error.hpp"
#include "internal.hpp"

namespace encore {

Variable::Variable(std::string name, int64_t min, int64_t max) : s_(std::make_shared<detail::VarState>()) {
  if (min > max)
    throw ArgumentError("Variable \"" + name + "\": min " + std::to_string(min) + " > max " + std::to_string(max));
  s_->name = std::move(name);
  s_->type = VarType::i64;
  s_->min = min;
  s_->max = max;
  s_->i = min;
}

static Variable make_float(std::string name, VarType t, double min, double max, Variable (*mk)(std::shared_ptr<detail::VarState>)) {
  if (!(min <= max)) throw ArgumentError("Variable \"" + name + "\": min > max");
  auto s = std::make_shared<detail::VarState>();
  s->name = std::move(name);
  s->type = t;
  s->fmin = min;
  s->fmax = max;
  s->f = std::clamp(0.0, min, max);
  return mk(std::move(s));
}

Variable Variable::f32(std::string name, double min, double max) {
  return make_float(std::move(name), VarType::f32, min, max, [](std::shared_ptr<detail::VarState> s) { return Variable(std::move(s)); });
}
Variable Variable::f64(std::string name, double min, double max) {
  return make_float(std::move(name), VarType::f64, min, max, [](std::shared_ptr<detail::VarState> s) { return Variable(std::move(s)); });
}

BoundVar Variable::bind(int64_t value) const {
  if (s_->type != VarType::i64) return bind(static_cast<double>(value));
  if (value < s_->min || value > s_->max)
    throw ArgumentError("Variable \"" + s_->name + "\": value " + std::to_string(value) + " is outside its bounds [" +
                        std::to_string(s_->min) + ", " + std::to_string(s_->max) + "]");
  s_->i.store(value, std::memory_order_relaxed);
  return BoundVar{*this, value, static_cast<double>(value)};
}

BoundVar Variable::bind(double value) const {
  if (s_->type == VarType::i64) {
    if (value != std::floor(value))
      throw ArgumentError("Variable \"" + s_->name + "\" is an integer variable; got " + std::to_string(value));
    return bind(static_cast<int64_t>(value));
  }
  if (!(value >= s_->fmin && value <= s_->fmax))
    throw ArgumentError("Variable \"" + s_->name + "\": value " + std::to_string(value) + " is outside its bounds [" +
                        std::to_string(s_->fmin) + ", " + std::to_string(s_->fmax) + "]");
  s_->f.store(value, std::memory_order_relaxed);
  return BoundVar{*this, static_cast<int64_t>(value), value};
}

const std::string& Variable::name() const { return s_->name; }
VarType Variable::type() const { return s_->type; }
int64_t Variable::min() const { return s_->min; }
int64_t Variable::max() const { return s_->max; }
double Variable::fmin() const { return s_->fmin; }
double Variable::fmax() const { return s_->fmax; }
int64_t Variable::value() const { return s_->i.load(std::memory_order_relaxed); }
double Variable::fvalue() const { return s_->f.load(std::memory_order_relaxed); }

Variable::As Variable::as(DType t) const {
  bool ok = s_->type == VarType::i64 ? (t == DType::i32 || t == DType::u32 || t == DType::i64 || t == DType::u64)
                                     : (t == (s_->type == VarType::f32 ? DType::f32 : DType::f64));
  if (!ok)
    throw ArgumentError("Variable \"" + s_->name + "\" cannot be passed as " + std::string(encore::name(t)) +
                        (s_->type == VarType::i64 ? " (integer variables: i32, u32, i64, u64)" : " (a float variable is passed as its own type)"));
  return As{*this, t};
}

Size::Size(const Variable& v, int64_t mul, int64_t add) : mul_(mul), add_(add), var_(v) {
  if (v.is_float()) throw ArgumentError("Variable \"" + v.name() + "\" is a float variable: it cannot be a launch size");
}

int64_t Size::eval() const { return var_ ? mul_ * var_->value() + add_ : add_; }

}  // namespace encore
