// TinyJit::drop (issue 26 item 9): dropping one signature's unit lets go of what it kept alive
// (its captured inputs, state and outputs), and leaves the jit's other units as they were.
#include <gtest/gtest.h>

#include <memory>

#include "jit_env.hpp"

using namespace encore_test;

namespace {

JitOptions on() {
  JitOptions o;  // not from_env: these tests replay whatever ENCORE_JIT says
  o.enabled = true;
  return o;
}

}  // namespace

class JitDrop : public OnDevices {};

TEST_P(JitDrop, ReleasesTheUnitsInputsAndMemory) {
  Env& e = env();
  const size_t big = size_t(16) << 20;  // 64 MiB of floats: the old state of the issue
  TinyJit jit([&](Buffer x) { e.dev.launch(e.addk, {x.count()}, {}, x, 1); }, on());
  std::weak_ptr<encore::detail::BufferImpl> old;
  const size_t before = e.dev.allocator_stats().bytes_in_use;
  {
    Buffer x = e.dev.alloc<float>(big);
    old = x.shared_impl();
    for (int i = 0; i < 3; ++i) jit(x);
    ASSERT_TRUE(jit.next_call_replays(x));
  }
  Buffer small = e.dev.alloc<float>(64);
  for (int i = 0; i < 3; ++i) jit(small);
  EXPECT_FALSE(old.expired()) << "the unit of the first signature still holds its captured input";
  EXPECT_GE(e.dev.allocator_stats().bytes_in_use, before + big * sizeof(float));

  Buffer same_signature = e.dev.alloc<float>(big);  // never allocated: a handle is enough
  EXPECT_TRUE(jit.drop(same_signature));
  EXPECT_TRUE(old.expired()) << "dropping the unit lets its input go";
  EXPECT_LT(e.dev.allocator_stats().bytes_in_use, before + big * sizeof(float));
  EXPECT_FALSE(same_signature.allocated());
  EXPECT_FALSE(jit.drop(same_signature)) << "nothing left to drop";

  // the other unit is untouched: it still replays; the dropped signature starts over at call 0
  ASSERT_EQ(jit.units().size(), 1u);
  EXPECT_TRUE(jit.next_call_replays(small));
  EXPECT_FALSE(jit.next_call_replays(same_signature));
  jit(small);
  EXPECT_EQ(jit.calls(), 4u);
  jit(same_signature);
  EXPECT_EQ(jit.calls(), 1u);
}

TEST_P(JitDrop, TheLastUnitAndItsOutputs) {
  Env& e = env();
  TinyJit jit(
      [&](Buffer x) {
        Buffer y = e.dev.alloc<float>(x.count());
        e.dev.launch(e.axpb, {x.count()}, {}, x, y, 2.f, 1.f);
        return y;
      },
      on());
  Buffer x = e.dev.alloc<float>(256);
  std::weak_ptr<encore::detail::BufferImpl> out;
  for (int i = 0; i < 3; ++i) out = jit(x).shared_impl();
  EXPECT_FALSE(out.expired()) << "the unit returns the same output every replay";
  EXPECT_TRUE(jit.drop(x));
  EXPECT_TRUE(out.expired()) << "its output goes with it";
  EXPECT_EQ(jit.calls(), 0u);
  EXPECT_FALSE(jit.unit());
  EXPECT_EQ(x.shared_impl().use_count(), 1) << "nothing in the jit holds the input";
  for (int i = 0; i < 3; ++i) jit(x);
  EXPECT_EQ(jit.calls(), 3u);
}

TEST_P(JitDrop, KeysAndVariablesArePartOfTheSignature) {
  Env& e = env();
  encore::Variable k{"k", 0, 100};
  TinyJit jit([&](Buffer x, encore::BoundVar kv, encore::Key) { e.dev.launch(e.addk, {x.count()}, {}, x, kv.var); }, on());
  Buffer x = e.dev.alloc<float>(32);
  for (int i = 0; i < 3; ++i) jit(x, k.bind(i), encore::key(0));
  for (int i = 0; i < 3; ++i) jit(x, k.bind(i), encore::key(1));
  EXPECT_FALSE(jit.drop(x, k.bind(0), encore::key(2)));
  EXPECT_TRUE(jit.drop(x, k.bind(50), encore::key(1)));  // any value of k: the same signature
  ASSERT_EQ(jit.units().size(), 1u);
  EXPECT_TRUE(jit.next_call_replays(x, k.bind(3), encore::key(0)));
}

TEST_P(JitDrop, FromInsideItsOwnStepIsAnError) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  std::function<void(Buffer)> body;
  TinyJit jit([&](Buffer b) { body(b); }, on());
  body = [&](Buffer b) { e.dev.launch(e.addk, {8}, {}, b, 1); };
  jit(x);
  body = [&](Buffer) { (void)jit.drop(x); };
  expect_jit_error([&] { jit(x); }, {"drop a unit", "inside its own step"});
}

// A replayed call's input buffers are held by its unit until a later call replaces them, and no
// longer: the call that binds new inputs lets the replaced ones go (the jit binds a call's inputs
// by moving its handles in and the replaced ones out, then letting those go).
TEST_P(JitDrop, AReplacedInputIsLetGoByTheCallThatReplacesIt) {
  Env& e = env();
  TinyJit jit([&](Buffer x, Buffer y) { e.dev.launch(e.axpb, {x.count()}, {}, x, y, 2.f, 1.f); }, on());
  Buffer a = make(e.dev, seq(64, 1.f)), b = e.dev.alloc<float>(64);
  jit(a, b);
  jit(b, a);  // warm-up, capture: their buffers stay the unit's captured inputs
  std::weak_ptr<encore::detail::BufferImpl> pw, qw;
  {
    Buffer p = make(e.dev, seq(64, 2.f)), q = e.dev.alloc<float>(64);
    pw = p.shared_impl();
    qw = q.shared_impl();
    ASSERT_TRUE(jit.next_call_replays(p, q));
    jit(p, q);
    if (!e.dev.is_null()) {
      EXPECT_EQ(get(q)[5], 2.f * 7.f + 1.f);
    }
  }
  EXPECT_FALSE(pw.expired()) << "the unit holds the inputs of its last call";
  EXPECT_FALSE(qw.expired());
  Buffer r = make(e.dev, seq(64, 3.f)), s = e.dev.alloc<float>(64);
  jit(r, s);
  EXPECT_TRUE(pw.expired()) << "the call that replaces an input lets the old one go";
  EXPECT_TRUE(qw.expired());
  jit(s, r);  // the same two buffers, slots swapped: each moves to the other slot
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(s)[5], 2.f * 8.f + 1.f);
    EXPECT_EQ(get(r)[5], 2.f * get(s)[5] + 1.f);
  }
  EXPECT_EQ(jit.calls(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Devices, JitDrop, ::testing::Values("NULL", "CL"));
