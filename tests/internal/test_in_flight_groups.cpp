// How the in-flight bound groups a short step's replays (src/unit/in_flight.cpp): the depth
// (UnitOptions' two bounds); groups of k replays, k the largest divisor of the depth leaving at
// least max(max_in_flight, 2) groups (a depth raised for a short step: 2 groups), a raised depth
// with no such divisor raised further to the next multiple of the groups; one event slot per group and device. A step with an upload is never grouped.
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "device_pair.hpp"
#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"
#include "unit/unit.hpp"

using encore::Buffer;
using namespace encore_test;

TEST(InFlightGroups, ShortStepsTakeEventsEveryKthReplay) {
  Env& e = null_env();
  struct Case {
    int kernels;
    uint32_t max, min_items, depth, every;
  };
  for (Case c : {Case{1, 3, 64, 64, 32}, Case{2, 3, 64, 32, 16}, Case{3, 3, 64, 22, 11}, Case{3, 2, 64, 22, 11}, Case{5, 3, 64, 14, 7}, Case{10, 3, 64, 8, 4}, Case{7, 2, 64, 10, 5},
                 Case{100, 3, 64, 3, 1}, Case{1, 3, 0, 3, 1}, Case{1, 300, 64, 300, 1}, Case{1, 3, 100000, 256, 128},
                 Case{1, 1, 64, 64, 32}, Case{1, 1, 0, 1, 1}, Case{1, 0, 64, 0, 1}}) {
    encore::UnitOptions o;
    o.max_in_flight = c.max;
    o.min_items_in_flight = c.min_items;
    Buffer x = make(e.dev, seq(64, 1.f));
    encore::Capture cap(o);
    cap.add_input(x);
    for (int i = 0; i < c.kernels; ++i) e.dev.launch(e.addk, {64}, {}, x, i);
    encore::ExecutionUnit unit = cap.end();
    const encore::detail::UnitImpl& u = encore::detail::UnitImpl::of(unit);
    const std::string what = std::to_string(c.kernels) + " kernels, max " + std::to_string(c.max) + ", min items " + std::to_string(c.min_items);
    EXPECT_EQ(u.flight.depth(), c.depth) << what;
    EXPECT_EQ(u.flight.group_size(), c.every) << what;
    EXPECT_EQ(u.flight.events().size(), c.every ? c.depth / c.every : 0) << what;
    for (int i = 0; i < 3 * static_cast<int>(c.depth) + 1; ++i) unit();
    EXPECT_LT(u.flight.ran_in_group(), c.every) << what;
  }
}

TEST(InFlightGroups, AStepWithAnUploadIsNeverGrouped) {
  Env& e = null_env();
  Buffer x = make(e.dev, seq(64, 1.f));
  encore::Capture cap;
  cap.add_input(x);
  Buffer t = e.dev.alloc<float>(64);
  t.copyin(seq(64, 2.f));  // constant bytes into a temp: one-time, and still counted
  e.dev.launch(e.accum, {64}, {}, x, t);
  encore::ExecutionUnit unit = cap.end();
  const encore::detail::UnitImpl& u = encore::detail::UnitImpl::of(unit);
  EXPECT_EQ(u.flight.depth(), 64u);
  EXPECT_EQ(u.flight.group_size(), 1u);
  EXPECT_EQ(u.flight.events().size(), 64u);
}

// A loop that waits for the whole queue every step (Device::synchronize, or a blocking copyout,
// as an engine's frame or a training step that reads its loss) has nothing in flight when it
// replays: the ring starts afresh each time, so a short step never reaches the end of a group and
// takes no event at all. Without such a wait the groups go on as before.
TEST(InFlightGroups, AWholeQueueWaitStartsTheRingAfresh) {
  for (bool on_cl : {false, true}) {
    if (on_cl && !have_cl()) continue;
    Env& e = on_cl ? cl() : null_env();
    Buffer y = make(e.dev, std::vector<float>(64, 0.f));
    encore::Capture cap;  // default bound: depth 64 in 2 groups of 32
    cap.add_input(y);
    e.dev.launch(e.addk, {64}, {}, y, 1);
    encore::ExecutionUnit unit = cap.end();
    const encore::detail::UnitImpl& u = encore::detail::UnitImpl::of(unit);
    ASSERT_EQ(u.flight.group_size(), 32u);
    const char* where = on_cl ? "OpenCL" : "NULL";
    for (int i = 0; i < 40; ++i) {
      unit();
      if (i % 2) {
        e.dev.synchronize();
      } else {
        const float v = get(y)[0];  // a blocking read (NULL computes nothing)
        if (on_cl) {
          EXPECT_EQ(v, static_cast<float>(i + 2)) << where;
        }
      }
      EXPECT_EQ(u.flight.group(), 0u) << where << ", replay " << i;
      EXPECT_EQ(u.flight.ran_in_group(), 1u) << where << ", replay " << i;
    }
    for (const auto& ev : u.flight.events()) EXPECT_FALSE(ev) << where << ": a replay took an event although nothing was in flight";
    for (int i = 0; i < 36; ++i) unit();  // no wait: one group ends, the next goes on
    EXPECT_EQ(u.flight.group(), 1u) << where;
    EXPECT_EQ(u.flight.ran_in_group(), 4u) << where;
    if (on_cl) {
      EXPECT_TRUE(u.flight.events()[0]) << "the group that ended took no event";
      EXPECT_EQ(get(y), std::vector<float>(64, 77.f)) << where;  // the capture's eager run and 76 replays
    }
  }
}

// A step over two devices (a kernel on the first, its result copied to the second and added there)
// groups like any short step. Freed or destroyed mid-group while its replay waits behind an engine's
// event on each device, it waits for nothing, and the queued replay still gives the eager result,
// with memory allocated and written on both devices right after. (Removing plan.sync's end-of-step
// barriers did not make this fail on PoCL here: it shows the waits, not that ordering.)
TEST(InFlightGroups, ATwoDeviceUnitFreedMidGroupWaitsForNothing) {
  if (!have_cl()) GTEST_SKIP() << "no OpenCL device";
  const DevicePair& pair = device_pair();
  if (!pair.error.empty()) FAIL() << pair.error;
  if (pair.devs.empty()) GTEST_SKIP() << pair.skip;
  const encore::Device& a = pair.devs[0];
  const encore::Device& b = pair.devs[1];
  Env ea(a), eb(b);
  constexpr size_t n = 64;
  for (bool destroy : {false, true}) {
    const std::string what = pair.how + (destroy ? ", destroyed" : ", freed");
    Buffer x = make(a, seq(n, 1.f)), y = make(b, std::vector<float>(n, 0.f));
    encore::Capture cap;
    cap.add_input(x);
    cap.add_input(y);
    {
      Buffer ta = a.alloc<float>(n), tb = b.alloc<float>(n);
      a.launch(ea.axpb, {n}, {}, x, ta, 2.f, 1.f);
      b.copy(tb, ta);
      b.launch(eb.accum, {n}, {}, y, tb);
    }
    auto unit = std::make_unique<encore::ExecutionUnit>(cap.end());
    const encore::detail::UnitImpl& u = encore::detail::UnitImpl::of(*unit);
    ASSERT_GT(u.flight.group_size(), 1u) << what;
    for (int i = 0; i < 4; ++i) (*unit)();
    a.synchronize();
    b.synchronize();
    // an engine's event on each device's queue
    auto gate_on = [](const encore::Device& d) {
      cl_int err = CL_SUCCESS;
      cl_event g = clCreateUserEvent(encore::opencl::context(d), &err);
      EXPECT_EQ(err, CL_SUCCESS);
      encore::Event ev = encore::opencl::adopt(d, g);
      clReleaseEvent(g);
      d.wait_for({&ev, 1});
      return ev;
    };
    encore::Event gate_a = gate_on(a), gate_b = gate_on(b);
    (*unit)();  // behind the gates; mid-group
    ASSERT_EQ(u.flight.ran_in_group(), 1u) << what;
    FreeOnAnotherThread freeing(unit, destroy);
    const bool soon = freeing.returned_soon();
    EXPECT_TRUE(soon) << what << ": waited for work queued behind the gate";
    if (!soon) {  // let it return: the test has failed already
      clSetUserEventStatus(encore::opencl::native(gate_a), CL_COMPLETE);
      clSetUserEventStatus(encore::opencl::native(gate_b), CL_COMPLETE);
    }
    freeing.join();
    Buffer na = a.alloc<float>(n), nb = b.alloc<float>(n);
    a.fill(na, 5.f);
    b.fill(nb, 6.f);
    // a's part runs first, then its later work (the fill); b's copy of a's temp only after b opens
    clSetUserEventStatus(encore::opencl::native(gate_a), CL_COMPLETE);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    clSetUserEventStatus(encore::opencl::native(gate_b), CL_COMPLETE);
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = 6.f * (2.f * (1.f + static_cast<float>(i)) + 1.f);  // the capture's run and 5 replays
    EXPECT_EQ(get(y), want) << what;
    EXPECT_EQ(get(na), std::vector<float>(n, 5.f)) << what;
    EXPECT_EQ(get(nb), std::vector<float>(n, 6.f)) << what;
    if (!destroy) {
      (*unit)();  // binds afresh
      for (size_t i = 0; i < n; ++i) want[i] += 2.f * (1.f + static_cast<float>(i)) + 1.f;
      EXPECT_EQ(get(y), want) << what;
    }
  }
}
