#pragma once
// What a Variable refers to, and the value eager work on this thread sees for it (src/core/variable.cpp).
#include <cstdint>
#include <string>
#include "encore/variable.hpp"

namespace encore::detail {

struct VarState {
  std::string name;
  VarType type = VarType::i64;
  int64_t min = 0, max = 0;
  double fmin = 0, fmax = 0;
  int64_t init_i = 0;  // the value before any binding
  double init_f = 0;
};

// The values eager work on this thread sees for a variable (Variable's rule: the innermost TinyJit
// call's BoundVars, else this thread's last bind(), else the initial value).
struct VarValue {
  int64_t i = 0;
  double f = 0;
};
VarValue var_value(const VarState& v);
using VarScope = BindingScope;
// Sets a host item's value (Device::host) for the rest of the innermost TinyJit call or binding
// scope on this thread; outside any, like Variable::bind.
void set_step_value(const Variable& v, VarValue value);


// Bits of a variable's value passed as `as`; ArgumentError when the value does not fit.
uint64_t var_arg_bits(const VarState& v, int64_t ivalue, double fvalue, DType as);

}  // namespace encore::detail
