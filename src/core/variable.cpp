#include "encore/variable.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "encore/error.hpp"
#include "core/scalar.hpp"
#include "core/var_state.hpp"

namespace encore {

namespace detail {

namespace {
// This thread's last bind() per variable. Entries of destroyed variables are dropped as new ones
// arrive; the weak handle tells a live variable from a new one at a reused address.
struct ThreadBinding {
  const VarState* key;
  std::weak_ptr<VarState> alive;
  VarValue value;
};
thread_local std::vector<ThreadBinding> tl_bound;
thread_local const BindingScope* tl_scope = nullptr;
// Values host items set (Device::host) for the rest of the scope that was innermost when they ran:
// dropped when that scope ends. Empty unless a step sets values, so lookups stay a size test.
struct StepValue {
  const VarState* key;
  const BindingScope* scope;
  VarValue value;
};
thread_local std::vector<StepValue> tl_step;

void bind_on_this_thread(const std::shared_ptr<VarState>& s, VarValue v) {
  for (ThreadBinding& b : tl_bound)
    if (b.key == s.get() && !b.alive.expired()) {
      b.value = v;
      return;
    }
  std::erase_if(tl_bound, [](const ThreadBinding& b) { return b.alive.expired(); });
  tl_bound.push_back({s.get(), s, v});
}
}  // namespace

namespace {
// The value by the rule in variable.hpp; `in_call` (may be null) is set when the lookup passed a
// TinyJit call's scope without finding the variable.
VarValue lookup(const VarState& v, bool* in_call) {
  for (size_t k = tl_step.size(); k-- > 0;)
    if (tl_step[k].key == &v) return tl_step[k].value;
  bool passed_call = false;
  for (const BindingScope* s = tl_scope; s; s = s->outer) {
    for (const BoundVar& b : s->vars)
      if (b.var.state() == &v) return {b.i, b.f};
    passed_call = passed_call || s->call;
  }
  if (in_call) *in_call = passed_call;
  for (const ThreadBinding& b : tl_bound)
    if (b.key == &v && !b.alive.expired()) return b.value;
  return {v.init_i, v.init_f};
}
}  // namespace

VarValue var_value(const VarState& v) {
  bool in_call = false;
  VarValue val = lookup(v, &in_call);
  if (in_call)
    throw JitError("Variable \"" + v.name + "\" is used by a launch inside a TinyJit call that was not passed it: eager calls would see "
                   "this thread's last bind() (or its initial value), while replay binds only the values passed to each call. Pass it "
                   "bound to every call of the jit, as a BoundVar argument: jit(..., var.bind(value))");
  return val;
}

void set_step_value(const Variable& v, VarValue value) {
  if (!tl_scope) {
    bind_on_this_thread(v.shared_state(), value);
    return;
  }
  for (StepValue& s : tl_step)
    if (s.key == v.state() && s.scope == tl_scope) {
      s.value = value;
      return;
    }
  tl_step.push_back({v.state(), tl_scope, value});
}

void variable_value_too_large(const Variable& v, unsigned long long value) {
  throw ArgumentError("Variable \"" + v.name() + "\": value " + std::to_string(value) + " is outside its bounds [" +
                      std::to_string(v.min()) + ", " + std::to_string(v.max()) + "]");
}

}  // namespace detail

BindingScope::BindingScope(std::span<const BoundVar> v, bool c) : vars(v), outer(detail::tl_scope), call(c) { detail::tl_scope = this; }
BindingScope::~BindingScope() {
  detail::tl_scope = outer;
  if (!detail::tl_step.empty()) std::erase_if(detail::tl_step, [this](const detail::StepValue& s) { return s.scope == this; });
}

Variable::Variable(std::string name, int64_t min, int64_t max) : s_(std::make_shared<detail::VarState>()) {
  if (min > max)
    throw ArgumentError("Variable \"" + name + "\": min " + std::to_string(min) + " > max " + std::to_string(max));
  s_->name = std::move(name);
  s_->type = VarType::i64;
  s_->min = min;
  s_->max = max;
  s_->init_i = min;
  s_->init_f = static_cast<double>(min);
}

static Variable make_float(std::string name, VarType t, double min, double max, Variable (*mk)(std::shared_ptr<detail::VarState>)) {
  if (!(min <= max)) throw ArgumentError("Variable \"" + name + "\": min > max");
  if (t == VarType::f32) {
    // an f32 variable's value must reach the kernel as a float: its bounds are clamped to the
    // float range (the defaults, +-1e300, included), so every bound check rejects what would be inf
    constexpr double fl = std::numeric_limits<float>::max();
    if (min > fl || max < -fl)
      throw ArgumentError("Variable \"" + name + "\": f32 bounds [" + std::to_string(min) + ", " + std::to_string(max) +
                          "] hold no finite float value (use Variable::f64)");
    min = std::max(min, -fl);
    max = std::min(max, fl);
  }
  auto s = std::make_shared<detail::VarState>();
  s->name = std::move(name);
  s->type = t;
  s->fmin = min;
  s->fmax = max;
  s->init_f = std::clamp(0.0, min, max);
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
  detail::bind_on_this_thread(s_, {value, static_cast<double>(value)});
  return BoundVar{*this, value, static_cast<double>(value)};
}

BoundVar Variable::bind(double value) const {
  if (s_->type == VarType::i64) {
    if (value != std::floor(value) || !(value >= -9.2e18 && value <= 9.2e18))
      throw ArgumentError("Variable \"" + s_->name + "\" is an integer variable; got " + std::to_string(value));
    return bind(static_cast<int64_t>(value));
  }
  if (!(value >= s_->fmin && value <= s_->fmax))
    throw ArgumentError("Variable \"" + s_->name + "\": value " + std::to_string(value) + " is outside its bounds [" +
                        std::to_string(s_->fmin) + ", " + std::to_string(s_->fmax) + "]" +
                        (s_->type == VarType::f32 && std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()
                             ? " (it does not fit the variable's type f32)"
                             : ""));
  detail::bind_on_this_thread(s_, {0, value});
  return BoundVar{*this, 0, value};
}

const std::string& Variable::name() const { return s_->name; }
VarType Variable::type() const { return s_->type; }
int64_t Variable::min() const { return s_->min; }
int64_t Variable::max() const { return s_->max; }
double Variable::fmin() const { return s_->fmin; }
double Variable::fmax() const { return s_->fmax; }
int64_t Variable::value() const { return detail::lookup(*s_, nullptr).i; }
double Variable::fvalue() const { return detail::lookup(*s_, nullptr).f; }

Variable::As Variable::as(DType t) const {
  bool ok = s_->type == VarType::i64 ? is_integer(t) && t != DType::boolean
                                     : (t == (s_->type == VarType::f32 ? DType::f32 : DType::f64));
  if (!ok)
    throw ArgumentError("Variable \"" + s_->name + "\" cannot be passed as " + std::string(encore::name(t)) +
                        (s_->type == VarType::i64 ? " (integer variables: i8 to i64, u8 to u64)" : " (a float variable is passed as its own type)"));
  return As{*this, t};
}

}  // namespace encore

namespace encore::detail {

uint64_t var_arg_bits(const VarState& v, int64_t iv, double fv, DType as) {
  uint64_t bits = 0;
  switch (as) {
    case DType::f32: { float x = static_cast<float>(fv); std::memcpy(&bits, &x, 4); } break;
    case DType::f64: std::memcpy(&bits, &fv, 8); break;
    case DType::i8: case DType::i16: case DType::i32: case DType::i64:
    case DType::u8: case DType::u16: case DType::u32: case DType::u64:
      if (!convert_integer(DType::i64, static_cast<uint64_t>(iv), as, bits))
        throw ArgumentError("variable \"" + v.name + "\" = " + std::to_string(iv) + " does not fit its kernel argument type " +
                            std::string(name(as)) + " (" + integer_range(as) + ")");
      break;
    default: throw ArgumentError("variable \"" + v.name + "\" cannot be passed as " + std::string(name(as)));
  }
  return bits;
}

}  // namespace encore::detail
