// The fill item (Device::fill, encore_buffer_fill): every element of a buffer or a view set to one
// value, eagerly and captured, with replay equal to eager on NULL and OpenCL, and pruning and
// planning treating a fill as a write of its destination.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "encore/encore.h"
#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

class Fill : public OnDevices {};
ON_NULL_AND_CL(Fill);

TEST_P(Fill, EagerSetsEveryElementOfEachType) {
  const encore::Device& d = env().dev;
  Buffer f = make(d, seq(37, 1.f));
  d.fill(f, 2.5f);
  EXPECT_EQ(get(f), std::vector<float>(37, 2.5f));
  Buffer i = d.alloc<int32_t>(9);
  d.fill(i, int32_t{-7});
  EXPECT_EQ(i.copyout<int32_t>(), std::vector<int32_t>(9, -7));
  Buffer l = d.alloc<int64_t>(5);
  d.fill(l, int64_t{0x0123456789abcdefLL});  // all 8 bytes of the pattern, not its low ones
  EXPECT_EQ(l.copyout<int64_t>(), std::vector<int64_t>(5, 0x0123456789abcdefLL));
  Buffer b = d.alloc<uint8_t>(13);
  d.fill(b, uint8_t{0xA5});
  EXPECT_EQ(b.copyout<uint8_t>(), std::vector<uint8_t>(13, 0xA5));
  Buffer h = d.alloc<uint16_t>(3);
  const uint16_t v = 0xBEEF;
  d.fill_bytes(h, &v, sizeof v);
  EXPECT_EQ(h.copyout<uint16_t>(), std::vector<uint16_t>(3, 0xBEEF));
}

TEST_P(Fill, OfAViewTouchesOnlyItsElements) {
  const encore::Device& d = env().dev;
  Buffer x = make(d, seq(64, 0.f));
  d.fill(x.view(32, 8), -1.f);
  std::vector<float> want = seq(64, 0.f);
  for (size_t k = 32; k < 40; ++k) want[k] = -1.f;
  EXPECT_EQ(get(x), want);
}

TEST_P(Fill, BadArgumentsAreErrorsThatChangeNothing) {
  const encore::Device& d = env().dev;
  Buffer x = make(d, seq(8, 0.f));
  try {
    d.fill(x, 1);  // an int into a float buffer: cast it
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const encore::ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "i32")) << e.what();
    EXPECT_TRUE(contains(e.what(), "f32[8]")) << e.what();
  }
  const double wide = 1.0;
  EXPECT_THROW(d.fill_bytes(x, &wide, sizeof wide), encore::ArgumentError);
  EXPECT_THROW(d.fill(Buffer(), 1.f), encore::ArgumentError);
  EXPECT_THROW(d.fill_bytes(x, nullptr, 4), encore::ArgumentError);
  encore::Device other = encore::Device::open("NULL").split(2)[1];
  EXPECT_THROW(other.fill(x, 1.f), encore::ArgumentError);
  EXPECT_EQ(get(x), seq(8, 0.f));
}

// Replay on NULL runs fills and copies for real: the whole step is compared, byte for byte.
TEST_P(Fill, CapturedFillsReplayAsEager) {
  const encore::Device& d = env().dev;
  auto step = [&](const Buffer& x) {
    d.fill(x.view(32, 3), 9.f);           // into the input, through a view
    Buffer t = d.alloc<float>(x.count());  // a planned temporary, written by the fill
    d.fill(t, 0.5f);
    Buffer y = d.alloc<float>(x.count());
    d.copy(y, x);
    d.fill(y.view(0, 1), -3.f);
    if (!d.is_null()) d.launch(env().add, {x.count()}, {}, t, x, y);
    return y;
  };
  TinyJit jit(step);
  std::vector<Buffer> xj, xe;
  for (int i = 0; i < 3; ++i) {
    xj.push_back(make(d, seq(64, 10.f * static_cast<float>(i))));
    xe.push_back(make(d, seq(64, 10.f * static_cast<float>(i))));
  }
  for (int call = 0; call < 7; ++call) {
    std::vector<float> got = get(jit(xj[call % 3]));
    ASSERT_EQ(got, get(step(xe[call % 3]))) << "call " << call;
    ASSERT_EQ(get(xj[call % 3]), get(xe[call % 3])) << "call " << call;
  }
  const encore::ExecutionUnit& u = jit.unit();
  size_t fills = 0;
  for (const encore::ExecItem& it : u.items())
    if (it.kind == encore::ItemKind::fill) {
      ++fills;
      EXPECT_TRUE(contains(it.describe(), "fill ")) << it.describe();
    }
  EXPECT_EQ(fills, 3u);
  // the temporary's fill is its only writer and reads nothing: one-time (its bytes then stay, never
  // planned); the input's fill touches an input and y's has another writer (the copy): replayed
  std::vector<bool> once = u.one_time();
  EXPECT_FALSE(once[0]);
  EXPECT_TRUE(once[1]);
  EXPECT_FALSE(once[3]);
}

// A kernel reads what a fill wrote: the fill writes its destination before the launch on replay.
// The temporary has a second writer (accum), so the fill replays and the temporary is planned.
TEST(FillCL, ThenKernelReads) {
  NEED_CL();
  Env& e = cl();
  auto step = [&](const Buffer& x) {
    Buffer t = e.dev.alloc<float>(x.count());
    e.dev.fill(t, 1.5f);
    e.dev.launch(e.accum, {x.count()}, {}, t, x);  // t = 1.5 + x
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.add, {x.count()}, {}, t, x, y);
    return y;
  };
  TinyJit jit(step);
  for (int call = 0; call < 5; ++call) {
    Buffer x = make(e.dev, seq(256, static_cast<float>(call)));
    ASSERT_EQ(get(jit(x)), get(step(x))) << "call " << call;
  }
  EXPECT_EQ(get(jit(make(e.dev, seq(256, 0.f)))), seq(256, 1.5f, 2.f));
  EXPECT_EQ(jit.unit().stats().items_pruned, 0u);
  EXPECT_GE(jit.unit().stats().planned_temps, 1u);
}

// Pruning sees a fill as a write. Reset-then-accumulate: the fill is one of two writers of the
// accumulator, so it must replay every call (pruning it would let the sums run on).
TEST(FillCL, ResetBeforeAccumulateIsNeverPruned) {
  NEED_CL();
  Env& e = cl();
  Buffer acc_j = e.dev.alloc<float>(64), acc_e = e.dev.alloc<float>(64);
  auto step = [&](const Buffer& acc, const Buffer& x) {
    e.dev.fill(acc, 0.f);
    e.dev.launch(e.accum, {x.count()}, {}, acc, x);
    e.dev.launch(e.accum, {x.count()}, {}, acc, x);
  };
  TinyJit jit([&](const Buffer& x) {
    step(acc_j, x);
    return acc_j;
  });
  for (int call = 0; call < 5; ++call) {
    Buffer x = make(e.dev, seq(64, static_cast<float>(call)));
    jit(x);
    step(acc_e, x);
    ASSERT_EQ(get(acc_j), get(acc_e)) << "call " << call;
    ASSERT_EQ(get(acc_j), seq(64, 2.f * static_cast<float>(call), 2.f)) << "call " << call;
  }
  EXPECT_EQ(jit.unit().stats().items_pruned, 0u);
}

// A fill of closure state that nothing else writes, read by the step: one-time, pruned; a host
// write to that state between calls makes the replay run it again (its version changed).
TEST(FillCL, OneTimeFillIsPrunedAndRerunWhenItsStateChanges) {
  NEED_CL();
  Env& e = cl();
  Buffer bias = e.dev.alloc<float>(32);
  auto step = [&](const Buffer& x) {
    e.dev.fill(bias, 4.f);
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.add, {x.count()}, {}, x, bias, y);
    return y;
  };
  TinyJit jit(step);
  for (int call = 0; call < 3; ++call) jit(make(e.dev, seq(32, 0.f)));
  EXPECT_EQ(jit.unit().stats().items_pruned, 1u);
  EXPECT_EQ(jit.unit().one_time()[0], true);
  bias.copyin(seq(32, 100.f));  // eager execution would fill it again at the next call
  EXPECT_EQ(get(jit(make(e.dev, seq(32, 0.f)))), seq(32, 4.f, 1.f));
}

// A fill's value is a constant of the capture: one that differs between call 0 and call 1 is the
// capture check's error, named as a fill (not as a copyin).
TEST_P(Fill, AValueThatChangesBetweenCallsIsACaptureError) {
  const encore::Device& d = env().dev;
  float v = 1.f;
  Buffer x = d.alloc<float>(64);
  auto jit = TinyJit([&](const Buffer& b) { d.fill(b, v); });
  jit(x);
  v = 2.f;
  try {
    jit(x);
    ADD_FAILURE() << "no JitError";
  } catch (const encore::JitError& e) {
    EXPECT_TRUE(contains(e.what(), "fill value")) << e.what();
    EXPECT_TRUE(contains(e.what(), "(fill")) << e.what();
  }
}

TEST_P(Fill, CFormMatchesTheCppForm) {
  encore_device dev = nullptr;
  ASSERT_EQ(encore_device_open(GetParam() == "NULL" ? "NULL" : nullptr, &dev), ENCORE_OK) << encore_last_error();
  encore_buffer b = nullptr;
  ASSERT_EQ(encore_buffer_alloc(dev, ENCORE_I32, 10, &b), ENCORE_OK);
  const int32_t v = 42;
  ASSERT_EQ(encore_buffer_fill(b, &v, sizeof v), ENCORE_OK) << encore_last_error();
  std::vector<int32_t> got(10);
  ASSERT_EQ(encore_buffer_copyout(b, got.data(), got.size() * 4), ENCORE_OK);
  EXPECT_EQ(got, std::vector<int32_t>(10, 42));
  EXPECT_EQ(encore_buffer_fill(b, &v, 2), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(encore_last_error(), "element")) << encore_last_error();
  EXPECT_EQ(encore_buffer_fill(b, nullptr, 4), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(encore_buffer_fill(nullptr, &v, 4), ENCORE_ERROR_INVALID_HANDLE);
  encore_buffer_destroy(b);
  encore_device_destroy(dev);
}
