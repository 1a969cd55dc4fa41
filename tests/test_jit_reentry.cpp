// jit.hpp: a step that calls its own TinyJit (again, reset, unit_for) on the same thread. The step
// runs under the jit's lock, so each of these would deadlock; they are a JitError naming the call,
// in every phase (warm-up, capture, verify's eager run), and the jit works normally afterwards.
#include <gtest/gtest.h>

#include <functional>
#include <string>
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
