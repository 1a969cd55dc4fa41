// Devices: opening by name, the default and ENCORE_DEVICE, errors listing what exists, OpenCL error
// names, the allocator's reuse and statistics, cross-device copies.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "test_util.hpp"
#include "testing.hpp"
#include "core/allocator.hpp"
#include "core/buffer_impl.hpp"

using namespace encore;
using encore_test::DeviceTest;
using encore_test::LogCapture;

namespace {

// Sets an environment variable for a scope and restores the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* o = std::getenv(name)) {
      had_ = true;
      old_ = o;
    }
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

TEST(Device, NullDeviceOpens) {
  Device d = Device::open("NULL");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d.is_null());
  EXPECT_EQ(d.id(), "NULL");
  EXPECT_EQ(Device::open("null"), d) << "names are case-insensitive";
  EXPECT_GT(d.info().base_align_bytes, 0u);
}

TEST(Device, OpenTwiceGivesTheSameDevice) {
  EXPECT_EQ(Device::open("NULL"), Device::open("NULL"));
  auto ids = encore_test::cl_device_ids();
  if (ids.empty()) GTEST_SKIP() << "no OpenCL device";
  Device a = Device::open(ids[0]);
  Device b = Device::open(ids[0]);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.impl(), b.impl());
  EXPECT_EQ(a.id(), ids[0]);
  EXPECT_FALSE(a.is_null());
}

TEST(Device, ListMatchesOpen) {
  auto list = Device::list();
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i].id, "CL:" + std::to_string(i));
    Device d = Device::open(list[i].id);
    EXPECT_EQ(d.info().name, list[i].name);
    EXPECT_FALSE(d.info().name.empty());
    EXPECT_GT(d.info().compute_units, 0u);
    EXPECT_GT(d.info().max_work_group_size, 0u);
    EXPECT_GE(d.info().base_align_bytes, 4u);
  }
}

TEST(Device, DefaultIsFirstGpuElseFirstDevice) {
  ScopedEnv env("ENCORE_DEVICE", nullptr);
  auto list = Device::list();
  if (list.empty()) {
    EXPECT_THROW(Device::open(), DeviceError);
    return;
  }
  std::string want = list[0].id;
  for (const auto& d : list)
    if (d.is_gpu) {
      want = d.id;
      break;
    }
  EXPECT_EQ(Device::open().id(), want);
  EXPECT_EQ(Device::open(""), Device::open(want));
}

TEST(Device, EnvironmentOverridesTheDefault) {
  {
    ScopedEnv env("ENCORE_DEVICE", "NULL");
    EXPECT_TRUE(Device::open().is_null());
    // an explicit name wins over the environment
    if (!Device::list().empty()) {
      EXPECT_FALSE(Device::open("CL:0").is_null());
    }
  }
  {
    ScopedEnv env("ENCORE_DEVICE", "FOO");
    EXPECT_THROW(Device::open(), DeviceError);
  }
  if (!Device::list().empty()) {
    ScopedEnv env("ENCORE_DEVICE", "cl:0");
    EXPECT_EQ(Device::open().id(), "CL:0");
  }
}

TEST(Device, BadNamesListWhatExists) {
  auto list = Device::list();
  for (const char* bad : {"CL:99", "FOO", "CL:", "CL:-1", "CL:1x", "GPU"}) {
    SCOPED_TRACE(bad);
    try {
      (void)Device::open(bad);
      FAIL() << "opened " << bad;
    } catch (const DeviceError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("available"), std::string::npos) << m;
      EXPECT_NE(m.find("NULL"), std::string::npos) << m;
      for (const auto& d : list) {
        EXPECT_NE(m.find(d.id), std::string::npos) << m;
        EXPECT_NE(m.find(d.name), std::string::npos) << m;
      }
    }
  }
  // a failed open leaves the registry usable
  if (!list.empty()) {
    EXPECT_EQ(Device::open("CL:0").id(), "CL:0");
  }
}

TEST(Device, StatusNames) {
  EXPECT_EQ(cl_status_name(-5), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(cl_status_name(0), "CL_SUCCESS");
  EXPECT_EQ(cl_status_name(-30), "CL_INVALID_VALUE");
  EXPECT_EQ(cl_status_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_EQ(cl_status_name(-1138), "CL_INVALID_COMMAND_BUFFER_KHR");
  EXPECT_EQ(cl_status_name(-9999), "CL_UNKNOWN_ERROR(-9999)");
  OpenCLError e(-5, "clFoo", "buffer x");
  EXPECT_EQ(e.status(), -5);
  EXPECT_STREQ(e.status_name(), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(std::string(e.what()), "clFoo failed with CL_OUT_OF_RESOURCES: buffer x");
  const DeviceError& base = e;  // an OpenCLError is a DeviceError
  (void)base;
}

class DeviceCl : public DeviceTest {};

// Makes one OpenCL device fail to join any context for the scope (src/testing.hpp).
struct FailContextOf {
  explicit FailContextOf(cl_device_id d) { encore::testing::fail_context_device = d; }
  ~FailContextOf() { encore::testing::fail_context_device = nullptr; }
};

// Issue 16 item 8: one device that no context takes made every device of its platform unusable.
TEST(DeviceContext, OneBrokenDeviceLeavesTheOthersOfItsPlatformUsable) {
  const std::vector<DeviceInfo> all = Device::list();
  if (all.empty()) GTEST_SKIP() << "no OpenCL device";
  cl_device_id broken = opencl::device_id(Device::open("CL:0"));
  LogCapture logs;
  FailContextOf fail(broken);
  try {
    (void)detail::open_opencl(0);
    FAIL() << "CL:0 opened";
  } catch (const DeviceError& e) {
    const std::string m = e.what();
    for (const std::string& w : std::vector<std::string>{"CL:0", all[0].name, "could not be initialised", "CL_DEVICE_NOT_AVAILABLE", "other devices of platform"})
      EXPECT_NE(m.find(w), std::string::npos) << "'" << w << "' missing from: " << m;
  }
  EXPECT_NE(logs.text().find("left out of the shared context"), std::string::npos) << logs.text();
  size_t others = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].platform != all[0].platform) continue;
    ++others;
    Device d(detail::open_opencl(static_cast<int>(i)));
    Buffer x = d.alloc<float>(64);
    d.launch(d.compile("__kernel void ctx_fill(__global float* x) { x[get_global_id(0)] = 3.0f; }").kernel("ctx_fill"), {64}, {}, x);
    EXPECT_EQ(x.copyout<float>(), std::vector<float>(64, 3.0f)) << all[i].id;
  }
  if (others == 0) std::printf("(one device in CL:0's platform: POCL_DEVICES=\"pthread pthread\" also checks that the others open)\n");
}

// A real failing OpenCL call: a local size other than the kernel's reqd_work_group_size, which
// encore leaves to the driver (a local size beyond the device's maximum is refused before the
// enqueue: tests/public/test_launch_limits.cpp).
TEST_P(DeviceCl, LaunchTheDriverRefusesThrowsOpenCLError) {
  Program p = dev.compile("__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void dev_fill1(__global float* x) { x[get_global_id(0)] = 1.0f; }");
  Kernel k = p.kernel("dev_fill1");
  size_t too_big = dev.info().max_work_group_size * 2;
  Buffer x = dev.alloc<float>(too_big);
  EXPECT_THROW(dev.launch(k, {too_big}, {too_big}, x), ArgumentError);
  try {
    dev.launch(k, {too_big}, {32}, x);
    dev.synchronize();
    FAIL() << "launch with local size 32 succeeded";
  } catch (const OpenCLError& e) {
    std::string m = e.what();
    EXPECT_LT(e.status(), 0);
    EXPECT_EQ(std::string(e.status_name()).rfind("CL_INVALID_WORK", 0), 0u) << m;
    EXPECT_NE(m.find("clEnqueueNDRangeKernel"), std::string::npos) << m;
    EXPECT_NE(m.find("dev_fill1"), std::string::npos) << m;
    EXPECT_NE(m.find("local [32]"), std::string::npos) << m;
  }
  // the kernel and the device still work
  dev.launch(k, {too_big}, {64}, x);
  std::vector<float> got = x.copyout<float>();
  for (float v : got) ASSERT_EQ(v, 1.f);
}

// Another real failure: an allocation larger than the device allows.
TEST_P(DeviceCl, HugeAllocationThrowsAndLeavesTheDeviceUsable) {
  uint64_t max = dev.info().max_alloc_bytes;
  if (max == 0 || max > (uint64_t{1} << 46)) GTEST_SKIP() << "no usable max_alloc_bytes";
  AllocatorStats before = dev.allocator_stats();
  Buffer huge = dev.alloc(DType::u8, max * 4 + 4096);
  try {
    huge.impl()->ensure_allocated();
    // Some drivers accept any size lazily; then there is nothing to test.
    GTEST_SKIP() << "the driver accepted a " << huge.nbytes() << "-byte buffer";
  } catch (const OpenCLError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("clCreateBuffer"), std::string::npos) << m;
    EXPECT_NE(m.find(dev.id()), std::string::npos) << m;
  }
  EXPECT_FALSE(huge.allocated());
  AllocatorStats after = dev.allocator_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.allocations, before.allocations);
  Buffer ok = dev.alloc<float>(16);
  ok.copyin(std::vector<float>(16, 4.f));
  EXPECT_EQ(ok.copyout<float>()[15], 4.f);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceCl, ::testing::ValuesIn(encore_test::cl_params()), encore_test::param_name);

class DeviceAll : public DeviceTest {};

TEST_P(DeviceAll, AllocatorReusesFreedMemory) {
  dev.synchronize();
  dev.free_cache();
  // an odd size, so no other test's cached block can serve it
  const size_t n = 12345;
  AllocatorStats s0 = dev.allocator_stats();
  EXPECT_EQ(s0.cached_bytes, 0u);
  size_t cls = 0;
  {
    Buffer b = dev.alloc<float>(n);
    AllocatorStats lazy = dev.allocator_stats();
    EXPECT_EQ(lazy.allocations, s0.allocations) << "allocation is lazy";
    b.copyin(std::vector<float>(n, 1.f));
    AllocatorStats s1 = dev.allocator_stats();
    EXPECT_EQ(s1.allocations, s0.allocations + 1);
    EXPECT_EQ(s1.reuses, s0.reuses);
    cls = s1.bytes_in_use - s0.bytes_in_use;
    EXPECT_GE(cls, n * sizeof(float));
    EXPECT_LE(cls, n * sizeof(float) * 5 / 4);
    EXPECT_EQ(cls, detail::Allocator::size_class(n * sizeof(float)));
    EXPECT_GE(s1.peak_bytes, s1.bytes_in_use);
    // a view allocates nothing of its own
    Buffer v = b.view(32, 32);
    v.copyin(std::vector<float>(32, 2.f));
    EXPECT_EQ(dev.allocator_stats().bytes_in_use, s1.bytes_in_use);
  }
  AllocatorStats s2 = dev.allocator_stats();
  EXPECT_EQ(s2.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s2.cached_bytes, cls);
  {
    // the same size again, and a size in the same class: both served from the cache? only one block
    Buffer c = dev.alloc<float>(n);
    c.copyin(std::vector<float>(n, 3.f));
    AllocatorStats s3 = dev.allocator_stats();
    EXPECT_EQ(s3.allocations, s2.allocations) << "a freed size allocated again must be reused";
    EXPECT_EQ(s3.reuses, s2.reuses + 1);
    EXPECT_EQ(s3.bytes_in_use, s0.bytes_in_use + cls);
    EXPECT_EQ(s3.cached_bytes, 0u);
    EXPECT_EQ(c.copyout<float>()[n - 1], 3.f) << "reused memory holds the new data";
    // the cache is now empty: a second buffer of the class is a fresh allocation, and peak grows
    Buffer d = dev.alloc<float>(n);
    d.copyin(std::vector<float>(n, 4.f));
    AllocatorStats s4 = dev.allocator_stats();
    EXPECT_EQ(s4.allocations, s3.allocations + 1);
    EXPECT_EQ(s4.bytes_in_use, s0.bytes_in_use + 2 * cls);
    EXPECT_GE(s4.peak_bytes, s0.bytes_in_use + 2 * cls);
  }
  dev.synchronize();
  dev.free_cache();
  AllocatorStats s5 = dev.allocator_stats();
  EXPECT_EQ(s5.cached_bytes, 0u);
  EXPECT_EQ(s5.bytes_in_use, s0.bytes_in_use);
  EXPECT_GE(s5.peak_bytes, s0.bytes_in_use + 2 * cls) << "peak is a high-water mark";
}

// When the allocator cannot remember a freed allocation (no host memory for its free list), it gives
// the allocation back to the device at once: nothing cached, nothing reused, nothing lost (the
// NULL device counts what it holds), and the device still works.
TEST_P(DeviceAll, AllocatorGivesBackWhatItCannotCache) {
  dev.synchronize();
  dev.free_cache();
  const size_t n = 12347;  // an odd size: no other test's cached block serves it
  struct Off {
    ~Off() { encore::testing::fail_cache_insert = false; }
  } off;
  const AllocatorStats s0 = dev.allocator_stats();
  const int64_t live0 = encore::testing::null_live_allocations;
  encore::testing::fail_cache_insert = true;
  for (int round = 0; round < 3; ++round) {
    Buffer b = dev.alloc<float>(n);
    b.copyin(std::vector<float>(n, float(round)));
    EXPECT_EQ(b.copyout<float>()[n - 1], float(round));
  }
  const AllocatorStats s1 = dev.allocator_stats();
  EXPECT_EQ(s1.cached_bytes, s0.cached_bytes) << "a free that cannot be remembered is not counted as cached";
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.reuses, s0.reuses) << "nothing was cached, so nothing can be reused";
  EXPECT_EQ(s1.allocations, s0.allocations + 3);
  if (dev.is_null()) {
    EXPECT_EQ(encore::testing::null_live_allocations, live0) << "each allocation went back to the device";
  }
  encore::testing::fail_cache_insert = false;
  {
    Buffer b = dev.alloc<float>(n);
    b.copyin(std::vector<float>(n, 7.f));
  }
  const AllocatorStats s2 = dev.allocator_stats();
  EXPECT_EQ(s2.cached_bytes, s0.cached_bytes + detail::Allocator::size_class(n * sizeof(float))) << "with room again, frees are cached";
  Buffer c = dev.alloc<float>(n);
  c.copyin(std::vector<float>(n, 8.f));
  EXPECT_EQ(dev.allocator_stats().reuses, s2.reuses + 1);
  EXPECT_EQ(c.copyout<float>()[0], 8.f);
}

TEST(Allocator, SizeClassesBoundWaste) {
  for (size_t b : {size_t{1}, size_t{255}, size_t{256}}) EXPECT_EQ(detail::Allocator::size_class(b), 256u);
  for (size_t b = 257; b < (1u << 20); b = b * 9 / 8 + 1) {
    size_t c = detail::Allocator::size_class(b);
    ASSERT_GE(c, b);
    ASSERT_LE(c, b + b / 4 + 1) << b;
    ASSERT_EQ(detail::Allocator::size_class(c), c) << "a class is its own class";
  }
  EXPECT_EQ(detail::Allocator::size_class(size_t{64} << 20), size_t{64} << 20);
}

// Copies across devices: CL <-> NULL always exists when OpenCL does (through the host); two
// OpenCL devices of one platform copy directly.
TEST_P(DeviceAll, CrossDeviceCopies) {
  std::vector<Device> others{Device::open("NULL")};
  for (const auto& id : encore_test::cl_device_ids()) others.push_back(Device::open(id));
  std::vector<int32_t> h(300);
  std::iota(h.begin(), h.end(), -7);
  Buffer src = dev.alloc<int32_t>(300);
  src.copyin(h);
  int tested = 0;
  for (const Device& other : others) {
    if (other == dev) continue;
    SCOPED_TRACE(dev.id() + " -> " + other.id());
    Buffer dst = other.alloc<int32_t>(300);
    uint64_t v = dst.version();
    other.copy(dst, src);
    EXPECT_GT(dst.version(), v);
    EXPECT_EQ(dst.copyout<int32_t>(), h);
    // and back, into a view
    Buffer back = dev.alloc<int32_t>(64 + 300);
    back.copyin(std::vector<int32_t>(364, 0));
    dev.copy(back.view(32, 300), dst);
    std::vector<int32_t> got = back.copyout<int32_t>();
    for (size_t i = 0; i < 364; ++i) ASSERT_EQ(got[i], (i >= 32 && i < 332) ? h[i - 32] : 0) << i;
    // the destination decides the device: copying on the wrong device is an error
    EXPECT_THROW(dev.copy(dst, src), ArgumentError);
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << "only one device";
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceAll, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);
