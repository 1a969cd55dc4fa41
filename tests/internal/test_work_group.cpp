// Issue 8 item 8: the automatic local size is bounded by the kernel's own work-group limit
// (CL_KERNEL_WORK_GROUP_SIZE), which may be below the device's (a kernel heavy in registers or
// local memory on a GPU). The NULL device can be told to give its kernels a small limit, and then
// refuses a launch over it as OpenCL does (an ArgumentError before the enqueue on every device).
#include <gtest/gtest.h>
#include "testing.hpp"

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"
#include "core/program_impl.hpp"
#include "exec/eager.hpp"

namespace {

using encore::Device;

size_t chosen(size_t global, size_t max_wg) {
  size_t l[3] = {0, 0, 0};
  encore::detail::choose_local(1, &global, max_wg, l);
  return l[0];
}

TEST(WorkGroup, ChooseLocalHonoursTheLimit) {
  EXPECT_EQ(chosen(1024, 1024), 256u);
  EXPECT_EQ(chosen(1024, 32), 32u);
  EXPECT_EQ(chosen(1024, 100), 64u);
  EXPECT_EQ(chosen(1024, 1), 1u);
  EXPECT_EQ(chosen(96, 16), 16u);
  EXPECT_EQ(chosen(7, 256), 1u);
}

// Forces the limit of NULL kernel objects made in its scope.
struct ForcedLimit {
  explicit ForcedLimit(size_t n) { encore::testing::null_kernel_work_group_limit = n; }
  ~ForcedLimit() { encore::testing::null_kernel_work_group_limit = 0; }
};

encore::Kernel null_kernel(const Device& dev) {
  return dev.compile("__kernel void wg_fill(__global float* o) { o[get_global_id(0)] = 1.0f; } // " + encore_test::unique_token())
      .kernel("wg_fill");
}

TEST(WorkGroup, NullKernelsReportTheirLimit) {
  Device dev = Device::open("NULL");
  EXPECT_EQ(null_kernel(dev).impl()->eager->max_work_group_size(), dev.info().max_work_group_size);
  ForcedLimit f(32);
  encore::Kernel k = null_kernel(dev);
  EXPECT_EQ(k.impl()->eager->max_work_group_size(), 32u);
  // an explicit local size over the kernel's limit is refused before the enqueue, as on OpenCL
  // (src/exec/enqueue.cpp); within it, it runs
  encore::Buffer o = dev.alloc<float>(1024);
  try {
    dev.launch(k, {1024}, {64}, o);
    ADD_FAILURE() << "no ArgumentError";
  } catch (const encore::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("over this kernel's limit of 32"), std::string::npos) << e.what();
  }
  dev.launch(k, {1024}, {32}, o);
}

// Enable when src/exec/eager.cpp and src/unit/replay.cpp bound choose_local by
// min(device max, BackendKernel::max_work_group_size()) (issue 8 item 8; the lead wires it).
TEST(WorkGroup, AutomaticLocalSizeStaysWithinTheKernelLimitEagerAndOnReplay) {
  Device dev = Device::open("NULL");
  ForcedLimit f(32);
  encore::Kernel k = null_kernel(dev);
  encore::Buffer o = dev.alloc<float>(1024);
  dev.launch(k, {1024}, {}, o);  // 256 would be chosen from the device's limit alone
  auto jit = encore::TinyJit([&](const encore::Buffer& x) { dev.launch(k, {x.count()}, {}, x); });
  for (int i = 0; i < 4; ++i) jit(o);  // warm-up, capture, replays (bound kernels made at bind)
  EXPECT_EQ(jit.calls(), 4);
}

TEST(WorkGroup, OpenCLKernelsReportTheirLimit) {
  if (Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open();
  encore::Kernel k = dev.compile("__kernel void wg_cl(__global float* o) { o[get_global_id(0)] = 1.0f; } // " + encore_test::unique_token())
                         .kernel("wg_cl");
  const size_t lim = k.impl()->eager->max_work_group_size();
  EXPECT_GE(lim, 1u);
  EXPECT_LE(lim, dev.info().max_work_group_size);
}

}  // namespace
