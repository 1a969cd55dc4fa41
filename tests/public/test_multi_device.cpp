// Several devices in one captured step (issue 11): a ring all-reduce over every local OpenCL device
// and over the sub-devices of one device (Device::split), built from cross-device copies of chunk
// views and add kernels, captured by TinyJit and replayed with rotating inputs, equal to eager and
// to the host; splitting a device (ids, contexts, copies to and from the parent, errors, release);
// cross-device copies ordered against the writes around them on the other queue.
// Every local device: CI runs it with POCL_DEVICES="pthread pthread"; with one device it skips.
// The ordering tests run on the pair that ENCORE_TEST_DEVICE_SPLIT names (tests/support/device_pair.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "device_pair.hpp"
#include "encore/encore.hpp"
#include "encore/opencl.hpp"
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

// The ring over `devs`, captured and replayed with rotating inputs: equal to eager and the host.
void check_ring(const std::vector<Device>& devs) {
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

// The first OpenCL device that splits in two, or a null Device.
Device splittable() {
  if (Device::list().empty()) return Device();
  Device d = Device::open("CL");
  return d.info().compute_units >= 2 ? d : Device();
}

// y[i] = v after a busy loop of `spin` steps per work item: a write that lands late.
constexpr const char* kSlowSrc = R"(
__kernel void slow_fill(__global float* y, float v, int spin) {
  float a = 0.0f;
  for (int i = 0; i < spin; ++i) a = a * 0.5f + 1.0f;
  y[get_global_id(0)] = v + (a > 10.0f ? 1.0f : 0.0f);
}
__kernel void scale2(__global float* y) { y[get_global_id(0)] *= 2.0f; }
)";
constexpr int kSpin = 400000;

}  // namespace

TEST(MultiDevice, RingAllReduceReplaysAsEager) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  std::vector<Device> devs;
  for (const encore::DeviceInfo& d : Device::list()) devs.push_back(Device::open(d.id));
  if (devs.size() < 2) GTEST_SKIP() << "one OpenCL device (POCL_DEVICES=\"pthread pthread\" gives two)";
  check_ring(devs);
}

TEST(MultiDevice, RingAllReduceOverSubDevicesReplaysAsEager) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device d = splittable();
  if (!d) GTEST_SKIP() << "the default OpenCL device has one compute unit";
  check_ring(d.split(2));
}

TEST(MultiDevice, SplitMakesSubDevicesSharingOneNewContext) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device d = splittable();
  if (!d) GTEST_SKIP() << "the default OpenCL device has one compute unit";
  std::vector<Device> parts = d.split(2);
  ASSERT_EQ(parts.size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    const encore::DeviceInfo& in = parts[i].info();
    EXPECT_EQ(in.id, d.id() + "." + std::to_string(i));
    EXPECT_EQ(in.parent, d.id());
    EXPECT_EQ(in.name, d.info().name);
    EXPECT_EQ(in.compute_units, d.info().compute_units / 2);
    EXPECT_FALSE(parts[i].is_null());
    EXPECT_FALSE(parts[i] == d);
    EXPECT_NE(encore::opencl::device_id(parts[i]), encore::opencl::device_id(d));
    EXPECT_NE(encore::opencl::queue(parts[i]), encore::opencl::queue(d));
  }
  EXPECT_TRUE(d.info().parent.empty());
  EXPECT_NE(encore::opencl::device_id(parts[0]), encore::opencl::device_id(parts[1]));
  EXPECT_NE(encore::opencl::queue(parts[0]), encore::opencl::queue(parts[1]));
  EXPECT_EQ(encore::opencl::context(parts[0]), encore::opencl::context(parts[1]));
  EXPECT_NE(encore::opencl::context(parts[0]), encore::opencl::context(d));
  // splitting again gives the same sub-devices (SplittingAgainGivesTheSameSubDevices)
  std::vector<Device> again = d.split(2);
  EXPECT_TRUE(again[0] == parts[0] && again[1] == parts[1]);
}

// Whether the OpenCL device can be split into equal parts at all.
static bool offers_equal_partition(const Device& d) {
  size_t n = 0;
  cl_device_id id = encore::opencl::device_id(d);
  if (clGetDeviceInfo(id, CL_DEVICE_PARTITION_PROPERTIES, 0, nullptr, &n) != CL_SUCCESS) return false;
  std::vector<cl_device_partition_property> kinds(n / sizeof(cl_device_partition_property));
  if (!kinds.empty() && clGetDeviceInfo(id, CL_DEVICE_PARTITION_PROPERTIES, n, kinds.data(), nullptr) != CL_SUCCESS) return false;
  return std::find(kinds.begin(), kinds.end(), CL_DEVICE_PARTITION_EQUALLY) != kinds.end();
}

TEST(MultiDevice, SplitRefusesWhatTheDeviceCannotDo) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device d = Device::open("CL");
  EXPECT_THROW(d.split(0), encore::ArgumentError);
  const unsigned too_many = d.info().compute_units + 1;
  try {
    d.split(too_many);
    ADD_FAILURE() << "split(" << too_many << ") of a device with " << d.info().compute_units << " compute units";
  } catch (const encore::OpenCLError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("clCreateSubDevices"), std::string::npos) << what;
    EXPECT_NE(what.find(e.status_name()), std::string::npos) << what;
    EXPECT_NE(what.find("more parts than compute units"), std::string::npos) << what;
    EXPECT_NE(what.find(d.id()), std::string::npos) << what;
  } catch (const encore::DeviceError& e) {
    // a device without equal partitioning at all (most GPUs, Oclgrind) is refused before any
    // OpenCL call, saying so; one that offers it must report the driver's refusal
    const std::string what = e.what();
    EXPECT_FALSE(offers_equal_partition(d)) << "a DeviceError without the OpenCL status: " << what;
    EXPECT_NE(what.find("CL_DEVICE_PARTITION_EQUALLY"), std::string::npos) << what;
    EXPECT_NE(what.find(d.id()), std::string::npos) << what;
  }
  // the device is still usable after the refusal
  Buffer b = encore_test::make(d, {1.f, 2.f});
  EXPECT_EQ(encore_test::get(b), (std::vector<float>{1.f, 2.f}));
}

TEST(MultiDevice, SplitOfNullGivesNullDevices) {
  Device null = Device::open("NULL");
  std::vector<Device> parts = null.split(3);
  ASSERT_EQ(parts.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_TRUE(parts[i].is_null());
    EXPECT_EQ(parts[i].id(), "NULL." + std::to_string(i));
    EXPECT_EQ(parts[i].info().parent, "NULL");
    EXPECT_FALSE(parts[i] == null);
  }
  Buffer a = encore_test::make(parts[0], encore_test::seq(64, 1.f)), b = parts[2].alloc<float>(64), c = null.alloc<float>(64);
  parts[2].copy(b, a);
  null.copy(c, b);
  EXPECT_EQ(encore_test::get(c), encore_test::seq(64, 1.f));
}

// Allocation, launches and copies on every part and across: between the parts (one context: on the
// devices) and to and from the parent (another context: through host memory).
TEST(MultiDevice, SubDevicesAllocateLaunchAndCopy) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device d = splittable();
  if (!d) GTEST_SKIP() << "the default OpenCL device has one compute unit";
  std::vector<Device> parts = d.split(2);
  const size_t n = 96;
  std::vector<encore::Kernel> scale;
  for (const Device& p : parts) scale.push_back(p.compile(kSlowSrc).kernel("scale2"));
  Buffer x0 = encore_test::make(parts[0], encore_test::seq(n, 1.f));
  Buffer x1 = parts[1].alloc<float>(n), back = parts[0].alloc<float>(n), on_parent = d.alloc<float>(n), from_parent = parts[1].alloc<float>(n);
  parts[0].launch(scale[0], {n}, {}, x0);  // 2, 4, 6, ...
  parts[1].copy(x1, x0);                   // part 0 -> part 1
  parts[1].launch(scale[1], {n}, {}, x1);  // 4, 8, ...
  parts[0].copy(back, x1);                 // part 1 -> part 0
  d.copy(on_parent, back);                 // part 0 -> parent (through the host)
  parts[1].copy(from_parent, on_parent);   // parent -> part 1 (through the host)
  parts[1].launch(scale[1], {n}, {}, from_parent);
  std::vector<float> want = encore_test::seq(n, 1.f);
  for (float& v : want) v *= 4.f;
  EXPECT_EQ(encore_test::get(back), want);
  EXPECT_EQ(encore_test::get(on_parent), want);
  for (float& v : want) v *= 2.f;
  EXPECT_EQ(encore_test::get(from_parent), want);
  EXPECT_GT(parts[0].allocator_stats().bytes_in_use, 0u);
  EXPECT_GT(parts[1].allocator_stats().bytes_in_use, 0u);
}

// A sub-device, its queue, caches and the split's context go when the last handle does.
TEST(MultiDevice, SplittingAgainGivesTheSameSubDevices) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Device d = splittable();
  if (!d) GTEST_SKIP() << "the default OpenCL device has one compute unit";
  std::vector<Device> first = d.split(2);
  for (int round = 0; round < 3; ++round) {
    std::vector<Device> parts = d.split(2);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_TRUE(parts[0] == first[0] && parts[1] == first[1]) << "round " << round;
    encore::Kernel k = parts[1].compile(kSlowSrc).kernel("scale2");
    Buffer a = encore_test::make(parts[0], encore_test::seq(32, 1.f)), b = parts[1].alloc<float>(32);
    parts[1].copy(b, a);
    parts[1].launch(k, {32}, {}, b);
    EXPECT_EQ(encore_test::get(b)[3], 8.f);
  }
  std::vector<Device> nulls = Device::open("NULL").split(2);
  EXPECT_TRUE(nulls[0] == Device::open("NULL").split(2)[0]);
}

// A copy on one device reading what the other device is still writing waits for the write; a
// write on one device to what a copy on the other still has to read waits for the copy. The late
// side is a kernel busy for tens of milliseconds, so a missing wait shows as wrong bytes.
TEST(MultiDevice, CrossDeviceCopiesAreOrderedWithTheOtherQueue) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  const encore_test::DevicePair& pair = encore_test::device_pair();
  if (!pair.error.empty()) FAIL() << pair.error;
  if (pair.devs.empty()) GTEST_SKIP() << pair.skip;
  const Device& a = pair.devs[0];
  const Device& b = pair.devs[1];
  encore::Kernel slow_a = a.compile(kSlowSrc).kernel("slow_fill"), slow_b = b.compile(kSlowSrc).kernel("slow_fill");
  const size_t n = 64;
  for (int round = 0; round < 2; ++round) {
    // read after write: b copies what a writes late
    Buffer x = encore_test::make(a, std::vector<float>(n, 0.f)), y = b.alloc<float>(n);
    a.launch(slow_a, {n}, {}, x, 7.f, kSpin);
    b.copy(y, x);
    EXPECT_EQ(encore_test::get(y), std::vector<float>(n, 7.f)) << pair.how << ": the copy ran before the write on the other device";
    // write after read: a overwrites what b's copy, queued behind slow work on b, still has to read
    Buffer z = b.alloc<float>(n), w = b.alloc<float>(n);
    Buffer src = encore_test::make(a, std::vector<float>(n, 1.f));
    b.launch(slow_b, {n}, {}, z, 3.f, kSpin);
    b.copy(w, src);
    a.launch(slow_a, {n}, {}, src, 9.f, 0);
    EXPECT_EQ(encore_test::get(w), std::vector<float>(n, 1.f)) << pair.how << ": a write on the other device overtook the copy";
    EXPECT_EQ(encore_test::get(src), std::vector<float>(n, 9.f));
  }
}
