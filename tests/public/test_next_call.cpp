// TinyJit's own answer to "does the next call replay?" (next_call_replays, unit_for), per input
// signature, with the jit off and after reset; ExecutionUnit::devices names the queues a run uses.
// Public headers only.
#include <gtest/gtest.h>

#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

auto step(Env& e) {
  return [&e](const Buffer& x, encore::BoundVar k) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.copy(y, x);
    e.dev.launch(e.addk, {x.count()}, {}, y, k.var);
    return y;
  };
}

class NextCall : public OnDevices {};

}  // namespace

TEST_P(NextCall, ReplaysFromCallTwoOfEachSignature) {
  Env& e = env();
  encore::Variable k("k", 0, 100);
  TinyJit jit(step(e), JitOptions{});
  Buffer a = make(e.dev, seq(16, 0.f)), b = make(e.dev, seq(32, 0.f));
  for (int call = 0; call < 4; ++call) {
    EXPECT_EQ(jit.next_call_replays(a, k.bind(call)), call >= 2) << "call " << call;
    EXPECT_EQ(jit.unit_for(a, k.bind(call)) != nullptr, call >= 2);
    jit(a, k.bind(call));
  }
  // another size: its own count, from call 0
  EXPECT_FALSE(jit.next_call_replays(b, k.bind(1)));
  jit(b, k.bind(1));
  jit(b, k.bind(2));
  EXPECT_TRUE(jit.next_call_replays(b, k.bind(3)));
  EXPECT_TRUE(jit.next_call_replays(a, k.bind(3)));
  const encore::ExecutionUnit* u = jit.unit_for(a, k.bind(3));
  ASSERT_NE(u, nullptr);
  ASSERT_EQ(u->devices().size(), 1u);
  EXPECT_TRUE(u->devices()[0] == e.dev);
  jit.reset();
  EXPECT_FALSE(jit.next_call_replays(a, k.bind(3)));
}

TEST_P(NextCall, NeverWhenOff) {
  Env& e = env();
  encore::Variable k("k", 0, 100);
  JitOptions o;
  o.enabled = false;
  TinyJit jit(step(e), o);
  Buffer a = make(e.dev, seq(16, 0.f));
  for (int call = 0; call < 4; ++call) {
    EXPECT_FALSE(jit.next_call_replays(a, k.bind(call)));
    jit(a, k.bind(call));
  }
}

// With max_units 1 every call goes to the one unit: it replays (and refuses inputs unlike the
// capture's with a JitError) whatever the arguments.
TEST_P(NextCall, StrictJitAnswersForItsOneUnit) {
  Env& e = env();
  encore::Variable k("k", 0, 100);
  JitOptions o;
  o.max_units = 1;
  TinyJit jit(step(e), o);
  Buffer a = make(e.dev, seq(16, 0.f)), b = make(e.dev, seq(32, 0.f));
  for (int call = 0; call < 3; ++call) jit(a, k.bind(call));
  EXPECT_TRUE(jit.next_call_replays(b, k.bind(1)));
  expect_jit_error([&] { jit(b, k.bind(1)); }, {"input 0"});
}

ON_NULL_AND_CL(NextCall);
