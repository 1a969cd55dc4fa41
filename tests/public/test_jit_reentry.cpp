// jit.hpp: a step that calls its own TinyJit (again, reset, unit_for) on the same thread. The step
// runs under the jit's lock, so each of these would deadlock; they are a JitError naming the call,
// in every phase (warm-up, capture, verify's eager run), and the jit works normally afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using encore::Buffer;
using namespace encore_test;

namespace {
constexpr size_t kN = 32;

enum class Misuse { none, call, reset, unit_for };

// What the step does besides its kernel (set after the jit exists: the step calls back into it).
struct Hooks {
  Misuse misuse = Misuse::none;
  std::function<void()> call_self, reset_self, probe_self;
};

struct Reentry {
  Env* e;
  Hooks* h;
  Buffer operator()(const Buffer& x) {
    Buffer y = e->dev.alloc<float>(kN);
    e->dev.launch(e->axpb, {kN}, {}, x, y, 2.f, 1.f);
    if (h->misuse == Misuse::call) h->call_self();
    if (h->misuse == Misuse::reset) h->reset_self();
    if (h->misuse == Misuse::unit_for) h->probe_self();
    return y;
  }
};
}  // namespace

TEST(JitReentry, OwnJitFromInsideItsStepIsAnError) {
  for (Env* e : {&null_env(), &cl()}) {
    SCOPED_TRACE(e->dev.id());
    Buffer x = make(e->dev, seq(kN, 1.f));
    Hooks hooks;
    Hooks* step = &hooks;
    encore::TinyJit jit(Reentry{e, &hooks});
    step->call_self = [&] { jit(x); };
    step->reset_self = [&] { jit.reset(); };
    step->probe_self = [&] { (void)jit.unit_for(x); };
    const std::pair<Misuse, const char*> cases[] = {{Misuse::call, "TinyJit called from inside its own step"},
                                                    {Misuse::reset, "TinyJit reset from inside its own step"},
                                                    {Misuse::unit_for, "TinyJit asked which unit a call replays from inside its own step"}};
    for (auto [misuse, msg] : cases)
      for (int phase = 0; phase < 3; ++phase) {  // call 0 (warm-up), call 1 (capture), a replay
        jit.reset();
        for (int i = 0; i < phase && i < 2; ++i) jit(x);  // reach the phase with a well-behaved step
        step->misuse = misuse;
        if (phase < 2) expect_jit_error([&] { jit(x); }, {msg, "Call it after the jit's call returns"});
        else jit(x);  // a replay runs no host code: the step's misuse cannot happen
        step->misuse = Misuse::none;
        // usable afterwards: eager and replayed calls give the eager result
        for (int i = 0; i < 4; ++i) {
          Buffer y = jit(x);
          if (!e->dev.is_null()) {
            std::vector<float> got = get(y);
            for (size_t k = 0; k < kN; ++k) ASSERT_EQ(got[k], 2.f * (1.f + static_cast<float>(k)) + 1.f) << "call " << i << " element " << k;
          }
        }
        EXPECT_TRUE(jit.next_call_replays(x));
      }
  }
}

// The re-entry check tells the thread that holds the jit from the others: while one thread's step
// calls its own jit (a JitError there), another thread calling the same jit waits for the lock and
// gets its own correct results, before, during and after. Runs under ThreadSanitizer in CI.
TEST(TinyJitConcurrency, ReentryOnOneThreadWhileAnotherCalls) {
  NEED_CL();
  Env& e = cl();
  static thread_local bool misuse = false;  // only the misusing thread's step calls back in
  static thread_local int misused = 0;      // steps that called back in, on this thread
  std::function<void()> call_self;
  // each thread's own output buffer (a returned one is the unit's, shared by every caller's replays)
  auto step = [&](const Buffer& x, const Buffer& y) {
    e.dev.launch(e.axpb, {kN}, {}, x, y, 2.f, 1.f);
    if (misuse) {
      ++misused;
      call_self();
    }
  };
  encore::TinyJit jit(step);
  const Buffer xa = make(e.dev, seq(kN, 1.f)), xb = make(e.dev, seq(kN, 100.f));
  const Buffer ya = e.dev.alloc<float>(kN), yb = e.dev.alloc<float>(kN);
  call_self = [&] { jit(xa, ya); };
  auto expect_axpb = [](const Buffer& y, float start, const char* who, int i) {
    const std::vector<float> got = get(y);
    for (size_t k = 0; k < kN; ++k)
      ASSERT_EQ(got[k], 2.f * (start + static_cast<float>(k)) + 1.f) << who << ", call " << i << ", element " << k;
  };
  std::atomic<int> errors{0};
  std::thread other([&] {
    for (int i = 0; i < 150; ++i) {
      e.dev.fill(yb, 0.f);
      jit(xb, yb);
      expect_axpb(yb, 100.f, "the other thread", i);
    }
  });
  for (int i = 0; i < 30; ++i) {
    jit.reset();  // call 0 again: the step runs (a replay runs no host code)
    misuse = true;
    try {
      jit(xa, ya);
    } catch (const encore::JitError& err) {
      if (contains(err.what(), "TinyJit called from inside its own step")) ++errors;
    }
    misuse = false;
    for (int k = 0; k < 3; ++k) {
      e.dev.fill(ya, 0.f);
      jit(xa, ya);
      expect_axpb(ya, 1.f, "the misusing thread afterwards", i);
    }
  }
  other.join();
  // the other thread's calls may take call 0 and 1 after a reset, so this thread's call replays and
  // runs no step: every step that called back in was refused, and the other thread's never did
  EXPECT_GT(misused, 0);
  EXPECT_EQ(errors.load(), misused);
  for (int k = 0; k < 3; ++k) {
    e.dev.fill(yb, 0.f);
    jit(xb, yb);
    expect_axpb(yb, 100.f, "after both", k);
  }
}
