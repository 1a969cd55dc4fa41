#include "gemm_bench.hpp"

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "kernels.hpp"

namespace mlp {

namespace {

// Best of 5 rounds of `reps` back-to-back launches, seconds per launch.
double time_launches(const encore::Device& dev, const std::function<void()>& launch, int reps) {
  for (int i = 0; i < 3; ++i) launch();  // compile the work-group function, warm caches
  dev.synchronize();
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) launch();
    dev.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return best;
}

}  // namespace

void bench_gemms(const encore::Device& dev, int batch, std::ostream& out) {
  Kernels k(dev);
  struct Shape {
    const char* what;
    char kind;  // 'n' nn (+bias, ReLU), 't' tn, 'x' nt (ReLU mask)
    int M, N, K;
  };
  const int B = batch;
  const std::vector<Shape> shapes{
      {"fc1 forward  X·W1      ", 'n', B, 256, 784}, {"fc2 forward  H1·W2     ", 'n', B, 128, 256},
      {"fc3 forward  H2·W3     ", 'n', B, 12, 128},  {"fc1 dW1 = Xᵀ·dH1      ", 't', 784, 256, B},
      {"fc2 dW2 = H1ᵀ·dH2     ", 't', 256, 128, B}, {"fc3 dW3 = H2ᵀ·dZ      ", 't', 128, 12, B},
      {"fc2 dH1 = dH2·W2ᵀ     ", 'x', B, 256, 128}, {"fc3 dH2 = dZ·W3ᵀ      ", 'x', B, 128, 12},
  };
  char line[160];
  std::snprintf(line, sizeof line, "%-24s %16s %10s %10s\n", "GEMM", "M x N x K", "us", "GFLOP/s");
  out << line;
  for (const Shape& s : shapes) {
    auto alloc = [&](size_t n, float v) {
      encore::Buffer b = dev.alloc<float>(n);
      b.copyin(std::vector<float>(n, v));
      return b;
    };
    const size_t M = size_t(s.M), N = size_t(s.N), K = size_t(s.K);
    encore::Buffer A = alloc(M * K, 0.5f), Bm = alloc(K * N, 0.25f), C = alloc(M * N, 0), bias = alloc(N, 0.1f), H = alloc(M * N, 1);
    std::function<void()> launch;
    if (s.kind == 'n') launch = [&] { k.gemm_nn(A, Bm, bias, C, s.M, s.N, s.K, true); };
    if (s.kind == 't') launch = [&] { k.gemm_tn(A, Bm, C, s.M, s.N, s.K); };
    if (s.kind == 'x') launch = [&] { k.gemm_nt(A, Bm, H, C, s.M, s.N, s.K); };
    const int reps = std::max(5, int(2e8 / (2.0 * M * N * K)));
    const double sec = time_launches(dev, launch, std::min(reps, 400));
    char dims[48];
    std::snprintf(dims, sizeof dims, "%dx%dx%d", s.M, s.N, s.K);
    std::snprintf(line, sizeof line, "%-24s %16s %10.1f %10.2f\n", s.what, dims, sec * 1e6, 2.0 * double(M * N * K) / sec / 1e9);
    out << line;
  }
}

}  // namespace mlp
