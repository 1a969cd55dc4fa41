// buffer.hpp: a buffer's name may be set on one thread while another thread reads it — in a
// message, a trace, or the plan that copies a temporary's name onto its arena placeholder. CI runs
// these under ThreadSanitizer, which reports the race if a reader skips the names lock.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using encore::Buffer;
using namespace encore_test;

namespace {
constexpr size_t kN = 64;
constexpr int kCaptures = 20;

// Renames `b` until `stop`, alternating a short and a long name (a long one reallocates).
void rename_until(Buffer b, const std::atomic<bool>& stop) {
  for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i)
    b.set_name(i % 2 ? "t" : "a temporary with a name long enough to live on the heap " + std::to_string(i));
}
}  // namespace

// A buffer of the step is renamed on another thread while the capture ends, the unit replays and
// the output is described; the replayed results stay the eager ones. (A temporary that another
// thread holds is not planned into the arena, so the plan's own copy of a planned temporary's name
// is only reachable from the capturing thread; it takes the lock all the same.)
TEST(ThreadRules, RenameWhileCapturing) {
  for (Env* e : {&null_env(), &cl()}) {
    SCOPED_TRACE(e->dev.id());
    Buffer x = make(e->dev, seq(kN, 1.f));
    for (int c = 0; c < kCaptures; ++c) {
      std::atomic<bool> stop{false};
      std::thread renamer;
      encore::ExecutionUnit unit;
      Buffer out;
      {
        encore::Capture cap;
        cap.add_input(x);
        Buffer tmp = e->dev.alloc<float>(kN);
        tmp.set_name("tmp");
        renamer = std::thread(rename_until, tmp, std::cref(stop));
        e->dev.launch(e->axpb, {kN}, {}, x, tmp, 2.f, 1.f);
        out = e->dev.alloc<float>(kN);
        e->dev.launch(e->axpb, {kN}, {}, tmp, out, 3.f, 0.f);
        cap.add_output(out);
        unit = cap.end();
      }
      const std::string described = out.describe();  // reads names under the lock too
      EXPECT_FALSE(described.empty());
      for (int i = 0; i < 3; ++i) unit();
      stop = true;
      renamer.join();
      if (!e->dev.is_null()) {
        std::vector<float> got = get(out);
        for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 3.f * (2.f * (1.f + static_cast<float>(i)) + 1.f)) << "element " << i;
      }
    }
  }
}

// Buffer::name() returns a copy: a name read while another thread renames is one of the names set.
TEST(ThreadRules, NameReadWhileRenamed) {
  Env& e = null_env();
  Buffer b = e.dev.alloc<float>(4);
  b.set_name("t");
  std::atomic<bool> stop{false};
  std::thread renamer(rename_until, b, std::cref(stop));
  int odd = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string n = b.name();
    if (n != "t" && n.rfind("a temporary with a name long enough", 0) != 0) ++odd;
  }
  stop = true;
  renamer.join();
  EXPECT_EQ(odd, 0);
}
