// Concurrent replay within a device (src/unit/concurrent.cpp): which steps get it, the dependencies
// it orders by (arena aliasing included), and replay == eager with it on. The random-graph runs are
// in test_property.cpp (Property.Concurrent*, PropertyMutation.DroppedDependencyIsDetected).
#include <gtest/gtest.h>
#include "testing.hpp"

#include <algorithm>
#include <thread>
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
// A device that gives no second queue replays in order.
#define NEED_LANES(dev) \
  if ((dev).impl()->open_lanes(2) < 2) GTEST_SKIP() << "the device has no second queue"

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

// 20 replays of a unit from capture_chains against the same chains run eagerly on `ref`.
void replays_equal_eager(Env& e, ExecutionUnit& u, const std::vector<Buffer>& ys, const std::vector<Buffer>& ref, int len) {
  // capture ran the step once, the bind's replay a second time: the reference catches up
  chains_step(e, ref, len);
  chains_step(e, ref, len);
  for (int call = 0; call < 20; ++call) {
    u();
    chains_step(e, ref, len);
  }
  for (size_t c = 0; c < ys.size(); ++c) EXPECT_EQ(get(ys[c]), get(ref[c])) << "chain " << c;
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
  NEED_LANES(e.dev);
  std::vector<Buffer> ys = buffers(e, 4, 64), ref = buffers(e, 4, 64);
  ExecutionUnit u = capture_chains(e, ys, 6);
  EXPECT_EQ(u.stats().chains, 4u);
  EXPECT_EQ(u.stats().longest_chain, 6u);
  EXPECT_TRUE(concurrent(u)) << "PoCL gives a second queue";
  replays_equal_eager(e, u, ys, ref, 6);
}

TEST(Concurrent, OneChainKeepsTheInOrderPath) {
  NEED_CL();
  Env& e = cl();
  std::vector<Buffer> ys = buffers(e, 1, 64);
  ExecutionUnit u = capture_chains(e, ys, 10);
  EXPECT_EQ(u.stats().chains, 1u);
  EXPECT_EQ(u.stats().longest_chain, 10u);
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
  EXPECT_FALSE(concurrent(u)) << "NULL has no second queue";
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
  NEED_LANES(e.dev);
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

namespace {

// The lane of each replayed item and its event waits (the start marker as -1), in bound order.
struct Lanes {
  std::vector<uint32_t> lane;
  std::vector<std::vector<int64_t>> waits;
};
Lanes lanes_of(const ExecutionUnit& u) {
  const encore::detail::ConcurrentOrder& c = impl(u).bound->conc;
  Lanes l{c.lane, {}};
  for (size_t i = 0; i < c.lane.size(); ++i) {
    l.waits.emplace_back();
    for (uint32_t k = 0; k < c.wait_n[i]; ++k) {
      const uint32_t j = c.waits[c.wait_at[i] + k];
      l.waits.back().push_back(j == UINT32_MAX ? -1 : static_cast<int64_t>(j));
    }
  }
  return l;
}

}  // namespace

// Four chains captured interleaved (item k of every chain, then item k + 1): each chain stays on
// one lane, the lanes share the chains evenly, and the only event a replay waits for is the start
// marker, once per lane other than 0 (the rest is each lane's queue order).
TEST(Concurrent, ChainsStayOnTheirLaneWithoutEvents) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  std::vector<Buffer> ys = buffers(e, 4, 64), ref = buffers(e, 4, 64);
  ExecutionUnit u = capture_chains(e, ys, 6);
  ASSERT_TRUE(concurrent(u));
  const Lanes l = lanes_of(u);
  ASSERT_EQ(l.lane.size(), 24u);
  std::vector<size_t> per_lane(8, 0);
  for (size_t i = 0; i < l.lane.size(); ++i) {
    EXPECT_EQ(l.lane[i], l.lane[i % 4]) << "item " << i << " left its chain's lane";
    ++per_lane[l.lane[i]];
  }
  const size_t lanes = impl(u).bound->conc.lanes;
  for (size_t k = 0; k < lanes; ++k) EXPECT_EQ(per_lane[k], 24u / lanes) << "lane " << k;
  size_t starts = 0;
  for (size_t i = 0; i < l.waits.size(); ++i)
    for (int64_t w : l.waits[i]) {
      EXPECT_EQ(w, -1) << "item " << i << " waits for item " << w << " of another chain";
      ++starts;
      EXPECT_NE(l.lane[i], 0u) << "lane 0 follows the start marker in its own order";
    }
  EXPECT_EQ(starts, lanes - 1);
  replays_equal_eager(e, u, ys, ref, 6);
}

// A fork and a join: one producer, three consumers (a fork: only one continues the producer's
// lane), one item reading all three. The branches on other lanes wait for the producer's event and
// the join for the branches of other lanes, one event per lane; replay equals eager.
TEST(Concurrent, ForkAndJoinWaitAcrossLanes) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  const size_t n = 256;
  Buffer x = make(e.dev, seq(n, 1.f)), b1 = e.dev.alloc<float>(n), b2 = e.dev.alloc<float>(n), b3 = e.dev.alloc<float>(n);
  Buffer o = e.dev.alloc<float>(n);
  auto step = [&](const Buffer& in, const Buffer& p, const Buffer& q, const Buffer& r, const Buffer& out) {
    e.dev.launch(e.addk, {n}, {}, in, 1);             // 0: the producer
    e.dev.launch(e.axpb, {n}, {}, in, p, 2.f, 1.f);   // 1-3: the branches
    e.dev.launch(e.axpb, {n}, {}, in, q, 3.f, 0.f);
    e.dev.launch(e.axpb, {n}, {}, in, r, -1.f, 4.f);
    e.dev.launch(e.add, {n}, {}, p, q, out);          // 4-5: the join
    e.dev.launch(e.accum, {n}, {}, out, r);
  };
  Capture cap(on());
  for (const Buffer* in : {&x, &b1, &b2, &b3, &o}) cap.add_input(*in);  // (fixed state counts as sharing bytes with every input)
  step(x, b1, b2, b3, o);
  ExecutionUnit u = cap.end();
  u();
  ASSERT_TRUE(concurrent(u));
  const Lanes l = lanes_of(u);
  ASSERT_EQ(l.lane.size(), 6u);
  EXPECT_EQ(l.lane[1], l.lane[0]) << "the first branch continues the producer's lane";
  EXPECT_NE(l.lane[2], l.lane[0]) << "the second branch goes to the least loaded lane";
  EXPECT_EQ(l.waits[2], std::vector<int64_t>{0}) << "and waits for the producer's event (which implies the start)";
  size_t cross = 0;
  for (size_t i = 0; i < l.waits.size(); ++i)
    for (int64_t w : l.waits[i])
      if (w >= 0) {
        ++cross;
        EXPECT_NE(l.lane[static_cast<size_t>(w)], l.lane[i]) << "item " << i << " waits for an event of its own lane";
      }
  EXPECT_GE(cross, 2u) << "the fork and the join cross lanes";
  Buffer rx = make(e.dev, seq(n, 1.f)), r1 = e.dev.alloc<float>(n), r2 = e.dev.alloc<float>(n), r3 = e.dev.alloc<float>(n);
  Buffer ro = e.dev.alloc<float>(n);
  for (int call = 0; call < 2; ++call) step(rx, r1, r2, r3, ro);  // capture, and u() above
  for (int call = 0; call < 25; ++call) {
    u();
    step(rx, r1, r2, r3, ro);
  }
  EXPECT_EQ(get(o), get(ro));
  EXPECT_EQ(get(x), get(rx));
}

// Two independent chains, each through temps of its own (x -> t -> o, y -> u -> p). In step order
// the planner would put the second chain's temp at the first one's bytes (their lives apart), which
// makes the second chain wait for the first: one chain. A unit that replays concurrently keeps them
// apart (more arena bytes, two chains); a unit that does not keeps the tighter arena.
TEST(Concurrent, TempsOfIndependentChainsDoNotShareArenaBytes) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  const size_t n = 128;
  Buffer x = make(e.dev, seq(n, 1.f)), y = make(e.dev, seq(n, 5.f)), o = e.dev.alloc<float>(n), q = e.dev.alloc<float>(n);
  auto step = [&](const Buffer& a, const Buffer& b, const Buffer& oa, const Buffer& ob) {
    {
      Buffer t = e.dev.alloc<float>(n);
      e.dev.launch(e.axpb, {n}, {}, a, t, 2.f, 1.f);
      e.dev.launch(e.axpb, {n}, {}, t, oa, 0.5f, 0.f);
    }
    {
      Buffer u = e.dev.alloc<float>(n);
      e.dev.launch(e.axpb, {n}, {}, b, u, 3.f, -1.f);
      e.dev.launch(e.axpb, {n}, {}, u, ob, 0.25f, 2.f);
    }
  };
  auto capture = [&](bool conc) {
    encore::UnitOptions opt;
    opt.concurrent = conc;
    Capture cap(opt);
    for (const Buffer* in : {&x, &y, &o, &q}) cap.add_input(*in);
    step(x, y, o, q);
    ExecutionUnit u = cap.end();
    u();
    return u;
  };
  ExecutionUnit off = capture(false), on_ = capture(true);
  ASSERT_EQ(off.stats().planned_temps, 2u);
  ASSERT_EQ(on_.stats().planned_temps, 2u);
  EXPECT_EQ(off.stats().chains, 1u) << "the premise: in step order the second temp reuses the first one's bytes";
  EXPECT_LT(off.stats().temp_bytes_planned, off.stats().temp_bytes_naive);
  EXPECT_EQ(on_.stats().chains, 2u);
  EXPECT_EQ(on_.stats().temp_bytes_planned, on_.stats().temp_bytes_naive) << "the two chains' temps apart";
  // the lower bound follows the lives the planner was given: one temp at a time in order, both
  // side by side when concurrent (UnitStats' comment says so)
  EXPECT_LT(off.stats().temp_bytes_lower_bound, on_.stats().temp_bytes_lower_bound);
  EXPECT_EQ(on_.stats().temp_bytes_lower_bound, on_.stats().temp_bytes_planned);
  EXPECT_TRUE(concurrent(on_));
  const auto& p = impl(on_).plan;
  EXPECT_TRUE(p.deps.on[2].empty()) << "the second chain's writer waits for nothing";
  Buffer rx = make(e.dev, seq(n, 1.f)), ry = make(e.dev, seq(n, 5.f)), ro = e.dev.alloc<float>(n), rq = e.dev.alloc<float>(n);
  step(rx, ry, ro, rq);
  for (int call = 0; call < 10; ++call) {
    on_();
    e.dev.launch(e.addk, {n}, {}, x, 1);  // new inputs between the replays
    e.dev.launch(e.addk, {n}, {}, y, 2);
    e.dev.launch(e.addk, {n}, {}, rx, 1);
    e.dev.launch(e.addk, {n}, {}, ry, 2);
    step(rx, ry, ro, rq);
  }
  on_();
  EXPECT_EQ(get(o), get(ro));
  EXPECT_EQ(get(q), get(rq));
}

// Two threads capture and replay units of independent chains on one device at once: the first
// binds open the device's lanes concurrently (open_lanes is thread-safe), and the two units' items
// share the lanes, each unit waiting only for its own. Every result equals eager. Named Threads* so
// that CI runs it under ThreadSanitizer.
TEST(ThreadsConcurrentReplay, TwoUnitsShareTheLanes) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  auto work = [&](int seed) {
    std::vector<Buffer> ys, ref;
    for (int c = 0; c < 3; ++c) {
      ys.push_back(make(e.dev, seq(64, static_cast<float>(seed + c))));
      ref.push_back(make(e.dev, seq(64, static_cast<float>(seed + c))));
    }
    ExecutionUnit u = capture_chains(e, ys, 4);
    if (!concurrent(u)) {
      ADD_FAILURE() << "thread " << seed << ": the unit does not replay concurrently";
      return;
    }
    replays_equal_eager(e, u, ys, ref, 4);  // (GoogleTest's assertions are thread-safe with pthreads)
  };
  std::thread a(work, 0), b(work, 100);
  a.join();
  b.join();
}

// A step's fresh outputs never share bytes with its inputs on replay (an input inside one is read
// through a private copy taken before the items), so a chain reading an input does not wait for
// another chain writing an output: two chains here, not one. Each call feeds the outputs back
// crosswise (input 0 = the last output 1), and the items run chain 1 first (concurrent_reorder):
// were the input not copied, chain 0 would read chain 1's new output. Every call equals eager.
TEST(Concurrent, FreshOutputsFedBackDoNotOrderTheChains) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  auto step = [&](const Buffer& a, const Buffer& b) {
    std::vector<Buffer> ys;
    const Buffer xs[2] = {a, b};
    for (int k = 0; k < 2; ++k) {
      Buffer y = e.dev.alloc<float>(64);
      e.dev.launch(e.axpb, {64}, {}, xs[k], y, 0.5f, static_cast<float>(k + 1));
      e.dev.launch(e.addk, {64}, {}, y, 3);
      e.dev.launch(e.scalef, {64}, {}, y, 0.75f);
      ys.push_back(y);
    }
    return ys;
  };
  const Buffer x0 = make(e.dev, seq(64, 1.f)), x1 = make(e.dev, seq(64, 5.f));
  Capture cap(on());
  cap.add_input(x0);
  cap.add_input(x1);
  std::vector<Buffer> ys = step(x0, x1);
  for (const Buffer& y : ys) cap.add_output(y);
  ExecutionUnit u = cap.end();
  EXPECT_EQ(u.stats().chains, 2u) << "an input and a fresh output counted as sharing bytes";
  EXPECT_EQ(impl(u).plan.deps.longest, 3u) << "a chain waits for the other's reads of its input";
  EXPECT_EQ(u.stats().longest_chain, 3u);
  std::vector<Buffer> ref = step(x0, x1);  // eager, the same call
  encore::testing::concurrent_reorder = true;
  for (int call = 0; call < 6; ++call) {
    u.bind_input(0, ys[1]).bind_input(1, ys[0])();  // the outputs, rewritten in place
    ref = step(ref[1], ref[0]);
    EXPECT_TRUE(concurrent(u));
    EXPECT_EQ(get(ys[0]), get(ref[0])) << "call " << call;
    EXPECT_EQ(get(ys[1]), get(ref[1])) << "call " << call;
  }
  encore::testing::concurrent_reorder = false;
}

namespace {

// Two chains, each from its own input through an unplanned temporary (planning off) to its own
// output: t = 0.5 x + k, y = x + t, y += 3.
std::vector<Buffer> private_temps_step(Env& e, const Buffer& a, const Buffer& b) {
  std::vector<Buffer> ys;
  const Buffer xs[2] = {a, b};
  for (int k = 0; k < 2; ++k) {
    Buffer t = e.dev.alloc<float>(64), y = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, xs[k], t, 0.5f, static_cast<float>(k + 1));
    e.dev.launch(e.add, {64}, {}, xs[k], t, y);
    e.dev.launch(e.addk, {64}, {}, y, 3);
    ys.push_back(y);
  }
  return ys;
}

ExecutionUnit capture_private_temps(Env& e, const Buffer& x0, const Buffer& x1, std::vector<Buffer>& ys, bool conc = true) {
  encore::UnitOptions o = on();
  o.concurrent = conc;
  o.plan = false;  // the temporaries stay fixed buffers of the unit's own
  Capture cap(o);
  cap.add_input(x0);
  cap.add_input(x1);
  ys = private_temps_step(e, x0, x1);
  for (const Buffer& y : ys) cap.add_output(y);
  return cap.end();
}

}  // namespace

// With planning off a step's temporaries are fixed buffers that only the unit holds. An input never
// shares bytes with them on replay (one taken from items() is read through a private copy), so the
// two chains are independent, as with the temporaries planned.
TEST(Concurrent, UnplannedTempsDoNotOrderTheChains) {
  NEED_CL();
  Env& e = cl();
  NEED_LANES(e.dev);
  const Buffer x0 = make(e.dev, seq(64, 1.f)), x1 = make(e.dev, seq(64, 5.f));
  std::vector<Buffer> ys;
  ExecutionUnit u = capture_private_temps(e, x0, x1, ys);
  EXPECT_EQ(u.stats().chains, 2u) << "an input and an unplanned internal temporary counted as sharing bytes";
  EXPECT_EQ(impl(u).plan.deps.longest, 3u) << "a chain waits for the other's reads of its input";
  EXPECT_EQ(u.stats().longest_chain, 3u);
  EXPECT_EQ(u.stats().planned_temps, 0u);
  const Buffer r0 = make(e.dev, seq(64, 1.f)), r1 = make(e.dev, seq(64, 5.f));
  encore::testing::concurrent_reorder = true;
  for (int call = 0; call < 4; ++call) {
    const Buffer in0 = make(e.dev, seq(64, float(call))), in1 = make(e.dev, seq(64, float(2 * call + 7)));
    u.bind_input(0, in0).bind_input(1, in1)();
    std::vector<Buffer> ref = private_temps_step(e, make(e.dev, seq(64, float(call))), make(e.dev, seq(64, float(2 * call + 7))));
    EXPECT_TRUE(concurrent(u));
    EXPECT_EQ(get(ys[0]), get(ref[0])) << "call " << call;
    EXPECT_EQ(get(ys[1]), get(ref[1])) << "call " << call;
  }
  encore::testing::concurrent_reorder = false;
}

// An input that is one of the unit's own internal buffers (dug out of items()): in eager execution
// that buffer would be a new one, so the step reads the input's bytes as they were before the call.
// Replay reads a private copy taken before its items, in order and concurrently; a step that
// writes such an input is refused, as for its fresh outputs.
TEST(Concurrent, InternalBufferAsInputIsReadThroughACopy) {
  NEED_CL();
  for (bool lanes : {false, true}) {
    Env& e = cl();
    if (lanes) encore::testing::concurrent_reorder = true;
    const Buffer x0 = make(e.dev, seq(64, 1.f)), x1 = make(e.dev, seq(64, 5.f));
    std::vector<Buffer> ys;
    ExecutionUnit u = capture_private_temps(e, x0, x1, ys, lanes);
    Buffer t0 = u.items()[0].args[1].buf;  // chain 0's temporary, written by item 0
    ASSERT_TRUE(u.is_internal(t0)) << t0.describe();
    u.bind_input(0, x0).bind_input(1, x1)();  // t0 now holds 0.5 x0 + 1
    for (int call = 0; call < 3; ++call) {
      const std::vector<float> before = get(t0);
      u.bind_input(0, t0).bind_input(1, x1)();
      std::vector<Buffer> ref = private_temps_step(e, make(e.dev, before), x1);
      EXPECT_EQ(concurrent(u), lanes && e.dev.impl()->open_lanes(2) >= 2);
      EXPECT_EQ(get(ys[0]), get(ref[0])) << "lanes " << lanes << " call " << call << ": the input was read after the step rewrote it";
      EXPECT_EQ(get(ys[1]), get(ref[1])) << "lanes " << lanes << " call " << call;
    }
    // a step that writes its input 0: refused when that input is one of its internal buffers
    encore::UnitOptions o;
    o.plan = false;
    const Buffer s = make(e.dev, seq(64, 2.f));
    Capture cap(o);
    cap.add_input(s);
    {
      Buffer t = e.dev.alloc<float>(64);  // the step's own: nothing outside holds it
      e.dev.launch(e.axpb, {64}, {}, s, t, 2.f, 0.f);
      e.dev.launch(e.accum, {64}, {}, s, t);
    }
    ExecutionUnit w = cap.end();
    ASSERT_EQ(w.items().size(), 2u);
    Buffer wt = w.items()[0].args[1].buf;
    ASSERT_TRUE(w.is_internal(wt));
    w.bind_input(0, wt);
    try {
      w();
      ADD_FAILURE() << "a written input that is the unit's own buffer was replayed";
    } catch (const encore::JitError& err) {
      EXPECT_NE(std::string(err.what()).find("a buffer this same step makes and uses inside it"), std::string::npos) << err.what();
    }
    w.bind_input(0, s)();  // usable after the refusal
    encore::testing::concurrent_reorder = false;
  }
}
