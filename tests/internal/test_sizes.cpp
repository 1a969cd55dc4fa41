// Issue 8 item 17: every byte size computed on a public path is overflow-checked. A size that wraps
// used to give a 0-byte buffer, a 0-byte view, or a view that passed the bounds check.
#include <gtest/gtest.h>

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "core/buffer_impl.hpp"

namespace {

using encore::ArgumentError;
using encore::Buffer;
using encore::Device;
using encore::DType;

// Runs f, which must throw ArgumentError whose message holds every one of `words`.
template <class F> void expect_argument_error(F&& f, std::vector<std::string> words) {
  try {
    f();
    ADD_FAILURE() << "no ArgumentError";
  } catch (const ArgumentError& e) {
    const std::string m = e.what();
    for (const std::string& w : words) EXPECT_NE(m.find(w), std::string::npos) << "'" << w << "' not in: " << m;
  }
}

const std::string kLimit = std::to_string(encore::detail::max_buffer_bytes);

TEST(Sizes, AllocationWhoseByteSizeOverflowsThrows) {
  Device dev = Device::open("NULL");
  const size_t huge = size_t{1} << 62;  // 2^64 bytes of f32: wrapped to 0 before
  expect_argument_error([&] { (void)dev.alloc<float>(huge); }, {std::to_string(huge), "f32", kLimit});
  expect_argument_error([&] { (void)dev.alloc(DType::f64, SIZE_MAX / 8 + 1); }, {std::to_string(SIZE_MAX / 8 + 1), "f64", kLimit});
  expect_argument_error([&] { (void)Buffer(dev, DType::u8, SIZE_MAX); }, {std::to_string(SIZE_MAX), kLimit});
  // the limit itself is a valid (lazy, never allocated here) request; one byte more is not
  Buffer at_limit = dev.alloc(DType::u8, encore::detail::max_buffer_bytes);
  EXPECT_EQ(at_limit.nbytes(), encore::detail::max_buffer_bytes);
  EXPECT_FALSE(at_limit.allocated());
  expect_argument_error([&] { (void)dev.alloc(DType::u8, encore::detail::max_buffer_bytes + 1); }, {kLimit});
  expect_argument_error([&] { (void)dev.alloc<uint16_t>(encore::detail::max_buffer_bytes / 2 + 1); }, {kLimit});
  // the device still works
  Buffer ok = dev.alloc<float>(4);
  ok.copyin(std::vector<float>{1, 2, 3, 4});
  EXPECT_EQ(ok.copyout<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Sizes, ViewWhoseSizeOrOffsetOverflowsThrows) {
  Device dev = Device::open("NULL");
  Buffer x = dev.alloc<float>(64);
  const uint64_t big = uint64_t{1} << 62;
  // element count * 4 wraps to 0 (was a 0-byte view)
  expect_argument_error([&] { (void)x.view(0, big); }, {std::to_string(big), "do not fit"});
  // element offset * 4 wraps to 0 (was a view at byte 0)
  expect_argument_error([&] { (void)x.view(big, 32); }, {std::to_string(big), "beyond the end"});
  expect_argument_error([&] { (void)x.view(65, 1); }, {"65", "beyond the end"});
  // offset + bytes wraps to 4 (passed the bounds check)
  expect_argument_error([&] { (void)x.view_as(DType::f32, 128, big - 31); }, {std::to_string(big - 31), "at byte 128", "256 bytes"});
  expect_argument_error([&] { (void)x.view_as(DType::u8, SIZE_MAX, 1); }, {std::to_string(SIZE_MAX)});
  expect_argument_error([&] { (void)x.view_as(DType::f64, 128, SIZE_MAX / 8 + 1); }, {"do not fit"});
  // valid views at the edges still work
  EXPECT_EQ(x.view(32, 32).nbytes(), 128u);
  EXPECT_EQ(x.view_as(DType::u8, 128, 128).count(), 128u);
}

TEST(Sizes, HostTransfersOfTheWrongSizeThrow) {
  Device dev = Device::open("NULL");
  Buffer x = dev.alloc<float>(8);
  std::vector<float> v(8, 1.f);
  expect_argument_error([&] { x.copyin_bytes(v.data(), SIZE_MAX); }, {std::to_string(SIZE_MAX), "32"});
  expect_argument_error([&] { x.copyout_bytes(v.data(), 33); }, {"33", "32"});
  expect_argument_error([&] { x.copyin(std::span<const float>(v.data(), 7)); }, {"28", "32"});
}

TEST(Sizes, AdoptedMemoryWhoseByteSizeOverflowsThrows) {
  if (Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open();
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(encore::opencl::context(dev), CL_MEM_READ_WRITE, 256, nullptr, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  // 2^62 floats: count * 4 wraps to 0, which "fit" in 256 bytes before
  expect_argument_error([&] { (void)encore::opencl::adopt(dev, m, DType::f32, size_t{1} << 62); },
                        {std::to_string(size_t{1} << 62), kLimit});
  Buffer b = encore::opencl::adopt(dev, m, DType::f32, 64);
  EXPECT_EQ(b.nbytes(), 256u);
  clReleaseMemObject(m);
}

}  // namespace
