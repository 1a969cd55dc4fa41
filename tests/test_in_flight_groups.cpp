// How the in-flight bound groups a short step's replays (src/unit/execution_unit.cpp): the depth
// (UnitOptions' two bounds); groups of k replays, k the largest divisor of the depth leaving at
// least max(max_in_flight, 2) groups, a raised depth with no such divisor raised further to the next
// multiple of the groups; one event slot per group and device. A step with an upload is never grouped.
#include <gtest/gtest.h>

#include "encore/encore.hpp"
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
  for (Case c : {Case{1, 3, 64, 64, 16}, Case{2, 3, 64, 32, 8}, Case{3, 3, 64, 22, 2}, Case{3, 2, 64, 22, 11}, Case{5, 3, 64, 15, 5}, Case{10, 3, 64, 9, 3}, Case{7, 2, 64, 10, 5},
                 Case{100, 3, 64, 3, 1}, Case{1, 3, 0, 3, 1}, Case{1, 300, 64, 300, 1}, Case{1, 3, 100000, 256, 64},
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
    EXPECT_EQ(u.in_flight_depth, c.depth) << what;
    EXPECT_EQ(u.in_flight_every, c.every) << what;
    EXPECT_EQ(u.in_flight.size(), c.every ? c.depth / c.every : 0) << what;
    for (int i = 0; i < 3 * static_cast<int>(c.depth) + 1; ++i) unit();
    EXPECT_LT(u.in_flight_pos, c.every) << what;
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
  EXPECT_EQ(u.in_flight_depth, 64u);
  EXPECT_EQ(u.in_flight_every, 1u);
  EXPECT_EQ(u.in_flight.size(), 64u);
}
