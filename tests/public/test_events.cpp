// Events: a replay's completion, ordering after an engine's own cl_event, and bounded work in
// flight. Public headers only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"
#include "../../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone

using encore::Device;
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

encore::ExecutionUnit three_kernel_unit(Env& e, const Buffer& x, Buffer& out, uint32_t max_in_flight, uint32_t min_items = 64) {
  encore::UnitOptions o;
  o.max_in_flight = max_in_flight;
  o.min_items_in_flight = min_items;
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

// A TinyJit step between events: ordered after the engine's event, its completion a marker.
TEST(Events, JitStepBetweenEvents) {
  NEED_CL();
  Env& e = cl();
  encore::TinyJit jit([&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, x, y, 3.f, 0.f);
    return y;
  }, encore::JitOptions{});
  Buffer x = make(e.dev, seq(64, 1.f));
  for (int i = 0; i < 3; ++i) jit(x);  // warm-up, capture, a replay
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(encore::opencl::context(e.dev), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  Event engine = encore::opencl::adopt(e.dev, gate);
  clReleaseEvent(gate);
  Buffer x2 = make(e.dev, seq(64, 10.f));
  e.dev.wait_for({&engine, 1});
  Buffer y = jit(x2);
  Event done = e.dev.marker();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.done()) << "the step ran before the engine's event";
  clSetUserEventStatus(encore::opencl::native(engine), CL_COMPLETE);
  done.wait();
  EXPECT_EQ(get(y), seq(64, 30.f, 3.f));
}

// Destroying a unit waits for its own replays only: not for unrelated work queued behind an
// engine's event that has not completed yet.
TEST(Events, DestroyingAUnitIgnoresUnrelatedWork) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 1.f)), out = e.dev.alloc<float>(64);
  auto unit = std::make_unique<encore::ExecutionUnit>(three_kernel_unit(e, x, out, 3));
  for (int i = 0; i < 3; ++i) (*unit)();
  unit->run().wait();
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(encore::opencl::context(e.dev), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  Event engine = encore::opencl::adopt(e.dev, gate);
  clReleaseEvent(gate);
  Buffer s = make(e.dev, std::vector<float>(64, 0.f));  // (a blocking write: before the gate)
  e.dev.wait_for({&engine, 1});  // unrelated work, blocked until the engine completes its event
  e.dev.launch(e.addk, {64}, {}, s, 1);
  std::atomic<bool> destroyed{false};
  std::thread t([&] {
    unit.reset();
    destroyed = true;
  });
  for (int i = 0; i < 200 && !destroyed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(destroyed.load()) << "the unit's destructor waited for work that is not its own";
  clSetUserEventStatus(encore::opencl::native(engine), CL_COMPLETE);  // release it either way
  t.join();
  EXPECT_EQ(get(s)[0], 1.f);
}

// A loop that replays and never reads back stays within bounded memory: each replay waits for the
// one max_in_flight calls before it.
TEST(Events, WorkInFlightIsBounded) {
  NEED_CL();
  if (std::getenv("ENCORE_SANITIZED")) GTEST_SKIP() << "sanitizers keep freed memory in quarantine: RSS says nothing here";
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

// Bounding the work in flight costs no command of its own: a replay's completion on a device is its
// last kernel's own event (the queue is in order), a marker only where the step ends otherwise.
// Events handed out are flushed, so polling done() alone sees them complete.
TEST(Events, ReplayCompletionIsTheLastKernelsOwnEvent) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 1.f)), out = e.dev.alloc<float>(64);
  encore::ExecutionUnit unit = three_kernel_unit(e, x, out, 3);
  for (int i = 0; i < 4; ++i) {
    Event done = unit.run();
    cl_command_type type = 0;
    ASSERT_EQ(clGetEventInfo(encore::opencl::native(done), CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr), CL_SUCCESS);
    EXPECT_EQ(type, static_cast<cl_command_type>(CL_COMMAND_NDRANGE_KERNEL)) << "replay " << i << ": an extra command ended it";
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done.done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    EXPECT_TRUE(done.done()) << "an unflushed event never completes for a caller that only polls";
  }
  EXPECT_EQ(get(out), seq(64, 2.5f, 2.f));
  // a step that ends with a copy: a marker completes it
  encore::Capture cap;
  cap.add_input(x);
  Buffer t = e.dev.alloc<float>(64), y = e.dev.alloc<float>(64);
  e.dev.launch(e.axpb, {64}, {}, x, t, 2.f, 1.f);
  e.dev.copy(y, t);
  cap.add_output(y);
  encore::ExecutionUnit ends_with_copy = cap.end();
  Event done = ends_with_copy.run();
  cl_command_type type = 0;
  ASSERT_EQ(clGetEventInfo(encore::opencl::native(done), CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr), CL_SUCCESS);
  EXPECT_EQ(type, static_cast<cl_command_type>(CL_COMMAND_MARKER));
  done.wait();
  EXPECT_EQ(get(y), seq(64, 3.f, 2.f));
}

// The bound itself: with min_items_in_flight 0 a run waits for the one max_in_flight runs before
// (here behind an engine's event); by default a short step keeps at least 64 items in flight, so
// the same unit queues 21 replays (3 kernels each) behind the event without blocking.
TEST(Events, InFlightBoundIsExactOnRequestAndDeeperForShortSteps) {
  NEED_CL();
  Env& e = cl();
  for (uint32_t min_items : {0u, 64u}) {
    Buffer x = make(e.dev, seq(64, 1.f)), out = e.dev.alloc<float>(64);
    encore::ExecutionUnit unit = three_kernel_unit(e, x, out, 2, min_items);
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(encore::opencl::context(e.dev), &err);
    ASSERT_EQ(err, CL_SUCCESS);
    Event engine = encore::opencl::adopt(e.dev, gate);
    clReleaseEvent(gate);
    const int free_runs = min_items ? 21 : 1;  // 22 slots (ceil(64 / 3)) or 2: the run after them waits for the first
    std::atomic<bool> opened{false};
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      opened = true;
      clSetUserEventStatus(encore::opencl::native(engine), CL_COMPLETE);
    });
    unit.run({&engine, 1});  // every later replay queues behind this one
    for (int i = 1; i <= free_runs; ++i) unit();
    EXPECT_FALSE(opened.load()) << "one of the first " << free_runs + 1 << " runs waited for the gate";
    unit();  // waits for the first run, so for the gate
    EXPECT_TRUE(opened.load()) << "run " << free_runs + 2 << " did not wait for the run " << free_runs + 1 << " runs before";
    opener.join();
    e.dev.synchronize();
    EXPECT_EQ(get(out), seq(64, 2.5f, 2.f));
  }
}

// encore::profile: a Chrome trace lists every replayed item, with device times that do not go
// backwards on an in-order queue, and the capture phases on the host track.
TEST(Profile, TraceListsEveryReplayedItemWithDeviceTimes) {
  NEED_CL();
  Device def = Device::open();
  cl_int err = CL_SUCCESS;
  cl_command_queue q = encore::cl::create_queue(encore::opencl::context(def), encore::opencl::device_id(def), CL_QUEUE_PROFILING_ENABLE, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  Device dev = encore::opencl::adopt(q);
  clReleaseCommandQueue(q);
  Env e(dev);
  Buffer x = make(dev, seq(256, 1.f)), out = dev.alloc<float>(256);
  const std::string path = ::testing::TempDir() + "encore_trace_test.json";
  encore::profile::start();
  EXPECT_TRUE(encore::profile::active());
  encore::ExecutionUnit unit = three_kernel_unit(e, x, out, 3);
  constexpr int kReplays = 5;
  for (int i = 0; i < kReplays; ++i) unit();
  encore::profile::stop(path);
  EXPECT_FALSE(encore::profile::active());
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  EXPECT_TRUE(contains(text, "\"traceEvents\""));
  for (const char* phase : {"\"record\"", "\"plan\"", "\"prune\"", "\"bind\""}) EXPECT_TRUE(contains(text, phase)) << phase;
  // the replayed items, in order: axpb, scalef, add per replay, each with device times
  std::vector<std::string> names;
  std::vector<double> ts, end;
  for (size_t at = text.find("\"cat\":\"replay\""); at != std::string::npos; at = text.find("\"cat\":\"replay\"", at + 1)) {
    size_t line = text.rfind('\n', at) + 1;
    std::string ev = text.substr(line, text.find('\n', at) - line);
    size_t n0 = ev.find("\"name\":\"") + 8;
    names.push_back(ev.substr(n0, ev.find('"', n0) - n0));
    double t = std::stod(ev.substr(ev.find("\"ts\":") + 5)), d = std::stod(ev.substr(ev.find("\"dur\":") + 6));
    ts.push_back(t);
    end.push_back(t + d);
    EXPECT_TRUE(contains(ev, "\"clock\":\"device\"")) << ev;
    EXPECT_TRUE(contains(ev, "\"global\":\"[256]\"")) << ev;
  }
  ASSERT_EQ(names.size(), 3u * kReplays);
  const std::vector<std::string> order{"axpb", "scalef", "add"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], order[i % 3]) << i;
  for (size_t i = 1; i < ts.size(); ++i) {
    EXPECT_GE(ts[i], ts[i - 1]) << "device start times go backwards at item " << i;
    EXPECT_GE(ts[i] + 1e-3, end[i - 1]) << "an in-order queue started item " << i << " before the previous one ended";
  }
  std::remove(path.c_str());
}
