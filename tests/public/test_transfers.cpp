// Partial host transfers (Buffer::copyin/copyout at an offset, encore_buffer_write/read): what a port
// of clEnqueueWriteBuffer/clEnqueueReadBuffer with an offset needs, eagerly and inside a capture.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "encore/encore.h"
#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

TEST(PartialTransfers, WriteAndReadAtAnyElementOffset) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 0.f));
  x.copyin(std::vector<float>{-1.f, -2.f, -3.f}, 5);  // elements 5..7: not an aligned place
  std::vector<float> want = seq(64, 0.f);
  want[5] = -1.f, want[6] = -2.f, want[7] = -3.f;
  EXPECT_EQ(get(x), want);
  std::vector<float> one(1);
  x.copyout(std::span<float>(one), 6);
  EXPECT_EQ(one[0], -2.f);
  // "read 4 bytes at offset 20", as clEnqueueReadBuffer(buf, offset 20, 4) would
  float f = 0;
  x.copyout_bytes(&f, 4, 20);
  EXPECT_EQ(f, want[5]);
  // inside a view: offsets count from the view's start
  Buffer tail = x.view(32, 32);
  tail.copyin(std::vector<float>{100.f}, 31);
  EXPECT_EQ(get(x)[63], 100.f);
}

TEST(PartialTransfers, OutOfRangeIsAnArgumentErrorAndChangesNothing) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(16, 0.f));
  std::vector<float> three(3, 7.f), out(3);
  EXPECT_THROW(x.copyin(three, 14), encore::ArgumentError);             // 14..16: one past the end
  EXPECT_THROW(x.copyout(std::span<float>(out), 14), encore::ArgumentError);
  EXPECT_THROW(x.copyin(three, SIZE_MAX / 2), encore::ArgumentError);    // offset * 4 overflows
  EXPECT_THROW(x.copyout_bytes(out.data(), 4, SIZE_MAX - 2), encore::ArgumentError);
  EXPECT_THROW(x.copyin(std::vector<int32_t>{1}, 0), encore::ArgumentError);  // wrong host type
  try {
    x.copyin(three, 14);
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "do not fit")) << err.what();
    EXPECT_TRUE(contains(err.what(), "f32[16]")) << err.what();
  }
  EXPECT_EQ(get(x), seq(16, 0.f));
  // a whole-buffer copy of the wrong size says how to make a partial one
  try {
    x.copyin(three);
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "offset")) << err.what();
  }
}

// A step that patches a few elements of its input and of a temporary from host data, then computes:
// each replay uploads the snapshot again at the same unaligned places, into the new input.
TEST(PartialTransfers, CapturedPartialUploadsReplayAsEager) {
  NEED_CL();
  Env& e = cl();
  const std::vector<float> patch{5.f, 6.f, 7.f};
  auto step = [&](const Buffer& x) {
    x.copyin(patch, 3);                       // into the input, at element 3
    Buffer t = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, t, 2.0f, 1.0f);
    t.copyin(std::vector<float>{-1.f}, 9);    // into a planned temporary, after its writer
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.add, {x.count()}, {}, t, x, y);
    return y;
  };
  TinyJit jit(step);
  std::vector<Buffer> xj, xe;
  for (int i = 0; i < 3; ++i) {
    xj.push_back(make(e.dev, seq(64, 10.f * i)));
    xe.push_back(make(e.dev, seq(64, 10.f * i)));
  }
  for (int call = 0; call < 7; ++call) {
    std::vector<float> got = get(jit(xj[call % 3]));
    ASSERT_EQ(got, get(step(xe[call % 3]))) << "call " << call;
    ASSERT_EQ(get(xj[call % 3]), get(xe[call % 3])) << "call " << call;
  }
  EXPECT_EQ(jit.unit().stats().items, 4u);  // two uploads, two launches
  EXPECT_EQ(jit.unit().stats().items_replayed, 4u);
}

TEST(PartialTransfers, CopyoutDuringCaptureIsStillRefused) {
  NEED_CL();
  Env& e = cl();
  std::vector<float> one(1);
  TinyJit jit([&](const Buffer& x) {
    x.copyout(std::span<float>(one), 2);
    return x;
  });
  Buffer x = make(e.dev, seq(8, 0.f));
  jit(x);
  expect_jit_error([&] { jit(x); }, {"copyout", "capture"});
}

TEST(PartialTransfers, CApiWriteAndRead) {
  NEED_CL();
  encore_device dev = nullptr;
  ASSERT_EQ(encore_device_open(nullptr, &dev), ENCORE_OK) << encore_last_error();
  encore_buffer b = nullptr;
  ASSERT_EQ(encore_buffer_alloc(dev, ENCORE_I32, 32, &b), ENCORE_OK);
  std::vector<int32_t> zeros(32, 0), vals{7, 8, 9}, out(2);
  ASSERT_EQ(encore_buffer_copyin(b, zeros.data(), 32 * 4), ENCORE_OK);
  ASSERT_EQ(encore_buffer_write(b, 11, vals.data(), 3), ENCORE_OK) << encore_last_error();
  ASSERT_EQ(encore_buffer_read(b, 12, out.data(), 2), ENCORE_OK) << encore_last_error();
  EXPECT_EQ(out, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(encore_buffer_write(b, 30, vals.data(), 3), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(encore_last_error(), "do not fit")) << encore_last_error();
  EXPECT_EQ(encore_buffer_read(b, SIZE_MAX / 2, out.data(), 1), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(encore_buffer_read(b, 0, out.data(), 0), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(encore_buffer_write(b, 0, nullptr, 1), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(encore_buffer_read(nullptr, 0, out.data(), 1), ENCORE_ERROR_INVALID_HANDLE);
  EXPECT_EQ(encore_buffer_destroy(b), ENCORE_OK);
  EXPECT_EQ(encore_device_destroy(dev), ENCORE_OK);
}
