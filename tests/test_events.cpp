// Events: a replay's completion, ordering after an engine's own cl_event, and bounded work in
// flight. Public headers only.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"

using encore::Buffer;
using encore::Event;
using namespace encore_test;

namespace {

// Resident set size of this process, in bytes.
size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

encore::ExecutionUnit three_kernel_unit(Env& e, const Buffer& x, Buffer& out, uint32_t max_in_flight) {
  encore::UnitOptions o;
  o.max_in_flight = max_in_flight;
  encore::Capture cap(o);
  cap.add_input(x);
  Buffer t = e.dev.alloc<float>(x.count());
  e.dev.launch(e.axpb, {x.count()}, {}, x, t, 2.f, 1.f);
  e.dev.launch(e.scalef, {x.count()}, {}, t, 0.5f);
  e.dev.launch(e.add, {x.count()}, {}, t, x, out);
  cap.add_output(out);
  return cap.end();
}

}  // namespace

TEST(Events, RunReturnsTheReplaysCompletion) {
  for (Env* e : {&null_env(), have_cl() ? &cl() : nullptr}) {
    if (!e) continue;
    Buffer x = make(e->dev, seq(64, 1.f)), out = e->dev.alloc<float>(64);
    encore::ExecutionUnit unit = three_kernel_unit(*e, x, out, 3);
    for (int i = 0; i < 5; ++i) {
      Buffer xi = make(e->dev, seq(64, static_cast<float>(i)));
      Event done = unit.bind_input(0, xi).run();
      done.wait();
      EXPECT_TRUE(done.done());
      if (!e->dev.is_null()) {
        EXPECT_EQ(get(out), seq(64, 2.f * i + 0.5f, 2.f)) << "call " << i;
        EXPECT_NE(encore::opencl::native(done), nullptr);
      } else {
        EXPECT_FALSE(done) << "work on NULL is complete when run returns: an empty event";
      }
    }
    EXPECT_TRUE(Event().done());
  }
}

// An engine's own event gates the replay: nothing of it runs before the engine completes it, and
// the host never blocks on it.
TEST(Events, ReplayWaitsForAnEnginesEvent) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 1.f)), out = make(e.dev, std::vector<float>(64, -1.f));
  encore::ExecutionUnit unit = three_kernel_unit(e, x, out, 3);
  out.copyin(std::vector<float>(64, -1.f));
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(encore::opencl::context(e.dev), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  Event engine = encore::opencl::adopt(e.dev, gate);
  clReleaseEvent(gate);  // encore holds its own reference now
  Event done = unit.run({&engine, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.done()) << "the replay ran before the engine's event completed";
  EXPECT_FALSE(engine.done());
  clSetUserEventStatus(encore::opencl::native(engine), CL_COMPLETE);
  done.wait();
  EXPECT_EQ(get(out), seq(64, 2.5f, 2.f));
  // events also order work between units and plain device work
  Event d2 = unit.run({&done, 1});
  e.dev.wait_for({&d2, 1});
  EXPECT_NO_THROW(e.dev.marker().wait());
}

// A loop that replays and never reads back stays within bounded memory: each replay waits for the
// one max_in_flight calls before it.
TEST(Events, WorkInFlightIsBounded) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(256, 1.f)), out = e.dev.alloc<float>(256);
  encore::ExecutionUnit unit = three_kernel_unit(e, x, out, 3);
  for (int i = 0; i < 2000; ++i) unit();
  e.dev.synchronize();
  size_t before = rss_bytes();
  for (int i = 0; i < 30000; ++i) unit();
  size_t after = rss_bytes();
  e.dev.synchronize();
  EXPECT_LT(after, before + (8u << 20)) << "RSS grew by " << (after - before) / 1024 << " KiB over 30000 replays without reads";
  EXPECT_EQ(get(out), seq(256, 2.5f, 2.f));
}
