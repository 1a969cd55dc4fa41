// The thread rules the public headers state, each exercised with threads (CI runs these under
// ThreadSanitizer): one device from many threads, one kernel from many threads, concurrent
// compiles, different units replaying at once, events waited on elsewhere, tracing from threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

constexpr int kThreads = 4;

// Runs body(t) for t = 0 .. kThreads-1, each on a thread of its own, all at once; returns when all
// have finished.
template <class F> void on_threads(F body) {
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
}

}  // namespace

// device.hpp + program.hpp: one Device and one Kernel launched from several threads at once, each
// thread on its own buffers with its own scalars.
TEST(ThreadRules, OneKernelFromManyThreads) {
  NEED_CL();
  Env& e = cl();
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    Buffer x = make(e.dev, seq(64, static_cast<float>(t)));
    Buffer y = e.dev.alloc<float>(64);
    for (int i = 0; i < 50; ++i) {
      e.dev.launch(e.axpb, {64}, {}, x, y, static_cast<float>(t + 1), static_cast<float>(i));
      std::vector<float> got = y.copyout<float>();
      if (got[3] != static_cast<float>(t + 1) * (static_cast<float>(t) + 3.f) + static_cast<float>(i)) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// program.hpp: concurrent compiles of one source give one program; of different sources, each its own.
TEST(ThreadRules, ConcurrentCompiles) {
  NEED_CL();
  encore::Device dev = encore::Device::open();
  const std::string same = "__kernel void tr_same(__global float* x) { x[get_global_id(0)] += 2.0f; }";
  std::vector<encore::Kernel> same_k(kThreads), own_k(kThreads);
  on_threads([&](int t) {
    same_k[t] = dev.compile(same).kernel("tr_same");
    std::string name = "tr_own" + std::to_string(t);
    own_k[t] = dev.compile("__kernel void " + name + "(__global float* x) { x[get_global_id(0)] = " + std::to_string(t) + ".0f; }")
                   .kernel(name);
  });
  Buffer x = make(dev, std::vector<float>(8, 0.f));
  for (int t = 0; t < kThreads; ++t) {
    dev.launch(own_k[t], {8}, {}, x);
    dev.launch(same_k[t], {8}, {}, x);
    EXPECT_EQ(get(x)[0], static_cast<float>(t) + 2.f);
  }
}

// execution_unit.hpp: different units replay concurrently on one device; each thread owns its unit
// (captured on that thread: a Capture records only its own thread's work).
TEST(ThreadRules, DifferentUnitsReplayConcurrently) {
  NEED_CL();
  Env& e = cl();
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    Buffer x = make(e.dev, seq(64, 1.f)), out = e.dev.alloc<float>(64);
    encore::Capture cap;
    cap.add_input(x);
    Buffer tmp = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, x, tmp, static_cast<float>(t), 1.f);
    e.dev.launch(e.add, {64}, {}, tmp, x, out);
    cap.add_output(out);
    encore::ExecutionUnit unit = cap.end();
    if (unit.items().size() != 2) ++wrong;  // the other threads' launches were not recorded here
    std::vector<Buffer> xs{make(e.dev, seq(64, 0.f)), make(e.dev, seq(64, 5.f))};
    for (int i = 0; i < 100; ++i) {
      unit.bind_input(0, xs[i % 2])();
      float x3 = 3.f + (i % 2 ? 5.f : 0.f);
      if (get(out)[3] != (static_cast<float>(t) * x3 + 1.f) + x3) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// event.hpp: an Event may be waited for on any thread.
TEST(ThreadRules, EventsWaitedOnOtherThreads) {
  NEED_CL();
  Env& e = cl();
  Buffer s = make(e.dev, std::vector<float>(64, 0.f));
  encore::Capture cap;
  e.dev.launch(e.addk, {64}, {}, s, 1);
  encore::ExecutionUnit unit = cap.end();
  for (int round = 0; round < 20; ++round) {
    encore::Event done = unit.run();
    std::vector<std::thread> waiters;
    for (int t = 0; t < 3; ++t) waiters.emplace_back([done] { done.wait(); });
    for (auto& w : waiters) w.join();
    EXPECT_TRUE(done.done());
  }
  EXPECT_EQ(get(s)[0], 21.f);
}

// profile.hpp: items enqueued by several threads while recording all reach the trace.
TEST(ThreadRules, TracingFromSeveralThreads) {
  NEED_CL();
  Env& e = cl();
  const std::string path = ::testing::TempDir() + "encore_trace_threads.json";
  encore::profile::start();
  on_threads([&](int) {
    Buffer s = make(e.dev, std::vector<float>(64, 0.f));
    for (int i = 0; i < 10; ++i) e.dev.launch(e.addk, {64}, {}, s, 1);
  });
  encore::profile::stop(path);
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t n = 0;
  for (size_t at = text.find("\"name\":\"addk\""); at != std::string::npos; at = text.find("\"name\":\"addk\"", at + 1)) ++n;
  EXPECT_EQ(n, static_cast<size_t>(kThreads * 10));
  std::remove(path.c_str());
}
