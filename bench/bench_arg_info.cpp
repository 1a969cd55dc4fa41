// What -cl-kernel-arg-info costs the code that runs (issue 19 item 7): encore used to build every
// program with it to read parameter types; now it reads them from the source. The same
// device-bound dynamic-programming sweep (a 200 x 4000 grid, each launch relaxing every cell from
// the row above: out[r][c] = cost[r][c] + the cheapest of the 5 cells above it within reach, each
// sideways step paying for its distance) is compiled twice, once
// as encore builds programs now and once with the flag (as it used to), and 50 launches of each are
// timed in interleaved rounds, each sweep ending with a finish. Reports the median and best round
// of each, their ratios, and the median of each round's with/without ratio.
//   bench-arg-info [rounds, default 9]      ENCORE_DEVICE picks the device (default: CL)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "encore/encore.hpp"

namespace {

constexpr size_t kRows = 200, kCols = 4000, kLaunches = 50;

const char* kSource = R"CL(
__kernel void dp_relax(__global const float* cost, __global const float* in, __global float* out, int cols) {
  const int c = (int)get_global_id(0), r = (int)get_global_id(1);
  const int i = r * cols + c;
  if (r == 0) { out[i] = cost[i]; return; }
  // the cheapest way down from the row above: any of the 5 cells within reach, each step sideways
  // paying for its distance
  const int up = i - cols;
  float m = in[up];
  for (int d = 1; d <= 2; ++d) {
    const float pen = 0.05f * (float)(d * d);
    if (c - d >= 0) m = fmin(m, in[up - d] + pen);
    if (c + d < cols) m = fmin(m, in[up + d] + pen);
  }
  out[i] = cost[i] + m;
}
)CL";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  const char* env = std::getenv("ENCORE_DEVICE");
  encore::Device dev = encore::Device::open(env && *env ? env : "CL");
  std::printf("device %s (%s), %zu launches over %zux%zu, %d interleaved rounds\n", dev.id().c_str(), dev.info().name.c_str(), kLaunches,
              kRows, kCols, rounds);
  const char* names[2] = {"without -cl-kernel-arg-info (encore now)", "with -cl-kernel-arg-info (encore before)"};
  encore::Kernel k[2] = {dev.compile(kSource, "").kernel("dp_relax"), dev.compile(kSource, "-cl-kernel-arg-info").kernel("dp_relax")};

  std::vector<float> host(kRows * kCols);
  uint32_t seed = 12345;
  for (float& x : host) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24);
  }
  encore::Buffer cost = dev.alloc<float>(host.size()), a = dev.alloc<float>(host.size()), b = dev.alloc<float>(host.size());
  cost.copyin(host);
  a.copyin(host);
  auto sweep = [&](const encore::Kernel& kernel) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t l = 0; l < kLaunches; ++l) {
      const bool even = l % 2 == 0;
      dev.launch(kernel, {kCols, kRows}, {}, cost, even ? a : b, even ? b : a, static_cast<int>(kCols));
    }
    dev.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // both variants compute the same grid
  a.copyin(host);
  sweep(k[0]);
  const std::vector<float> r0 = a.copyout<float>();
  a.copyin(host);
  sweep(k[1]);
  if (a.copyout<float>() != r0) {
    std::fprintf(stderr, "the two builds computed different grids\n");
    return 1;
  }
  std::vector<double> ms[2];
  for (int r = 0; r < rounds; ++r)
    for (int v0 = 0; v0 < 2; ++v0) {
      const int v = (r % 2) ? 1 - v0 : v0;  // alternate which goes first
      ms[v].push_back(sweep(k[v]));
    }
  for (int v = 0; v < 2; ++v)
    std::printf("  %-42s median %8.2f ms  best %8.2f ms\n", names[v], median(ms[v]), *std::min_element(ms[v].begin(), ms[v].end()));
  // each round's pair ran back to back: the median of their ratios is the least disturbed by a
  // machine whose load drifts between rounds
  std::vector<double> paired;
  for (size_t r = 0; r < ms[0].size(); ++r) paired.push_back(ms[1][r] / ms[0][r]);
  std::printf("  with / without: medians %.4f, bests %.4f, median of the rounds' ratios %.4f\n", median(ms[1]) / median(ms[0]),
              *std::min_element(ms[1].begin(), ms[1].end()) / *std::min_element(ms[0].begin(), ms[0].end()), median(paired));
  return 0;
}
