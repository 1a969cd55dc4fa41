// Launch sizes and __local memory the device cannot run are an ArgumentError before anything is
// enqueued, eagerly, while capturing and on replay (a Variable in a local size): an explicit local
// size over CL_DEVICE_MAX_WORK_ITEM_SIZES in its dimension, a work group over the kernel's limit,
// __local memory (the kernel's own plus its __local arguments) over CL_DEVICE_LOCAL_MEM_SIZE. On
// PoCL an oversized __local argument used to abort the whole process from its worker thread.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;
using namespace encore_test;

namespace {

class LaunchLimits : public DeviceTest {};

const char* kSrc = R"CL(
__kernel void lim_fill(__global float* o) { o[get_global_id(0) + get_global_id(1) + get_global_id(2)] = 1.0f; }
__kernel void lim_scratch(__global float* o, __local float* scratch) {
  scratch[get_local_id(0)] = 2.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  o[get_global_id(0)] = scratch[get_local_id(0)];
}
__kernel void lim_tile(__global float* o, __local float* more) {
  __local float tile[1024];
  tile[get_local_id(0)] = 3.0f;
  more[get_local_id(0)] = 1.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  o[get_global_id(0)] = tile[get_local_id(0)] + more[get_local_id(0)];
}
)CL";

TEST_P(LaunchLimits, DevicesReportTheirLimits) {
  const DeviceInfo& i = dev.info();
  for (size_t d = 0; d < 3; ++d) EXPECT_GE(i.max_work_item_sizes[d], 1u) << d;
  EXPECT_LE(i.max_work_item_sizes[0], std::max<size_t>(i.max_work_group_size, i.max_work_item_sizes[0]));
  EXPECT_GT(i.local_mem_bytes, 0u);
  if (dev.is_null()) {
    EXPECT_EQ(i.max_work_item_sizes[0], 1024u);
    EXPECT_EQ(i.local_mem_bytes, uint64_t{1} << 20);
  }
}

TEST_P(LaunchLimits, LocalSizeOverTheWorkItemLimitOfItsDimension) {
  Kernel k = dev.compile(kSrc).kernel("lim_fill");
  Buffer o = dev.alloc<float>(1 << 16);
  for (int d = 0; d < 3; ++d) {
    const size_t over = dev.info().max_work_item_sizes[d] + 1;
    Sizes global = d == 0 ? Sizes{over} : d == 1 ? Sizes{1, over} : Sizes{1, 1, over};
    Sizes local = d == 0 ? Sizes{over} : d == 1 ? Sizes{1, over} : Sizes{1, 1, over};
    expect_has(argument_error([&] { dev.launch(k, global, local, o); }),
               {"kernel lim_fill", "local size " + std::to_string(over) + " in dimension " + std::to_string(d), "CL_DEVICE_MAX_WORK_ITEM_SIZES"});
  }
}

TEST_P(LaunchLimits, WorkGroupOverTheKernelLimit) {
  Kernel k = dev.compile(kSrc).kernel("lim_fill");
  Buffer o = dev.alloc<float>(1 << 16);
  const size_t d0 = std::min(dev.info().max_work_item_sizes[0], dev.info().max_work_group_size);
  const size_t d1 = std::min<size_t>(dev.info().max_work_item_sizes[1], 2);
  if (d0 * d1 <= dev.info().max_work_group_size) GTEST_SKIP() << "no local size over the work-group limit fits the per-dimension limits";
  expect_has(argument_error([&] { dev.launch(k, {d0, d1}, {d0, d1}, o); }), {"kernel lim_fill", "CL_KERNEL_WORK_GROUP_SIZE"});
  // captured within the limit, replayed over it with a Variable local size: refused at the bind
  Variable l{"l", 1, 1 << 20};
  auto jit = TinyJit([&](const Buffer& x, BoundVar) { dev.launch(k, {d0 * d1}, {l}, x); });
  for (int call = 0; call < 3; ++call) jit(o, l.bind(static_cast<int64_t>(d0 / 2)));
  const int64_t too_big = static_cast<int64_t>(std::max(dev.info().max_work_item_sizes[0], dev.info().max_work_group_size)) * 2;
  EXPECT_THROW(jit(o, l.bind(too_big)), ArgumentError);
  jit(o, l.bind(static_cast<int64_t>(d0 / 2)));  // still usable
}

TEST_P(LaunchLimits, LocalMemoryOverTheDeviceEagerlyAndWhileCapturing) {
  Program p = dev.compile(kSrc);
  Kernel k = p.kernel("lim_scratch");
  Buffer o = dev.alloc<float>(64);
  const uint64_t limit = dev.info().local_mem_bytes;
  for (uint64_t bytes : {limit + 1, uint64_t{1} << 40, uint64_t{SIZE_MAX}}) {
    SCOPED_TRACE(bytes);
    expect_has(argument_error([&] { dev.launch(k, {64}, {64}, o, LocalMem{static_cast<size_t>(bytes)}); }),
               {"launch lim_scratch", "__local memory", "CL_DEVICE_LOCAL_MEM_SIZE", std::to_string(limit)});
  }
  {
    Capture cap;
    EXPECT_THROW(dev.launch(k, {64}, {64}, o, LocalMem{static_cast<size_t>(limit + 1)}), ArgumentError);
    EXPECT_EQ(cap.items_recorded(), 0u);
  }
  dev.launch(k, {64}, {64}, o, LocalMem{64 * sizeof(float)});
  if (is_cl()) {
    EXPECT_EQ(o.copyout<float>(), std::vector<float>(64, 2.0f));
    // the kernel's own __local array counts too: 4 KiB of tile + the rest of the device's memory is over
    Kernel t = p.kernel("lim_tile");
    dev.launch(t, {64}, {64}, o, LocalMem{64 * sizeof(float)});
    EXPECT_EQ(o.copyout<float>(), std::vector<float>(64, 4.0f));
    expect_has(argument_error([&] { dev.launch(t, {64}, {64}, o, LocalMem{static_cast<size_t>(limit - 1024)}); }),
               {"launch lim_tile", "bytes declared in the kernel", "CL_DEVICE_LOCAL_MEM_SIZE"});
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, LaunchLimits, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
