// Silent divergence caught at capture (issue 16): a closure value that differs between call 0 and
// call 1 (item 1), a Variable used but not passed to the call (item 2), a temporary read before any
// item writes it (item 3).
#include <gtest/gtest.h>

#include <utility>

#include "encore/encore.h"
#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

class CaptureCheck : public OnDevices {};
ON_NULL_AND_CL(CaptureCheck);

JitOptions unchecked() {
  JitOptions o;
  o.capture.check_closure = false;
  return o;
}

}  // namespace

// ---- item 1: closure state that changes between call 0 and call 1 ----------------------------

// The ping-pong: the buffer picked by a host index is frozen by replay.
TEST_P(CaptureCheck, ClosureBufferPickedByHostIndexIsAnErrorAtCapture) {
  Env& e = env();
  const size_t n = 16;
  Buffer T[2] = {make(e.dev, std::vector<float>(n, 0.f)), make(e.dev, std::vector<float>(n, 0.f))};
  int src = 0, dst = 1;
  TinyJit j([&] { e.dev.launch(e.axpb, {n}, {}, T[src], T[dst], 1.f, 1.f); }, JitOptions{});
  j();
  std::swap(src, dst);
  expect_jit_error([&] { j(); }, {"item 0 (kernel axpb)", "argument 0 (const float* x)", "closure buffer", "call 0", "call 1",
                                  "input", "check_closure", "ENCORE_VERIFY"});
  EXPECT_EQ(j.calls(), 0u);  // a failed check starts over: the next call is a warm-up again
  // the fix: the buffers as inputs
  TinyJit fixed([&](const Buffer& a, const Buffer& b) { e.dev.launch(e.axpb, {n}, {}, a, b, 1.f, 1.f); }, JitOptions{});
  T[0].copyin(std::vector<float>(n, 0.f));
  src = 0, dst = 1;
  for (int i = 0; i < 10; ++i) {
    fixed(T[src], T[dst]);
    std::swap(src, dst);
  }
  EXPECT_EQ(fixed.calls(), 10u);
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(T[src])[0], 10.f);
  }
}

// Without the check (off for this jit) the same step is frozen at call 1, as before.
TEST(CaptureCheckOff, PingPongIsFrozenWithTheCheckOff) {
  NEED_CL();
  Env& e = cl();
  const size_t n = 16;
  Buffer T[2] = {make(e.dev, std::vector<float>(n, 0.f)), make(e.dev, std::vector<float>(n, 0.f))};
  int src = 0, dst = 1;
  TinyJit j([&] { e.dev.launch(e.axpb, {n}, {}, T[src], T[dst], 1.f, 1.f); }, unchecked());
  for (int i = 0; i < 10; ++i) {
    j();
    std::swap(src, dst);
  }
  EXPECT_EQ(get(T[src])[0], 2.f);  // replay repeats call 1 (T1 -> T0) forever
}

// The closure scalar: t read from the closure is frozen by replay.
TEST_P(CaptureCheck, ClosureScalarIsAnErrorAtCapture) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  int t = 0;
  TinyJit j([&] { e.dev.launch(e.fillpos, {8}, {}, x, t); }, JitOptions{});
  j();
  t = 1;
  expect_jit_error([&] { j(); }, {"item 0 (kernel fillpos)", "argument 1 (int pos)", "0 in call 0, 1 in call 1", "Variable", "check_closure"});
  // the fix: a Variable
  Variable tv{"t", 0, 100};
  TinyJit fixed([&](encore::BoundVar) { e.dev.launch(e.fillpos, {8}, {}, x, tv); }, JitOptions{});
  for (int i = 0; i < 5; ++i) fixed(tv.bind(i));
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(x)[0], 4000.f);
  }
}

// Which Variable a launch uses, picked on the host, is frozen like any host value.
TEST_P(CaptureCheck, VariablePickedByHostFlagIsAnErrorAtCapture) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  Variable a{"a", 0, 10}, b{"b", 0, 10};
  bool use_b = false;
  TinyJit j([&](encore::BoundVar, encore::BoundVar) { e.dev.launch(e.fillpos, {8}, {}, x, use_b ? b : a); }, JitOptions{});
  j(a.bind(1), b.bind(2));
  use_b = true;
  expect_jit_error([&] { j(a.bind(1), b.bind(2)); }, {"argument 1 (int pos)", "Variable \"a\" as i32 in call 0, Variable \"b\" as i32 in call 1"});
}

TEST_P(CaptureCheck, ClosureLaunchSizeIsAnErrorAtCapture) {
  Env& e = env();
  Buffer y = make(e.dev, std::vector<float>(8, 0.f));
  size_t n = 8;
  TinyJit j([&] { e.dev.launch(e.addk, {n}, {}, y, 1); }, JitOptions{});
  j();
  n = 4;
  expect_jit_error([&] { j(); }, {"global size", "{8} in call 0, {4} in call 1", "Variable"});
}

TEST_P(CaptureCheck, ClosureOutputIsAnErrorAtCapture) {
  Env& e = env();
  Buffer T[2] = {e.dev.alloc<float>(8), e.dev.alloc<float>(8)};
  int k = 0;
  TinyJit j(
      [&](const Buffer& x) {
        e.dev.launch(e.axpb, {8}, {}, x, T[0], 1.f, 0.f);
        e.dev.launch(e.axpb, {8}, {}, x, T[1], 2.f, 0.f);
        return T[k];
      },
      JitOptions{});
  Buffer x = e.dev.alloc<float>(8);
  j(x);
  k = 1;
  expect_jit_error([&] { j(x); }, {"output 0", "closure buffer", "input"});
}

TEST_P(CaptureCheck, UploadOfChangingHostDataIsAnErrorAtCapture) {
  Env& e = env();
  Buffer y = e.dev.alloc<float>(4);
  std::vector<float> host(4, 1.f);
  TinyJit j([&] { y.copyin(host); e.dev.launch(e.addk, {4}, {}, y, 1); }, JitOptions{});
  j();
  host[0] = 2.f;
  expect_jit_error([&] { j(); }, {"item 0 (upload (copyin))", "uploaded host data", "input"});
}

// Temporaries differ between calls by construction: they are matched by the order in which the
// items use them, views included, and a step that allocates as usual passes.
TEST_P(CaptureCheck, TemporariesAndInputsMatch) {
  Env& e = env();
  TinyJit j(
      [&](const Buffer& x) {
        Buffer a = e.dev.alloc<float>(x.count()), b = e.dev.alloc<float>(x.count());
        e.dev.launch(e.axpb, {x.count()}, {}, x, a, 2.f, 1.f);
        e.dev.launch(e.axpb, {x.count()}, {}, a, b, 1.f, 1.f);
        Buffer c = e.dev.alloc<float>(x.count());
        e.dev.launch(e.add, {x.count()}, {}, a, b, c);
        return c;
      },
      JitOptions{});
  Buffer x0 = make(e.dev, seq(8, 0.f)), x1 = make(e.dev, seq(8, 1.f));
  j(x0);
  j(x1);  // another input buffer: inputs match by slot
  Buffer y = j(x0);
  expect_same(e, y, make(e.dev, seq(8, 3.f, 4.f)));  // (2x+1) + (2x+2)
}

// A temporary used in place of another (same kernels, other buffers) is a different step.
TEST_P(CaptureCheck, TemporaryPairingMustHold) {
  Env& e = env();
  bool flip = false;
  TinyJit j(
      [&](const Buffer& x) {
        Buffer a = e.dev.alloc<float>(8), b = e.dev.alloc<float>(8);
        e.dev.launch(e.axpb, {8}, {}, x, a, 1.f, 0.f);
        e.dev.launch(e.axpb, {8}, {}, x, b, 1.f, 0.f);
        Buffer c = e.dev.alloc<float>(8);
        e.dev.launch(e.add, {8}, {}, flip ? b : a, a, c);  // reads b where call 0 read a
        return c;
      },
      JitOptions{});
  Buffer x = e.dev.alloc<float>(8);
  j(x);
  flip = true;
  expect_jit_error([&] { j(x); }, {"item 2 (kernel add)", "argument 0", "allocated during call 0", "allocated during call 1"});
}

// A lazy initialisation that runs only in call 0 (with a kernel the step uses too) has no partner
// in call 1 and is skipped; the buffer it made is the same closure state in call 1.
TEST_P(CaptureCheck, LazyInitialisationInCallZeroPasses) {
  Env& e = env();
  Buffer w;
  TinyJit j(
      [&](const Buffer& x) {
        if (!w) {
          w = e.dev.alloc<float>(8);
          e.dev.launch(e.fillpos, {8}, {}, w, 7);
        }
        Buffer t = e.dev.alloc<float>(8);
        e.dev.launch(e.fillpos, {8}, {}, t, 3);
        Buffer y = e.dev.alloc<float>(8);
        e.dev.launch(e.add, {8}, {}, w, t, y);
        e.dev.launch(e.add, {8}, {}, y, x, y.view(0, 8));
        return y;
      },
      JitOptions{});
  Buffer x = make(e.dev, seq(8, 0.f));
  j(x);
  j(x);
  Buffer y = j(x);
  EXPECT_EQ(j.unit().stats().items, 3u);  // call 1's step: no initialisation
  expect_same(e, y, make(e.dev, seq(8, 10000.f, 3.f)));  // (7000 + i) + (3000 + i) + i
}

// A flag that switches work on once after call 0 (and stays): the extra item has no partner.
TEST_P(CaptureCheck, WorkSwitchedOnAfterCallZeroPasses) {
  Env& e = env();
  bool extra = false;
  TinyJit j(
      [&](const Buffer& x) {
        Buffer y = e.dev.alloc<float>(8);
        e.dev.launch(e.axpb, {8}, {}, x, y, 1.f, 0.f);
        if (extra) e.dev.launch(e.addk, {8}, {}, y, 5);
        return y;
      },
      JitOptions{});
  Buffer x = make(e.dev, seq(8, 0.f));
  j(x);
  extra = true;
  j(x);
  Buffer y = j(x);
  EXPECT_EQ(j.unit().stats().items, 2u);
  expect_same(e, y, make(e.dev, seq(8, 5.f)));
}

// A value that changes once after call 0 and stays: an error by default, right with the check off.
TEST_P(CaptureCheck, ValueChangedOnceAfterCallZeroNeedsTheSwitch) {
  Env& e = env();
  float bias = 0.f;
  auto f = [&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(8);
    e.dev.launch(e.axpb, {8}, {}, x, y, 1.f, bias);
    return y;
  };
  Buffer x = make(e.dev, seq(8, 0.f));
  TinyJit checked(f, JitOptions{});
  checked(x);
  bias = 1.f;
  expect_jit_error([&] { checked(x); }, {"argument 3 (float b)", "0.000000 in call 0, 1.000000 in call 1", "check_closure = false"});
  bias = 0.f;
  TinyJit j(f, unchecked());
  j(x);
  bias = 1.f;
  j(x);
  expect_same(e, j(x), make(e.dev, seq(8, 1.f)));
}

// The C API's jit goes through the same capture path.
namespace {
struct CStep {
  encore_device dev;
  encore_kernel fillpos;
  encore_buffer x;
  int t;
};
encore_status c_step(void* ud, const encore_buffer*, size_t, const encore_bound_var*, size_t, encore_buffer*, size_t) {
  auto* s = static_cast<CStep*>(ud);
  size_t n = 8;
  encore_arg args[2] = {encore_arg_buffer(s->x), encore_arg_i32(s->t)};
  return encore_launch(s->dev, s->fillpos, &n, nullptr, 1, args, 2);
}
}  // namespace

TEST(CaptureCheckCApi, ClosureScalarIsAnErrorAtCapture) {
  CStep s{};
  ASSERT_EQ(encore_device_open("NULL", &s.dev), ENCORE_OK);
  encore_program p;
  ASSERT_EQ(encore_program_compile(s.dev, kJitSrc, nullptr, &p), ENCORE_OK) << encore_last_error();
  ASSERT_EQ(encore_kernel_create(p, "fillpos", &s.fillpos), ENCORE_OK);
  ASSERT_EQ(encore_buffer_alloc(s.dev, ENCORE_F32, 8, &s.x), ENCORE_OK);
  encore_jit jit;
  ASSERT_EQ(encore_jit_create(c_step, &s, 0, nullptr, &jit), ENCORE_OK);
  ASSERT_EQ(encore_jit_call(jit, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, nullptr), ENCORE_OK);
  s.t = 1;
  EXPECT_EQ(encore_jit_call(jit, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, nullptr), ENCORE_ERROR_JIT);
  EXPECT_TRUE(contains(encore_last_error(), "argument 1 (int pos)")) << encore_last_error();
  encore_jit_destroy(jit);
  encore_buffer_destroy(s.x);
  encore_kernel_destroy(s.fillpos);
  encore_program_destroy(p);
  encore_device_destroy(s.dev);
}

// ---- item 2: a Variable bound on the thread but not passed to the call -------------------------

TEST_P(CaptureCheck, VariableNotPassedToTheCallIsAnErrorOnEveryPath) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  Variable t{"t", 0, 100};
  auto step = [&] { e.dev.launch(e.fillpos, {8}, {}, x, t); };
  for (bool enabled : {true, false}) {
    JitOptions o;
    o.enabled = enabled;
    TinyJit j(step, o);
    t.bind(0);
    expect_jit_error([&] { j(); }, {"Variable \"t\"", "not passed", "var.bind(value)"});
    EXPECT_EQ(j.calls(), 0u);
  }
  // in a launch size too
  Variable n{"n", 1, 8};
  TinyJit sized([&] { e.dev.launch(e.addk, {n}, {}, x, 1); }, JitOptions{});
  n.bind(4);
  expect_jit_error([&] { sized(); }, {"Variable \"n\"", "not passed"});
  // the same step outside any TinyJit still sees the thread's binding
  t.bind(3);
  step();
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(x)[0], 3000.f);
  }
}

// Passed, the call's value wins over the thread's binding on every call, eager and replay alike.
TEST_P(CaptureCheck, PassedVariableIsWhatEagerAndReplaySee) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  Variable t{"t", 0, 100};
  TinyJit j([&](encore::BoundVar) { e.dev.launch(e.fillpos, {8}, {}, x, t); }, JitOptions{});
  for (int i = 0; i < 5; ++i) {
    encore::BoundVar b = t.bind(i);
    t.bind(99);  // the thread's binding: not what the call sees
    j(b);
    if (!e.dev.is_null()) {
      EXPECT_EQ(get(x)[0], static_cast<float>(1000 * i)) << "call " << i;
    }
  }
  EXPECT_EQ(j.calls(), 5u);
}

// A nested jit's step may use a Variable passed to the enclosing call: the outer replay binds it.
TEST_P(CaptureCheck, VariablePassedToTheEnclosingCallReachesANestedJit) {
  Env& e = env();
  Buffer x = e.dev.alloc<float>(8);
  Variable t{"t", 0, 100};
  TinyJit inner([&] { e.dev.launch(e.fillpos, {8}, {}, x, t); }, JitOptions{});
  TinyJit outer([&](encore::BoundVar) { inner(); }, JitOptions{});
  for (int i = 0; i < 4; ++i) outer(t.bind(i));
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(x)[0], 3000.f);
  }
  expect_jit_error([&] { inner(); }, {"Variable \"t\"", "not passed"});
}

// Verify mode's message no longer sends the user to Variables alone: what varies must be passed.
TEST(CaptureCheckVerify, VerifyMessageSaysToPassWhatVaries) {
  NEED_CL();
  Env& e = cl();
  float scale = 2.f;
  TinyJit j(
      [&](const Buffer& x) {
        Buffer y = e.dev.alloc<float>(x.count());
        e.dev.launch(e.axpb, {x.count()}, {}, x, y, scale, 0.f);
        return y;
      },
      JitOptions{.verify = 2});
  Buffer x = make(e.dev, seq(8, 1.f));
  j(x);
  j(x);
  scale = 3.f;  // changes only after the capture: the capture check cannot see it, verify does
  expect_jit_error([&] { j(x); }, {"verify", "frozen", "passed to the call"});
}

// ---- item 3: a temporary read before any item writes it ---------------------------------------

TEST_P(CaptureCheck, TemporaryReadBeforeWriteIsAnErrorAtCapture) {
  Env& e = env();
  TinyJit j(
      [&](const Buffer& x) {
        Buffer t = e.dev.alloc<float>(x.count());
        t.set_name("scratch");
        Buffer y = e.dev.alloc<float>(x.count());
        e.dev.launch(e.add, {x.count()}, {}, t, x, y);  // t is const: a pure read of undefined bytes
        return y;
      },
      JitOptions{});
  Buffer x = make(e.dev, seq(8, 0.f));
  j(x);  // eager: undefined bytes, undiagnosed (nothing recorded is planned yet)
  expect_jit_error([&] { j(x); }, {"item 0", "kernel add", "argument 0 (const float* a)", "scratch", "before any item writes it"});
  // explicit capture too
  encore::Capture cap;
  Buffer t = e.dev.alloc<float>(8), y = e.dev.alloc<float>(8);
  e.dev.launch(e.add, {8}, {}, t, x, y);
  expect_jit_error([&] { cap.end(); }, {"before any item writes it"});
}

TEST_P(CaptureCheck, TemporaryCopiedBeforeWriteIsAnError) {
  Env& e = env();
  TinyJit j(
      [&](const Buffer& x) {
        Buffer t = e.dev.alloc<float>(x.count()), y = e.dev.alloc<float>(x.count());
        e.dev.copy(y, t);
        e.dev.launch(e.add, {x.count()}, {}, y, x, y.view(0, x.count()));
        return y;
      },
      JitOptions{});
  Buffer x = make(e.dev, seq(8, 0.f));
  j(x);
  expect_jit_error([&] { j(x); }, {"item 0", "copy's source", "before any item writes it"});
}

// inout first (no const): counts as a pure write (DESIGN rule 2), not an error; and a write
// anywhere in the storage before the read passes.
TEST_P(CaptureCheck, FirstAccessThatMayWriteIsNotAnError) {
  Env& e = env();
  TinyJit j(
      [&](const Buffer& x) {
        Buffer t = e.dev.alloc<float>(x.count());
        e.dev.launch(e.fillpos, {x.count()}, {}, t, 1);  // float* y: inout
        Buffer y = e.dev.alloc<float>(x.count());
        e.dev.launch(e.add, {x.count()}, {}, t, x, y);
        return y;
      },
      JitOptions{});
  Buffer x = make(e.dev, seq(8, 0.f));
  j(x);
  j(x);
  expect_same(e, j(x), make(e.dev, seq(8, 1000.f, 2.f)));
}
