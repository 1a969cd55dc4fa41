// Concurrent replay within a device (src/unit/concurrent.cpp): which steps get it, the dependencies
// it orders by (arena aliasing included), and replay == eager with it on. The random-graph runs are
// in test_property.cpp (Property.Concurrent*, PropertyMutation.DroppedDependencyIsDetected).
#include <gtest/gtest.h>
#include "testing.hpp"

#include <algorithm>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"
#include "core/device_impl.hpp"
#include "unit/unit.hpp"

using encore::Capture;
using encore::ExecutionUnit;
using namespace encore_test;

namespace {

const encore::detail::UnitImpl& impl(const ExecutionUnit& u) { return encore::detail::UnitImpl::of(u); }
bool concurrent(const ExecutionUnit& u) { return impl(u).bound && impl(u).bound->conc.on; }
// PoCL offers an out-of-order queue; a device without one (an interpreter, some drivers) replays in order.
#define NEED_OUT_OF_ORDER(dev) \
  if (!(dev).impl()->open_concurrent()) GTEST_SKIP() << "the device has no out-of-order queue"

// `chains` independent chains of `len` kernels, each chain over its own buffer: y += k, then y *= s.
void chains_step(Env& e, const std::vector<Buffer>& ys, int len) {
  for (int k = 0; k < len; ++k)
    for (size_t c = 0; c < ys.size(); ++c) {
      if (k % 2 == 0) e.dev.launch(e.addk, {ys[c].count()}, {}, ys[c], static_cast<int>(c + 1));
      else e.dev.launch(e.scalef, {ys[c].count()}, {}, ys[c], 0.5f);
    }
}

encore::UnitOptions on() {
  encore::UnitOptions o;
  o.concurrent = true;
  return o;
}

ExecutionUnit capture_chains(Env& e, const std::vector<Buffer>& ys, int len, encore::UnitOptions opt = on()) {
  Capture cap(opt);
  for (const Buffer& y : ys) cap.add_input(y);
  chains_step(e, ys, len);
  ExecutionUnit u = cap.end();
  u();  // binds (and replays once)
  return u;
}

std::vector<Buffer> buffers(Env& e, size_t n, size_t count) {
  std::vector<Buffer> v;
  for (size_t i = 0; i < n; ++i) v.push_back(make(e.dev, seq(count, static_cast<float>(i))));
  return v;
}

}  // namespace

TEST(Concurrent, IndependentChainsReplayConcurrentlyAndEqualEager) {
  NEED_CL();
  Env& e = cl();
  NEED_OUT_OF_ORDER(e.dev);
  std::vector<Buffer> ys = buffers(e, 4, 64), ref = buffers(e, 4, 64);
  ExecutionUnit u = capture_chains(e, ys, 6);
  EXPECT_EQ(u.stats().chains, 4u);
  EXPECT_TRUE(concurrent(u)) << "PoCL offers an out-of-order queue";
  // capture ran the step once, the bind's replay a second time: the reference catches up
  chains_step(e, ref, 6);
  chains_step(e, ref, 6);
  for (int call = 0; call < 20; ++call) {
    u();
    chains_step(e, ref, 6);
  }
  for (size_t c = 0; c < ys.size(); ++c) EXPECT_EQ(get(ys[c]), get(ref[c])) << "chain " << c;
}

TEST(Concurrent, OneChainKeepsTheInOrderPath) {
  NEED_CL();
  Env& e = cl();
  std::vector<Buffer> ys = buffers(e, 1, 64);
  ExecutionUnit u = capture_chains(e, ys, 10);
  EXPECT_EQ(u.stats().chains, 1u);
  EXPECT_FALSE(concurrent(u));
  EXPECT_TRUE(impl(u).plan.deps.eligible);
  for (uint32_t i = 1; i < 10; ++i) EXPECT_EQ(impl(u).plan.deps.on[i], std::vector<uint32_t>{i - 1}) << i;
}

TEST(Concurrent, OffSwitchAndNullDeviceKeepTheInOrderPath) {
  NEED_CL();
  Env& e = cl();
  std::vector<Buffer> ys = buffers(e, 3, 64);
  EXPECT_FALSE(concurrent(capture_chains(e, ys, 4, encore::UnitOptions{}))) << "off by default";
  Env& n = null_env();
  std::vector<Buffer> zs = buffers(n, 3, 64);
  ExecutionUnit u = capture_chains(n, zs, 4);
  EXPECT_EQ(u.stats().chains, 3u);
  EXPECT_FALSE(concurrent(u)) << "NULL has no out-of-order queue";
}

// Two temps the planner places at the same arena bytes (their lives apart): the second one's
// writer must wait for the first one's last reader, though they share no buffer handle.
TEST(Concurrent, ArenaAliasingIsADependency) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(64, 1.f)), o1 = e.dev.alloc<float>(64), o2 = e.dev.alloc<float>(64);
  Capture cap;
  cap.add_input(x);
  {
    Buffer t1 = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, x, t1, 2.f, 1.f);  // 0: writes t1
    e.dev.launch(e.axpb, {64}, {}, t1, o1, 1.f, 0.f); // 1: reads t1
  }
  {
    Buffer t2 = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, x, t2, 3.f, 0.f);  // 2: writes t2 (t1's bytes)
    e.dev.launch(e.axpb, {64}, {}, t2, o2, 1.f, 0.f); // 3: reads t2
  }
  cap.add_output(o1);
  cap.add_output(o2);
  ExecutionUnit u = cap.end();
  const auto& p = impl(u).plan;
  ASSERT_EQ(p.stats.planned_temps, 2u);
  ASSERT_LT(p.stats.temp_bytes_planned, p.stats.temp_bytes_naive) << "the two temps share arena bytes";
  EXPECT_EQ(p.deps.on[1], std::vector<uint32_t>{0});
  EXPECT_EQ(p.deps.on[2], std::vector<uint32_t>{1}) << "write after read over the shared arena bytes";
  EXPECT_EQ(p.deps.on[3], std::vector<uint32_t>{2});
  EXPECT_EQ(p.stats.chains, 1u);
  EXPECT_EQ(p.deps.longest, 4u);
}

// Forced on (a step of two short chains feeding a third item), with eager work before and after
// every replay on the in-order queue and the in-flight bound waiting for its end markers.
TEST(Concurrent, OrdersWithEagerWorkBeforeAndAfter) {
  NEED_CL();
  Env& e = cl();
  NEED_OUT_OF_ORDER(e.dev);
  Buffer a = make(e.dev, seq(256, 1.f)), b = make(e.dev, seq(256, 2.f)), out = e.dev.alloc<float>(256);
  Buffer ra = make(e.dev, seq(256, 1.f)), rb = make(e.dev, seq(256, 2.f)), rout = e.dev.alloc<float>(256);
  auto step = [&](const Buffer& x, const Buffer& y, const Buffer& o) {
    e.dev.launch(e.addk, {256}, {}, x, 3);
    e.dev.launch(e.scalef, {256}, {}, y, 0.5f);
    e.dev.launch(e.add, {256}, {}, x, y, o);
  };
  encore::UnitOptions opt = on();
  opt.max_in_flight = 1;
  opt.min_items_in_flight = 0;
  Capture cap(opt);
  cap.add_input(a);
  cap.add_input(b);
  step(a, b, out);
  cap.add_output(out);
  ExecutionUnit u = cap.end();
  step(ra, rb, rout);
  EXPECT_EQ(u.stats().chains, 2u);
  for (int call = 0; call < 30; ++call) {
    e.dev.launch(e.accum, {256}, {}, a, out);  // eager, before: the replay reads a
    e.dev.launch(e.accum, {256}, {}, ra, rout);
    u();
    step(ra, rb, rout);
    e.dev.launch(e.scalef, {256}, {}, out, 0.25f);  // eager, after: overwrites what the replay wrote
    e.dev.launch(e.scalef, {256}, {}, rout, 0.25f);
  }
  EXPECT_TRUE(concurrent(u));
  EXPECT_EQ(get(out), get(rout));
  EXPECT_EQ(get(a), get(ra));
  EXPECT_EQ(get(b), get(rb));
}
