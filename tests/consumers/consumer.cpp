// A C++ consumer of an installed encore through CMake's find_package(encore) (see .ci/consumers.sh):
// TinyJit over the C++ API, plus the C API from the same target.
#include <encore/encore.h>
#include <encore/encore.hpp>

#include <cstdio>
#include <vector>

int main() {
  encore::Device dev = encore::Device::open();
  encore::Program p = dev.compile("__kernel void scale(__global const float* x, __global float* y, float a) {"
                                  " size_t i = get_global_id(0); y[i] = a * x[i]; }");
  encore::Kernel scale = p.kernel("scale");
  encore::Variable a = encore::Variable::f32("a", -100, 100);
  auto step = encore::TinyJit([&](const encore::Buffer& x, encore::BoundVar) {
    encore::Buffer y = dev.alloc<float>(x.count());
    dev.launch(scale, {x.count()}, {}, x, y, a);
    return y;
  });
  encore::Buffer x = dev.alloc<float>(64);
  x.copyin(std::vector<float>(64, 2.0f));
  float last = 0;
  for (int i = 1; i <= 4; ++i) last = step(x, a.bind(static_cast<float>(i))).copyout<float>()[0];
  std::printf("C++ consumer: encore %s on %s: y[0] = %g after %llu calls\n", encore_version(), dev.id().c_str(), last,
              static_cast<unsigned long long>(step.calls()));
  return dev.is_null() || last == 8.0f ? 0 : 1;
}
