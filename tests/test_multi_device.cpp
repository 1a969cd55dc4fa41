// Several devices of one platform in one captured step (issue 11, the part that exists): a ring
// all-reduce over every local OpenCL device, built from cross-device copies of chunk views and add
// kernels, captured by TinyJit and replayed with rotating inputs, equal to eager and to the host.
// Needs two devices: CI runs it with POCL_DEVICES="pthread pthread"; with one device it skips.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using encore::Buffer;
using encore::Device;

namespace {

constexpr const char* kAddSrc = "__kernel void ring_add(__global float* acc, __global const float* x) { acc[get_global_id(0)] += x[get_global_id(0)]; }";

// Sums `bufs` (one per device, equal sizes) into every one of them: reduce-scatter then all-gather
// around the ring, chunk by chunk (chunks are aligned views). Each step is eager device work.
void ring_allreduce(const std::vector<Device>& devs, const std::vector<encore::Kernel>& add, const std::vector<Buffer>& bufs) {
  const size_t n = devs.size(), chunk = bufs[0].count() / n;
  auto piece = [&](size_t dev, size_t c) { return bufs[dev].view(c * chunk, chunk); };
  for (size_t s = 0; s + 1 < n; ++s)  // reduce-scatter: device i+1 adds device i's chunk (i - s)
    for (size_t i = 0; i < n; ++i) {
      size_t to = (i + 1) % n, c = (i + n - s) % n;
      Buffer t = devs[to].alloc<float>(chunk);
      devs[to].copy(t, piece(i, c));
      devs[to].launch(add[to], {chunk}, {}, piece(to, c), t);
    }
  for (size_t s = 0; s + 1 < n; ++s)  // all-gather: the finished chunk (i + 1 - s) moves on
    for (size_t i = 0; i < n; ++i) {
      size_t to = (i + 1) % n, c = (i + 1 + n - s) % n;
      devs[to].copy(piece(to, c), piece(i, c));
    }
}

}  // namespace

TEST(MultiDevice, RingAllReduceReplaysAsEager) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  std::vector<Device> devs;
  for (const encore::DeviceInfo& d : Device::list()) devs.push_back(Device::open(d.id));
  if (devs.size() < 2) GTEST_SKIP() << "one OpenCL device (POCL_DEVICES=\"pthread pthread\" gives two)";
  std::vector<encore::Kernel> add;
  for (const Device& d : devs) add.push_back(d.compile(kAddSrc).kernel("ring_add"));
  const size_t n = devs.size(), chunk = 64, count = n * chunk;  // chunk * 4 bytes: a multiple of 128
  auto step = [&](const std::vector<Buffer>& bufs) { ring_allreduce(devs, add, bufs); };
  encore::TinyJit jit(step, encore::JitOptions{});
  // rotating input sets: one buffer per device, integer values (exact sums in any order)
  auto make_set = [&](int k) {
    std::vector<Buffer> set;
    for (size_t d = 0; d < n; ++d) set.push_back(encore_test::make(devs[d], encore_test::seq(count, static_cast<float>(k * 10 + d), 1.f)));
    return set;
  };
  for (int call = 0; call < 6; ++call) {
    std::vector<Buffer> a = make_set(call % 3), b = make_set(call % 3);
    jit(a);
    step(b);
    std::vector<float> want(count, 0.f);
    for (size_t d = 0; d < n; ++d)
      for (size_t j = 0; j < count; ++j) want[j] += static_cast<float>((call % 3) * 10 + d) + static_cast<float>(j);
    for (size_t d = 0; d < n; ++d) {
      EXPECT_EQ(encore_test::get(a[d]), encore_test::get(b[d])) << "call " << call << " device " << d << ": replay vs eager";
      EXPECT_EQ(encore_test::get(a[d]), want) << "call " << call << " device " << d << ": vs the host";
    }
  }
  const encore::UnitStats& st = jit.unit().stats();
  EXPECT_EQ(st.items, 2 * n * (n - 1) + n * (n - 1));  // per reduce step a copy and an add; per gather step a copy
  EXPECT_EQ(st.items_pruned, 0u);
  EXPECT_EQ(st.inputs, n);
}
