// The in-flight bound for short steps (UnitOptions max_in_flight / min_items_in_flight): replays in
// groups, only a group's last replay taking events. The bound still holds exactly, the staging
// ring of host uploads stays correct while every replay of the window is queued behind a gate,
// run() still hands out each replay's own completion, and freeing a unit waits for its replays
// exactly where they read its host memory. Public headers only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"
#include "../../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone

using encore::Buffer;
using encore::Event;
using namespace encore_test;

namespace {

// An engine's event that the test completes itself: work queued behind it waits until then.
struct Gate {
  Event ev;
  explicit Gate(const encore::Device& dev) {
    cl_int err = CL_SUCCESS;
    cl_event g = clCreateUserEvent(encore::opencl::context(dev), &err);
    EXPECT_EQ(err, CL_SUCCESS);
    ev = encore::opencl::adopt(dev, g);
    clReleaseEvent(g);
  }
  void open() { clSetUserEventStatus(encore::opencl::native(ev), CL_COMPLETE); }
};

// One kernel per step (y += k): the shortest step, so the deepest grouping.
encore::ExecutionUnit one_kernel_unit(Env& e, const Buffer& y, encore::UnitOptions o = {}) {
  encore::Capture cap(o);
  cap.add_input(y);
  e.dev.launch(e.addk, {y.count()}, {}, y, 1);
  return cap.end();
}

class InFlight : public OnDevices {};

}  // namespace

// A short step with a host input (an upload from the span, then a copy: both move real bytes on
// NULL too), replayed many times over the staging ring with the span rewritten after every call:
// each replay uploads its own call's bytes. On OpenCL every replay of the in-flight window is queued
// behind a gate first, so no staging copy can be consumed before the next ones are written.
TEST_P(InFlight, HostInputRingGivesEagerResults) {
  Env& e = env();
  constexpr size_t n = 64;
  auto f = [&e](std::span<const float> h) {
    Buffer t = e.dev.alloc<float>(h.size());
    t.copyin(h);
    Buffer y = e.dev.alloc<float>(h.size());
    e.dev.copy(y, t);
    return y;
  };
  struct Bound {
    uint32_t max, min_items;
    int depth;  // replays in flight at most
  };
  // two items per step: 32 replays in flight by default or with a bound of 2, exactly 3; an upload
  // in the step: each replay takes its events (never grouped)
  for (Bound bd : {Bound{3, 64, 32}, Bound{2, 64, 32}, Bound{3, 0, 3}}) {
    encore::JitOptions o;
    o.verify = 0;
    o.unit.max_in_flight = bd.max;
    o.unit.min_items_in_flight = bd.min_items;
    encore::TinyJit jit(f, o);
    std::vector<float> h(n);
    auto fill = [&](int call) {
      for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>(call * 1000 + static_cast<int>(i));
    };
    for (int call = 0; call < 2; ++call) {  // warm-up and capture
      fill(call);
      jit(std::span<const float>(h));
    }
    std::unique_ptr<Gate> gate;
    std::thread opener;
    std::atomic<bool> opened{false};
    if (!e.dev.is_null()) {
      gate = std::make_unique<Gate>(e.dev);
      e.dev.wait_for({&gate->ev, 1});  // every replay below queues behind it
      opener = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        opened = true;
        gate->open();
      });
    }
    constexpr int kCalls = 150;
    std::vector<Buffer> outs;
    int before_gate = -1;
    for (int call = 2; call < kCalls; ++call) {
      fill(call);
      Buffer y = jit(std::span<const float>(h));
      if (before_gate < 0 && opened) before_gate = call;
      Buffer keep = e.dev.alloc<float>(n);
      e.dev.copy(keep, y);  // queued after the replay: read once all calls are queued
      outs.push_back(keep);
      std::fill(h.begin(), h.end(), -1.f);  // scribble over the span before the device ran
    }
    if (opener.joinable()) opener.join();
    if (!e.dev.is_null()) {
      EXPECT_GE(before_gate, 2 + bd.depth) << "one of the first " << bd.depth << " replays waited for the gate";
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const int call = static_cast<int>(i) + 2;
      std::vector<float> want(n);
      for (size_t j = 0; j < n; ++j) want[j] = static_cast<float>(call * 1000 + static_cast<int>(j));
      ASSERT_EQ(get(outs[i]), want) << "max_in_flight " << bd.max << ", min_items_in_flight " << bd.min_items << ", call " << call;
    }
  }
}

// run() mid-group: its replay's own completion (the kernel's event, flushed), whatever its place in
// its group, and every replay runs once.
TEST_P(InFlight, RunHandsOutEachReplaysOwnCompletion) {
  Env& e = env();
  Buffer y = make(e.dev, std::vector<float>(64, 0.f));
  encore::ExecutionUnit unit = one_kernel_unit(e, y);  // the capture ran it once
  int replays = 0;
  for (int i = 0; i < 70; ++i, ++replays) {
    if (i % 5 != 3) {
      unit();
      continue;
    }
    Event done = unit.run();
    if (e.dev.is_null()) continue;
    cl_command_type type = 0;
    ASSERT_EQ(clGetEventInfo(encore::opencl::native(done), CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr), CL_SUCCESS);
    EXPECT_EQ(type, static_cast<cl_command_type>(CL_COMMAND_NDRANGE_KERNEL)) << "replay " << i;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done.done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    ASSERT_TRUE(done.done()) << "replay " << i << ": its event never completed for a caller that only polls";
  }
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(y), std::vector<float>(64, static_cast<float>(replays + 1)));
  }
}

ON_NULL_AND_CL(InFlight);

// The bound is exact for a short step too: a one-kernel step keeps 64 replays in flight (in 2
// groups of 32) and the 65th run waits for the first.
TEST(InFlightBound, ShortStepWaitsExactlyAtTheDepth) {
  NEED_CL();
  Env& e = cl();
  Buffer y = make(e.dev, std::vector<float>(64, 0.f));
  encore::ExecutionUnit unit = one_kernel_unit(e, y);
  Gate gate(e.dev);
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    opened = true;
    gate.open();
  });
  unit.run({&gate.ev, 1});  // every later replay queues behind this one
  for (int i = 1; i < 64; ++i) unit();
  EXPECT_FALSE(opened.load()) << "one of the first 64 runs waited for the gate";
  unit();
  EXPECT_TRUE(opened.load()) << "run 65 did not wait for the first run";
  opener.join();
  e.dev.synchronize();
  EXPECT_EQ(get(y), std::vector<float>(64, 66.f));
}

// A grouped unit's replays read no host memory after they return: freeing or destroying it mid-group
// waits for nothing (not for other work queued behind an engine's event either), and the replays
// queued meanwhile still run right. A unit with an upload takes events every replay and waits for
// its own replays, which read its snapshot, before it is gone.
TEST(InFlightBound, FreeingMidGroupWaitsOnlyWhereReplaysReadHostMemory) {
  NEED_CL();
  Env& e = cl();
  for (bool upload : {false, true})
    for (bool destroy : {false, true}) {
      const std::string what = std::string(upload ? "a unit with an upload" : "a one-kernel unit") + (destroy ? ", destroyed" : ", freed");
      Buffer y = make(e.dev, std::vector<float>(64, 0.f));
      const std::vector<float> snapshot(64, 5.f);
      std::unique_ptr<encore::ExecutionUnit> unit;
      if (upload) {
        encore::Capture cap;
        Buffer t = e.dev.alloc<float>(64);
        t.copyin(snapshot);  // uploaded by every replay from the unit's own copy of the bytes
        e.dev.launch(e.accum, {64}, {}, y, t);
        cap.add_input(y);
        unit = std::make_unique<encore::ExecutionUnit>(cap.end());
      } else {
        unit = std::make_unique<encore::ExecutionUnit>(one_kernel_unit(e, y));
      }
      for (int i = 0; i < 32; ++i) (*unit)();  // one whole group: the next replays start a new one
      e.dev.synchronize();
      Gate gate(e.dev);
      e.dev.wait_for({&gate.ev, 1});
      for (int i = 0; i < 5; ++i) (*unit)();  // queued behind the gate; mid-group where grouped
      FreeOnAnotherThread freeing(unit, destroy);
      const bool soon = freeing.returned_soon();
      if (upload) {
        EXPECT_FALSE(soon) << what << ": did not wait for its replays queued behind the gate";
      } else {
        EXPECT_TRUE(soon) << what << ": waited for work queued behind the gate";
      }
      gate.open();
      freeing.join();
      const float per = upload ? 5.f : 1.f;
      EXPECT_EQ(get(y), std::vector<float>(64, per * 38.f)) << what;
      if (!destroy) {
        (*unit)();  // binds afresh
        EXPECT_EQ(get(y), std::vector<float>(64, per * 39.f)) << what;
      }
    }
}

// A Device::synchronize that has not returned yet says nothing about the replays queued meanwhile:
// with one waiting on another thread (behind the gate) the bound still holds exactly, and a
// synchronize that has returned lets every replay after it run without waiting.
TEST(InFlightBound, OnlyAWaitThatReturnedRestartsTheBound) {
  NEED_CL();
  Env& e = cl();
  Buffer y = make(e.dev, std::vector<float>(64, 0.f));
  encore::ExecutionUnit unit = one_kernel_unit(e, y);
  for (int i = 0; i < 32; ++i) unit();  // one whole group: the ring is not at its start
  Gate gate(e.dev);
  std::atomic<bool> opened{false}, synced{false};
  unit.run({&gate.ev, 1});  // every later replay queues behind this one
  std::thread syncer([&] {
    e.dev.synchronize();  // returns once the gate opens
    synced = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the syncer is waiting in clFinish
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    opened = true;
    gate.open();
  });
  for (int i = 1; i < 64; ++i) unit();
  EXPECT_FALSE(opened.load()) << "one of the 64 runs after the gate waited for it";
  EXPECT_FALSE(synced.load());
  unit();
  EXPECT_TRUE(opened.load()) << "run 65 after the gate did not wait for the first: a synchronize still waiting restarted the bound";
  opener.join();
  syncer.join();
  e.dev.synchronize();
  EXPECT_EQ(get(y), std::vector<float>(64, 98.f));  // the capture's eager run and 97 replays
  // after a synchronize that returned: 200 steps, each waited for by the host, in between others
  // that are not; every result as eager's
  for (int i = 0; i < 200; ++i) {
    unit();
    if (i % 7 == 0) e.dev.synchronize();
    if (i % 11 == 0) {
      EXPECT_EQ(get(y)[0], 99.f + static_cast<float>(i)) << "step " << i;
    }
  }
  EXPECT_EQ(get(y), std::vector<float>(64, 298.f));
}
