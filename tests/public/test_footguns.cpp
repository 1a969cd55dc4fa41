// The surprising behaviours of TinyJit, one test each. Every test states the behaviour, shows it
// happening, and shows the way to get what you meant. See also the FOOTGUNS note in encore/jit.hpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

std::vector<float> axpb_host(const std::vector<float>& x, float a, float b) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + b;
  return y;
}

}  // namespace

// FOOTGUN 1: replay returns the SAME output buffers every call and overwrites them in place. A
// result kept from an earlier call changes under you. Copy what you keep (or fresh_outputs).
TEST(Footguns, OutputsAreTheSameBuffersOverwrittenInPlace) {
  NEED_CL();
  Env& e = cl();
  TinyJit jit([&e](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, 2.f, 0.f);
    return y;
  }, JitOptions{});
  Buffer a = make(e.dev, seq(16, 1.f)), b = make(e.dev, seq(16, 100.f));
  jit(a);
  jit(a);
  Buffer kept = jit(a);  // replay: result for a
  EXPECT_EQ(get(kept), axpb_host(seq(16, 1.f), 2.f, 0.f));
  Buffer next = jit(b);  // replay with b...
  EXPECT_EQ(next, kept);  // ...returns the same buffer,
  EXPECT_EQ(get(kept), axpb_host(seq(16, 100.f), 2.f, 0.f));  // so the kept result now holds b's

  JitOptions o;
  o.fresh_outputs = true;  // the opt-in: a new buffer per call
  TinyJit fresh([&e](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, 2.f, 0.f);
    return y;
  }, o);
  fresh(a);
  fresh(a);
  Buffer k2 = fresh(a);
  fresh(b);
  EXPECT_EQ(get(k2), axpb_host(seq(16, 1.f), 2.f, 0.f));
}

// FOOTGUN 2: host branches are taken once, at capture. A closure flag flipped later does not
// change which kernels replay runs. Pass the choice as an argument (a changed scalar is a JitError)
// or keep two jits.
TEST(Footguns, HostBranchesTakenAtCaptureAreFrozen) {
  NEED_CL();
  Env& e = cl();
  bool double_it = true;
  auto f = [&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(x.count());
    if (double_it) e.dev.launch(e.axpb, {x.count()}, {}, x, y, 2.f, 0.f);
    else e.dev.launch(e.axpb, {x.count()}, {}, x, y, -1.f, 0.f);
    return y;
  };
  TinyJit jit(f, JitOptions{});
  Buffer x = make(e.dev, seq(8, 1.f));
  jit(x);
  jit(x);  // captured with double_it == true
  double_it = false;
  EXPECT_EQ(get(jit(x)), axpb_host(seq(8, 1.f), 2.f, 0.f));   // replay: still the captured branch
  EXPECT_EQ(get(f(x)), axpb_host(seq(8, 1.f), -1.f, 0.f));    // eager takes the other branch

  auto g = [&](const Buffer& x, bool dbl) {  // the choice as an argument is checked
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, dbl ? 2.f : -1.f, 0.f);
    return y;
  };
  TinyJit checked(g, JitOptions{});
  checked(x, true);
  checked(x, true);
  EXPECT_THROW(checked(x, false), JitError);
}

// FOOTGUN 3: buffers the callable reaches through its closure are state, not inputs. Replay keeps
// using (and writing) the buffer captured at call 1; pointing the closure variable at another
// buffer afterwards changes nothing. Pass it as an argument if it should vary.
TEST(Footguns, ClosureBuffersAreStateAndReplayUsesThem) {
  NEED_CL();
  Env& e = cl();
  Buffer state = make(e.dev, std::vector<float>(8, 0.f));
  Buffer original = state;
  TinyJit jit([&](const Buffer& x) { e.dev.launch(e.accum, {x.count()}, {}, state, x); }, JitOptions{});
  Buffer x = make(e.dev, std::vector<float>(8, 1.f));
  jit(x);
  jit(x);  // capture: state is original
  state = make(e.dev, std::vector<float>(8, 50.f));  // the closure now refers to a new buffer...
  jit(x);
  jit(x);
  EXPECT_EQ(get(original), std::vector<float>(8, 4.f));  // ...but replay accumulated into the original
  EXPECT_EQ(get(state), std::vector<float>(8, 50.f));    // and never touched the new one
}

// FOOTGUN 4: a value the callable computes on the host (a step counter, a value read from a
// closure) is frozen at capture: replay cannot see host code. Use a Variable. The capture check
// (JitOptions::capture.check_closure) finds a value that differs between calls 0 and 1; verify mode
// (JitOptions::verify / ENCORE_VERIFY=N) finds the others by comparing replays with eager runs.
TEST(Footguns, HostValueComputedInCallableIsFrozenAndVerifyCatchesIt) {
  NEED_CL();
  Env& e = cl();
  int step = 0;
  auto f = [&](const Buffer& x) {
    float bias = static_cast<float>(step++);  // host value, different every call
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, 1.f, bias);
    return y;
  };
  Buffer x = make(e.dev, seq(8, 0.f));
  {
    TinyJit jit(f, JitOptions{});
    jit(x);
    try {
      jit(x);  // bias 0 in call 0, 1 in call 1
      ADD_FAILURE() << "the capture check did not catch the changing host value";
    } catch (const JitError& err) {
      EXPECT_NE(std::string(err.what()).find("capture check"), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("Variable"), std::string::npos) << err.what();
    }
  }
  JitOptions unchecked;
  unchecked.capture.check_closure = false;  // what the check prevents: the value frozen silently
  {
    step = 0;
    TinyJit jit(f, unchecked);
    jit(x);
    jit(x);                                                // captured with bias 1
    EXPECT_EQ(get(jit(x)), axpb_host(seq(8, 0.f), 1.f, 1.f));
    EXPECT_EQ(get(jit(x)), axpb_host(seq(8, 0.f), 1.f, 1.f));  // still 1: frozen
  }
  {
    JitOptions o = unchecked;
    o.verify = 2;
    TinyJit jit(f, o);
    jit(x);
    jit(x);
    try {
      jit(x);
      ADD_FAILURE() << "verify mode did not catch the frozen host value";
    } catch (const JitError& err) {
      EXPECT_NE(std::string(err.what()).find("verify"), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("frozen"), std::string::npos) << err.what();
    }
  }
  {
    Variable bias = Variable::f32("bias");  // the fix
    auto g = [&](const Buffer& x, encore::BoundVar) {
      Buffer y = e.dev.alloc<float>(x.count());
      e.dev.launch(e.axpb, {x.count()}, {}, x, y, 1.f, bias);
      return y;
    };
    JitOptions o;
    o.verify = 10;
    TinyJit jit(g, o);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(get(jit(x, bias.bind(static_cast<double>(i)))), axpb_host(seq(8, 0.f), 1.f, static_cast<float>(i)));
  }
}

class FootgunsOnDevices : public OnDevices {};
ON_NULL_AND_CL(FootgunsOnDevices);

// FOOTGUN 5: reading a device value on the host inside the callable (copyout) would steer later
// host code with a value replay never refreshes, so it is a JitError during capture.
// JitOptions::capture.allow_copyout accepts the frozen value.
TEST_P(FootgunsOnDevices, CopyoutInCallableIsAnError) {
  Env& e = env();
  auto f = [&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, x, y, 1.f, 0.f);
    (void)y.copyout<float>();
    return y;
  };
  Buffer x = make(e.dev, seq(8, 0.f));
  TinyJit jit(f, JitOptions{});
  jit(x);
  try {
    jit(x);
    ADD_FAILURE() << "copyout during capture did not throw";
  } catch (const JitError& err) {
    EXPECT_NE(std::string(err.what()).find("copyout"), std::string::npos) << err.what();
  }
  JitOptions o;
  o.capture.allow_copyout = true;
  TinyJit allowed(f, o);
  for (int i = 0; i < 4; ++i) {
    Buffer r = allowed(x);
    if (!e.dev.is_null()) {
      EXPECT_EQ(get(r), seq(8, 0.f));
    }
  }
}

// FOOTGUN 6: a TinyJit called inside another's call 0 or capture does not replay: it runs its
// callable eagerly, so its work is recorded into the outer recordings (and its own call count does
// not move).
// Replays of the outer jit re-run that work without calling the inner jit at all.
TEST_P(FootgunsOnDevices, NestedJitRunsInnerCallableEagerlyIntoOuterCapture) {
  Env& e = env();
  int inner_runs = 0;
  TinyJit inner([&](const Buffer& x) {
    ++inner_runs;
    Buffer y = e.dev.alloc<float>(x.count());
    e.dev.launch(e.rev, {x.count()}, {}, x, y, static_cast<int>(x.count()));
    return y;
  }, JitOptions{});
  TinyJit outer([&](const Buffer& x) {
    Buffer t = inner(x);
    Buffer z = e.dev.alloc<float>(x.count());
    e.dev.launch(e.axpb, {x.count()}, {}, t, z, 2.f, 1.f);
    return z;
  }, JitOptions{});
  std::vector<float> xv = seq(8, 1.f);
  std::vector<float> expect(8);
  for (int i = 0; i < 8; ++i) expect[i] = 2.f * xv[7 - i] + 1.f;
  Buffer x = make(e.dev, xv);
  for (int i = 0; i < 5; ++i) {
    Buffer r = outer(x);
    if (!e.dev.is_null()) {
      EXPECT_EQ(get(r), expect) << i;
    }
  }
  EXPECT_EQ(inner_runs, 2);        // outer calls 0 and 1 only
  EXPECT_EQ(inner.calls(), 0u);    // outer's call 0 and capture (both recorded) did not count
  EXPECT_EQ(outer.unit().stats().items, 2u);
}
