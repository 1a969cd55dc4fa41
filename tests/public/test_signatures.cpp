// TinyJit keeps one unit per input signature: alternating shapes replay as eager, a new signature
// warms up and captures its own unit, the least recently used is dropped past max_units,
// max_units = 1 is strict, a Variable's value never captures again, and the units of one jit share
// one arena per device. Public headers only.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

// Two temporaries and an output, all sized by the input: a step whose unit depends on the shape.
auto shaped_step(Env& e) {
  return [&e](const Buffer& x) {
    const int n = static_cast<int>(x.count());
    Buffer t = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, t, 2.0f, 1.0f);
    Buffer u = e.dev.alloc<float>(x.count());
    e.dev.launch(e.rev, {x.count()}, {}, t, u, n);
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.add, {x.count()}, {}, u, x, y);
    return y;
  };
}

class Signatures : public OnDevices {};

}  // namespace

TEST_P(Signatures, AlternatingShapesReplayAsEager) {
  Env& e = env();
  auto f = shaped_step(e);
  TinyJit jit(f, JitOptions{});
  const size_t sizes[] = {64, 96, 128};
  std::vector<Buffer> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(make(e.dev, seq(sizes[i % 3], 3.f * i, 0.25f)));
  for (int call = 0; call < 24; ++call) {
    // two signatures for the first 8 calls, then all three
    const Buffer& x = xs[call < 8 ? call % 2 : call % 6];
    Buffer got = jit(x);
    EXPECT_EQ(got.count(), x.count());
    expect_same(e, got, f(x));
  }
  auto units = jit.units();
  ASSERT_EQ(units.size(), 3u);
  size_t total_calls = 0;
  for (const auto& u : units) {
    total_calls += u.calls;
    EXPECT_GE(u.calls, 2u) << u.signature;
    EXPECT_EQ(u.unit->stats().items_replayed, 3u) << u.signature;
    EXPECT_NE(u.signature.find("f32["), std::string::npos) << u.signature;
  }
  EXPECT_EQ(total_calls, 24u);
}

TEST_P(Signatures, NewSignatureWarmsUpThenCapturesThenReplays) {
  Env& e = env();
  auto f = shaped_step(e);
  TinyJit jit(f, JitOptions{});
  Buffer a = make(e.dev, seq(64, 1.f)), b = make(e.dev, seq(32, 1.f));
  jit(a), jit(a), jit(a);  // a: warm-up, capture, replay
  EXPECT_EQ(jit.calls(), 3u);
  EXPECT_EQ(jit.unit().stats().items, 3u);
  jit(b);  // b's call 0: eager, its own count
  EXPECT_EQ(jit.calls(), 1u);
  EXPECT_FALSE(jit.unit()) << "no unit before b's capture";
  jit(b);
  EXPECT_EQ(jit.calls(), 2u);
  EXPECT_EQ(jit.unit().stats().items, 3u);
  jit(a);  // a is still known: a replay
  EXPECT_EQ(jit.calls(), 4u);
  EXPECT_EQ(jit.units().size(), 2u);
  EXPECT_EQ(jit.units()[0].calls, 4u) << "most recently used first";
  // a view of the same length is another signature (its offset may vary: just another input)
  Buffer big = make(e.dev, seq(128, 0.f));
  Buffer v = big.view(64, 64);
  jit(v);
  EXPECT_EQ(jit.calls(), 1u);
  EXPECT_EQ(jit.units().size(), 3u);
  jit.reset();
  EXPECT_EQ(jit.units().size(), 0u);
  EXPECT_EQ(jit.calls(), 0u);
}

TEST_P(Signatures, LeastRecentlyUsedIsDroppedPastMaxUnits) {
  Env& e = env();
  auto f = shaped_step(e);
  TinyJit jit(f, JitOptions{.max_units = 2});
  Buffer a = make(e.dev, seq(64, 1.f)), b = make(e.dev, seq(32, 1.f)), c = make(e.dev, seq(16, 1.f));
  for (int i = 0; i < 3; ++i) jit(a);
  for (int i = 0; i < 3; ++i) jit(b);
  jit(a);  // a is now more recent than b
  LogCapture log;
  for (int i = 0; i < 3; ++i) expect_same(e, jit(c), f(c));  // drops b
  ASSERT_EQ(jit.units().size(), 2u);
  for (const auto& u : jit.units()) EXPECT_EQ(u.signature.find("[32]"), std::string::npos) << u.signature << " should have been dropped";
  jit(b);  // b again: warm-up
  EXPECT_EQ(jit.calls(), 1u);
  expect_same(e, jit(a), f(a));  // a was dropped by b's return (least recently used): a warm-up again, still correct
  EXPECT_EQ(jit.calls(), 1u);
}

TEST_P(Signatures, MaxUnitsOneIsStrict) {
  Env& e = env();
  auto f = shaped_step(e);
  TinyJit jit(f, JitOptions{.max_units = 1});
  Buffer a = make(e.dev, seq(64, 1.f)), b = make(e.dev, seq(32, 1.f));
  jit(a), jit(a), jit(a);
  expect_jit_error([&] { jit(b); }, {"input 0", "64", "32"});
  expect_same(e, jit(a), f(a));  // still usable
  EXPECT_EQ(jit.units().size(), 1u);
}

TEST_P(Signatures, VariableValuesNeverCaptureAgain) {
  Env& e = env();
  encore::Variable k{"k", 0, 100};
  auto f = [&](const Buffer& x, encore::BoundVar) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, 1.0f, 0.0f);
    e.dev.launch(e.addk, {x.count()}, {}, y, k);
    return y;
  };
  TinyJit jit(f, JitOptions{});
  Buffer x = make(e.dev, seq(64, 1.f));
  for (int i = 0; i < 10; ++i) expect_same(e, jit(x, k.bind(i)), f(x, k.bind(i)));
  EXPECT_EQ(jit.units().size(), 1u);
  EXPECT_EQ(jit.calls(), 10u);
}

ON_NULL_AND_CL(Signatures);

// The units of one jit share one arena per device: device memory in use is the largest unit's
// arena, not the sum (AllocatorStats), once each unit ran on the grown arena.
TEST(SignaturesMemory, UnitsShareOneArena) {
  Env& e = null_env();
  auto f = shaped_step(e);
  TinyJit jit(f, JitOptions{});
  Buffer small = make(e.dev, seq(1024, 1.f)), large = make(e.dev, seq(8192, 1.f));
  const size_t before = e.dev.allocator_stats().bytes_in_use;
  for (int i = 0; i < 3; ++i) jit(small);
  const uint64_t planned_small = jit.unit().stats().temp_bytes_planned;
  for (int i = 0; i < 3; ++i) jit(large);
  const uint64_t planned_large = jit.unit().stats().temp_bytes_planned;
  jit(small);  // rebinds onto the grown arena, letting the small one go
  ASSERT_GT(planned_small, 0u);
  ASSERT_GT(planned_large, planned_small);
  const size_t outputs = (1024 + 8192) * sizeof(float);  // each unit's captured output
  const size_t in_use = e.dev.allocator_stats().bytes_in_use - before;
  EXPECT_GE(in_use, planned_large + outputs);
  EXPECT_LT(in_use, planned_large + planned_small + outputs) << "the arenas were not shared";
}
