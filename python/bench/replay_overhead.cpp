// Per-call cost of a TinyJit replay from C++ on the NULL device: a one-kernel step with 2 buffer
// inputs and 1 float Variable, the same step python/bench/replay_overhead.py replays from Python.
// Prints the best of `rounds` rounds of `calls` calls, in ns per call.
//   ./build/python/bench/replay-overhead [calls] [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "encore/encore.hpp"

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 200000, rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  encore::Device dev = encore::Device::open("NULL");
  encore::Kernel k = dev.compile("__kernel void axpy(__global float* y, __global const float* x, float a) {"
                                 " size_t i = get_global_id(0); y[i] += a * x[i]; }").kernel("axpy");
  encore::Variable a = encore::Variable::f32("a");
  encore::Buffer y = dev.alloc<float>(1024), x = dev.alloc<float>(1024);
  encore::TinyJit jit([&](const encore::Buffer& yb, const encore::Buffer& xb, const encore::BoundVar&) { dev.launch(k, {1024}, {}, yb, xb, a); });
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) jit(y, x, a.bind(0.5));
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
    best = std::min(best, ns);
  }
  std::printf("C++ replay, NULL, 2 buffers + 1 Variable: %.0f ns per call (best of %d rounds of %d)\n", best, rounds, calls);
}
