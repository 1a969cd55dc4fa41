#pragma once
// Host twins of the structs the by-value tests' kernels take (test_by_value, test_per_call_bytes):
//   typedef struct { float alpha; int n; } par_str;   struct shift { float4 add; int k; };
#include <cstdint>

namespace encore_test {

struct ParStr {
  float alpha;
  int32_t n;
};
struct Shift {
  alignas(16) float add[4];
  int32_t k;
};
static_assert(sizeof(Shift) == 32);

}  // namespace encore_test
