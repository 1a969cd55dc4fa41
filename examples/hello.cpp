// The smallest encore program: a step of two kernels, run eagerly twice and then replayed.
#include <cstdio>

#include <encore/encore.hpp>

int main() {
  encore::Device dev = encore::Device::open();
  encore::Program p = dev.compile(R"(
    __kernel void scale(__global const float* x, __global float* y, float a) { size_t i = get_global_id(0); y[i] = a * x[i]; }
    __kernel void shift(__global float* y, int k) { y[get_global_id(0)] += k; })");
  encore::Kernel scale = p.kernel("scale"), shift = p.kernel("shift");
  encore::Variable k{"k", 0, 1000};

  auto step = encore::TinyJit([&](const encore::Buffer& x, encore::BoundVar) {
    encore::Buffer y = dev.alloc<float>(x.count());
    dev.launch(scale, {x.count()}, {}, x, y, 2.0f);
    dev.launch(shift, {x.count()}, {}, y, k);
    return y;
  });

  encore::Buffer x = dev.alloc<float>(1024);
  x.copyin(std::vector<float>(1024, 1.5f));
  for (int i = 0; i < 5; ++i) {
    encore::Buffer y = step(x, k.bind(i));
    std::printf("call %d on %s: y[0] = %g (%s)\n", i, dev.id().c_str(), y.copyout<float>()[0], i < 2 ? "eager" : "replay");
  }
  const encore::UnitStats& st = step.unit().stats();
  std::printf("captured %zu items, %zu replayed, %zu pruned\n", st.items, st.items_replayed, st.items_pruned);
}
