// ExecutionUnit and explicit Capture: slots, variables, update(map), +, free_intermediates,
// validation, capture errors. Results are compared with eager runs of the same work.
#include <gtest/gtest.h>
#include "testing.hpp"

#include <chrono>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "jit_env.hpp"
#include "unit/unit.hpp"

using encore::Capture;
using encore::ExecutionUnit;
using namespace encore_test;

namespace {

// The frame: out = rev(a*x + b) + w (w: closure weights), temp internal.
void frame(Env& e, const Buffer& x, const Buffer& w, const Buffer& out, float a) {
  Buffer t = e.dev.alloc<float>(x.count());
  e.dev.launch(e.axpb, {x.count()}, {}, x, t, a, 1.f);
  Buffer r = e.dev.alloc<float>(x.count());
  e.dev.launch(e.rev, {x.count()}, {}, t, r, static_cast<int>(x.count()));
  e.dev.launch(e.add, {x.count()}, {}, r, w, out);
}

}  // namespace

TEST(Capture, BindInputHotPathEqualsEager) {
  NEED_CL();
  Env& e = cl();
  Buffer w = make(e.dev, seq(32, 0.5f, 0.5f));
  Buffer x0 = make(e.dev, seq(32, 1.f)), out = e.dev.alloc<float>(32);
  Capture cap;
  size_t in = cap.add_input(x0);
  EXPECT_EQ(in, 0u);
  frame(e, x0, w, out, 3.f);
  cap.add_output(out);
  EXPECT_EQ(cap.items_recorded(), 3u);
  ExecutionUnit unit = cap.end();
  EXPECT_EQ(unit.num_inputs(), 1u);
  EXPECT_EQ(unit.captured_input(0), x0);
  EXPECT_EQ(unit.stats().items, 3u);
  EXPECT_EQ(unit.stats().planned_temps, 2u);
  EXPECT_GT(unit.stats().temp_bytes_naive, 0u);
  EXPECT_LE(unit.stats().temp_bytes_planned, unit.stats().temp_bytes_naive);
  EXPECT_LE(unit.stats().temp_bytes_lower_bound, unit.stats().temp_bytes_planned);
  Buffer ref = e.dev.alloc<float>(32);
  std::vector<Buffer> xs{make(e.dev, seq(32, -3.f, 2.f)), make(e.dev, seq(32, 7.f)), x0};
  for (int i = 0; i < 7; ++i) {
    const Buffer& x = xs[i % 3];
    unit.bind_input(in, x)();
    EXPECT_EQ(unit.input(0), x);
    frame(e, x, w, ref, 3.f);
    ASSERT_EQ(get(out), get(ref)) << i;
  }
}

TEST(Capture, BindVarAndUpdateMap) {
  NEED_CL();
  Env& e = cl();
  Variable pos{"pos", 1, 32};
  Variable s = Variable::f32("s", -100, 100);
  Buffer x0 = make(e.dev, seq(32, 1.f)), out = e.dev.alloc<float>(32);
  auto work = [&](const Buffer& x, const Buffer& o) {
    e.dev.launch(e.axpb, {x.count()}, {}, x, o, 1.f, 0.f);
    e.dev.launch(e.fillpos, {pos}, {}, o, pos);
    e.dev.launch(e.scalef, {x.count()}, {}, o, s);
  };
  pos.bind(4);
  s.bind(2.0);
  Capture cap;
  size_t ix = cap.add_input(x0);
  work(x0, out);
  cap.add_output(out);
  ExecutionUnit unit = cap.end();
  ASSERT_EQ(unit.num_variables(), 2u);
  size_t ps = unit.variable_slot(pos), ss = unit.variable_slot(s);
  EXPECT_EQ(unit.variable(ps), pos);
  EXPECT_EQ(unit.variable(ss), s);
  expect_jit_error([&] { unit.variable_slot(Variable{"unused", 0, 1}); }, {"unused"});
  Buffer ref = e.dev.alloc<float>(32);
  std::vector<Buffer> xs{make(e.dev, seq(32, -3.f, 2.f)), x0};
  int i = 0;
  for (auto [p, f] : std::vector<std::pair<int, double>>{{1, 0.5}, {7, -2.0}, {32, 3.0}, {13, 0.25}, {13, 1.0}}) {
    const Buffer& x = xs[i++ % 2];
    if (i % 2) {
      unit.bind_input(ix, x).bind_var(ps, p).bind_var_f(ss, f)();  // hot path by slot
    } else {
      std::vector<encore::BoundVar> vv{pos.bind(p), s.bind(f)};
      unit.update({{x0, x}}, vv)();  // convenient form: captured input -> new buffer
    }
    pos.bind(p);
    s.bind(f);
    work(x, ref);
    ASSERT_EQ(get(out), get(ref)) << "pos " << p << " s " << f;
  }
  // errors, each leaving the unit usable
  expect_jit_error([&] { unit.bind_var(ps, 33); }, {"pos", "33", "[1, 32]"});
  expect_jit_error([&] { unit.bind_var_f(ss, 1000.0); }, {"s", "outside its bounds"});
  expect_jit_error([&] { unit.update({{out, x0}}); }, {"not an input"});
  expect_jit_error([&] { unit.bind_input(3, x0); }, {"input slot 3", "1 inputs"});
  expect_jit_error([&] { unit.bind_input(ix, Buffer()); }, {"input 0", "null"});
  expect_jit_error([&] { unit.bind_input(ix, e.dev.alloc<float>(31)); }, {"input 0", "f32[32]", "f32[31]", "element count"});
  expect_jit_error([&] { unit.bind_input(ix, e.dev.alloc<int32_t>(32)); }, {"input 0", "i32[32]", "dtype"});
  expect_jit_error([&] { unit.bind_input(ix, null_env().dev.alloc<float>(32)); }, {"input 0", "NULL", "device"});
  unit.bind_input(ix, xs[0]).bind_var(ps, 9).bind_var_f(ss, -1.5)();
  pos.bind(9);
  s.bind(-1.5);
  work(xs[0], ref);
  EXPECT_EQ(get(out), get(ref));
  auto t0 = std::chrono::steady_clock::now();
  double took = unit.run_and_wait();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(took, 0.0);
  EXPECT_LE(took, wall * 1.0001 + 1e-6) << "the step's time cannot exceed the wall time around run_and_wait";
  EXPECT_EQ(get(out), get(ref));
}

TEST(Capture, TwoSlotsAliasValidation) {
  NEED_CL();
  Env& e = cl();
  Buffer a = make(e.dev, seq(16, 1.f)), b = make(e.dev, seq(16, 2.f)), out = e.dev.alloc<float>(16);
  Capture cap;
  cap.add_input(a);
  cap.add_input(b);
  e.dev.launch(e.add, {16}, {}, a, b, out);
  ExecutionUnit unit = cap.end();
  unit.bind_input(0, b).bind_input(1, b);
  expect_jit_error([&] { unit(); }, {"inputs 0 and 1", "share storage"});
  Buffer c = make(e.dev, seq(16, 10.f, 10.f));
  unit.bind_input(0, c)();
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = (10.f + 10.f * i) + (2.f + i);
  EXPECT_EQ(get(out), want);
}

TEST(Capture, ConcatenationEqualsRunningBoth) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(32, 1.f)), mid = e.dev.alloc<float>(32), out = e.dev.alloc<float>(32);
  Buffer w = make(e.dev, seq(32, 100.f, -1.f));
  ExecutionUnit a, b;
  {
    Capture cap;
    cap.add_input(x);
    frame(e, x, w, mid, 2.f);
    cap.add_output(mid);
    a = cap.end();
  }
  {
    Capture cap;
    cap.add_input(mid);
    frame(e, mid, w, out, 0.5f);
    cap.add_output(out);
    b = cap.end();
  }
  ExecutionUnit ab = a + b;
  EXPECT_EQ(ab.stats().items, a.stats().items + b.stats().items);
  Buffer mid_ref = e.dev.alloc<float>(32), out_ref = e.dev.alloc<float>(32);
  std::vector<Buffer> xs{make(e.dev, seq(32, -5.f, 0.5f)), make(e.dev, seq(32, 3.f, 3.f))};
  for (int i = 0; i < 4; ++i) {
    ab.bind_input(0, xs[i % 2])();
    frame(e, xs[i % 2], w, mid_ref, 2.f);
    frame(e, mid_ref, w, out_ref, 0.5f);
    ASSERT_EQ(get(mid), get(mid_ref)) << i;
    ASSERT_EQ(get(out), get(out_ref)) << i;
    // and the parts still run on their own
    a.bind_input(0, xs[(i + 1) % 2])();
    b();
    frame(e, xs[(i + 1) % 2], w, mid_ref, 2.f);
    frame(e, mid_ref, w, out_ref, 0.5f);
    ASSERT_EQ(get(out), get(out_ref)) << i;
  }
}

TEST(Capture, FreeIntermediatesThenRunAgain) {
  NEED_CL();
  Env& e = cl();
  Buffer w = make(e.dev, seq(64, 0.f, 0.25f));
  Buffer x = make(e.dev, seq(64, 1.f)), out = e.dev.alloc<float>(64), ref = e.dev.alloc<float>(64);
  Capture cap;
  cap.add_input(x);
  frame(e, x, w, out, 1.5f);
  cap.add_output(out);
  ExecutionUnit unit = cap.end();
  std::vector<Buffer> xs{make(e.dev, seq(64, 2.f, -1.f)), x};
  for (int round = 0; round < 3; ++round) {
    unit.free_intermediates();
    for (int i = 0; i < 3; ++i) {
      unit.bind_input(0, xs[(i + round) % 2])();
      frame(e, xs[(i + round) % 2], w, ref, 1.5f);
      ASSERT_EQ(get(out), get(ref)) << round << " " << i;
    }
  }
}

// One-time work (a constant uploaded into closure state) is pruned, and re-runs when something
// else changed its bytes between calls.
TEST(Capture, PrunedWorkRerunsWhenItsBytesChange) {
  NEED_CL();
  Env& e = cl();
  Buffer table = e.dev.alloc<float>(16), x = make(e.dev, seq(16, 1.f)), out = e.dev.alloc<float>(16);
  Capture cap;
  cap.add_input(x);
  table.copyin(seq(16, 100.f));  // one-time: writes only closure state, reads nothing
  e.dev.launch(e.add, {16}, {}, x, table, out);
  ExecutionUnit unit = cap.end();
  EXPECT_EQ(unit.stats().items_pruned, 1u);
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = (1.f + i) + (100.f + i);
  unit();
  EXPECT_EQ(get(out), want);
  table.copyin(std::vector<float>(16, 0.f));  // eager execution of the frame would upload again
  unit();
  EXPECT_EQ(get(out), want);
  EXPECT_EQ(get(table), seq(16, 100.f));
}

// The explicit path's capture check (issue 28 item 3): an engine captures one frame with begin, the
// frame's work, end. A per-frame dt passed as a plain float would be frozen into the unit with no
// word; compared with the previous frame's capture it is a JitError naming the argument.
TEST(Capture, CheckAgainstThePreviousFrame) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(16, 1.f)), y = e.dev.alloc<float>(16);
  auto frame = [&](auto dt) { e.dev.launch(e.axpb, {16}, {}, x, y, dt, 0.f); };
  auto capture = [&](auto dt, const ExecutionUnit* previous) {
    Capture cap;
    cap.add_input(x);
    if (previous) cap.check_against(*previous);
    frame(dt);
    return cap.end();
  };
  ExecutionUnit f0 = capture(0.25f, nullptr);
  EXPECT_EQ(f0.num_variables(), 0u);
  expect_jit_error([&] { capture(0.5f, &f0); },
                   {"Capture check", "argument 2", "the previous capture", "0.25", "0.5", "must be a Variable", "bind it before each run"});
  ExecutionUnit same = capture(0.25f, &f0);  // an unchanged frame passes
  EXPECT_EQ(same.num_variables(), 0u);
  // dt as a Variable: both frames launch the same Variable, and the unit takes it each run
  encore::Variable dt = encore::Variable::f32("dt");
  dt.bind(0.25);
  ExecutionUnit v0 = capture(dt, nullptr);
  dt.bind(0.5);
  ExecutionUnit v1 = capture(dt, &v0);
  ASSERT_EQ(v1.num_variables(), 1u);
  v1.bind_var_f(0, 3.0)();
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = 3.f * (1.f + i);
  EXPECT_EQ(get(y), want);
  // a buffer the frame picks anew is caught too
  Buffer other = make(e.dev, seq(16, 5.f));
  {
    Capture cap;
    cap.add_input(x);
    cap.check_against(f0);
    e.dev.launch(e.axpb, {16}, {}, other, y, 0.25f, 0.f);
    expect_jit_error([&] { cap.end(); }, {"Capture check", "argument 0", "add_input"});
  }
  // only units of Capture::end hold a recording
  Capture cap;
  expect_jit_error([&] { cap.check_against(f0 + f0); }, {"check_against", "not made by Capture::end"});
  expect_jit_error([&] { cap.check_against(ExecutionUnit()); }, {"check_against", "null unit"});
}

TEST(Capture, Errors) {
  NEED_CL();
  Env& e = cl();
  {
    Capture cap;
    expect_jit_error([&] { cap.end(); }, {"no device work"});
    expect_jit_error([&] { cap.end(); }, {"twice"});
  }
  Buffer b = make(e.dev, seq(4, 1.f));  // made outside: a copyin in a capture is recorded
  {
    Capture cap;
    expect_jit_error([&] { Capture inner; }, {"already recording"});
    expect_jit_error([&] { cap.add_input(Buffer()); }, {"null"});
    e.dev.launch(e.scalef, {4}, {}, b, 2.f);
    ExecutionUnit u = cap.end();
    EXPECT_EQ(u.stats().items, 1u);
  }
  {
    // a capture abandoned by its destructor leaves nothing recording
    { Capture cap; }
    Capture again;
    e.dev.launch(e.scalef, {4}, {}, b, 2.f);
    EXPECT_EQ(again.items_recorded(), 1u);
  }
  ExecutionUnit empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_THROW(empty(), JitError);
  EXPECT_THROW(empty.bind_input(0, Buffer()), JitError);
}

// NULL device: launches do nothing, copies and uploads run; the unit machinery is the same.
TEST(Capture, NullDeviceCopiesAndUploads) {
  Env& e = null_env();
  Buffer x = make(e.dev, seq(16, 1.f)), out = e.dev.alloc<float>(16);
  Capture cap;
  cap.add_input(x);
  Buffer t = e.dev.alloc<float>(16);
  e.dev.copy(t, x);
  e.dev.launch(e.rev, {16}, {}, t, out, 16);
  e.dev.copy(out, t);
  cap.add_output(out);
  ExecutionUnit unit = cap.end();
  for (int i = 0; i < 4; ++i) {
    Buffer xi = make(e.dev, seq(16, 10.f * i));
    unit.bind_input(0, xi)();
    ASSERT_EQ(get(out), seq(16, 10.f * i));
  }
}

// A chain of temps planned into a few arena slots uses one view (sub-buffer) per slot, not one
// per temp: PoCL's cost per enqueue grows with the sub-buffers of a parent. Results stay exact.
TEST(Capture, TempsAtTheSameBytesShareOneArenaView) {
  Env& e = null_env();
  Buffer x = make(e.dev, seq(64, 1.f));
  Capture cap;
  cap.add_input(x);
  Buffer cur = x;
  for (int i = 0; i < 50; ++i) {
    Buffer y = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, cur, y, 1.0f, 1.0f);
    cur = y;
  }
  Buffer out = e.dev.alloc<float>(64);
  e.dev.copy(out, cur);
  cur = Buffer();  // a handle still held would make the last temp external (unplanned)
  cap.add_output(out);
  ExecutionUnit unit = cap.end();
  ASSERT_EQ(unit.stats().planned_temps, 50u);
  unit();
  std::set<encore::detail::BufferImpl*> views;
  const encore::detail::UnitImpl& u = encore::detail::UnitImpl::of(unit);
  for (size_t i = 0; i < u.plan.entries.size(); ++i)
    if (u.plan.entries[i].kind == encore::detail::PlanEntry::Kind::planned) views.insert(u.bound->current[i].impl());
  EXPECT_LE(views.size(), 3u) << "planned temps should share arena views per slot";
}

// The in-flight ring: max_in_flight replays, more for a short step (min_items_in_flight items' worth,
// at most 256 replays), exactly max_in_flight when min_items_in_flight is 0, none when unbounded.
TEST(Capture, InFlightDepthFollowsTheStepsLength) {
  Env& e = null_env();
  auto depth = [&](int kernels, uint32_t max, uint32_t min_items) {
    encore::UnitOptions o;
    o.max_in_flight = max;
    o.min_items_in_flight = min_items;
    Buffer x = make(e.dev, seq(64, 1.f));
    Capture cap(o);
    cap.add_input(x);
    for (int i = 0; i < kernels; ++i) e.dev.launch(e.addk, {64}, {}, x, i);
    ExecutionUnit unit = cap.end();
    return encore::detail::UnitImpl::of(unit).flight.depth();
  };
  EXPECT_EQ(depth(1, 3, 64), 64u);
  EXPECT_EQ(depth(3, 3, 64), 22u);
  EXPECT_EQ(depth(100, 3, 64), 3u);
  EXPECT_EQ(depth(1, 3, 0), 3u);
  EXPECT_EQ(depth(1, 300, 64), 300u);
  EXPECT_EQ(depth(1, 3, 100000), 256u);
  EXPECT_EQ(depth(1, 0, 64), 0u);
}

// DESIGN rule 4: a replay re-sets only the arguments whose buffer or variable changed.
TEST(Capture, ReplayResetsOnlyChangedArguments) {
  Env& e = null_env();
  encore::Variable k{"k", 0, 100};
  Buffer w = make(e.dev, seq(64, 0.f));
  Buffer x = make(e.dev, seq(64, 1.f)), x2 = make(e.dev, seq(64, 2.f)), out = e.dev.alloc<float>(64);
  Capture cap;
  cap.add_input(x);
  k.bind(1);
  e.dev.launch(e.add, {64}, {}, x, w, out);  // uses x once
  e.dev.launch(e.addk, {64}, {}, out, k);    // uses k once
  e.dev.launch(e.accum, {64}, {}, out, x);   // uses x again
  cap.add_output(out);
  ExecutionUnit unit = cap.end();
  unit();
  auto sets = [] { return encore::testing::null_arg_sets.load(); };
  uint64_t s0 = sets();
  unit.bind_input(0, x).bind_var(0, 1)();  // nothing changed
  EXPECT_EQ(sets() - s0, 0u);
  s0 = sets();
  unit.bind_input(0, x2)();                // the two arguments fed by input 0
  EXPECT_EQ(sets() - s0, 2u);
  s0 = sets();
  unit.bind_var(0, 7)();                   // the one argument fed by k
  EXPECT_EQ(sets() - s0, 1u);
  s0 = sets();
  for (int i = 0; i < 10; ++i) unit();     // plain replays set nothing
  EXPECT_EQ(sets() - s0, 0u);
}

// A bound item is a small header; what each kind needs lives in its payload (src/exec/payloads.hpp).
// The replay loop touches every header on each replay, so the header may not grow back into a union
// of every kind's fields (it was 216 bytes).
TEST(BoundItem, IsASmallHeader) { EXPECT_LE(sizeof(encore::detail::BoundItem), 72u); }

// Payloads: addresses stay put as the arena grows past a chunk, each object is aligned for its type
// and in bind order within a chunk, and each is destroyed once, last made first, with the arena.
TEST(Payloads, StableAlignedDestroyedOnceInReverse) {
  std::vector<int> dropped;
  struct Tracked {
    std::vector<int>* log;
    int id;
    double pad[5] = {};
    ~Tracked() { log->push_back(id); }
  };
  struct Plain {
    char c;
  };
  std::vector<std::pair<Tracked*, int>> made;
  {
    encore::detail::Payloads p;
    for (int i = 0; i < 2000; ++i) {  // ~112 KB: several chunks
      Plain& c = p.make<Plain>(static_cast<char>(i));
      Tracked& t = p.make<Tracked>(&dropped, i);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(&t) % alignof(Tracked), 0u);
      EXPECT_EQ(c.c, static_cast<char>(i));
      made.push_back({&t, i});
    }
    for (auto& [t, id] : made) EXPECT_EQ(t->id, id);  // nothing moved
    size_t in_order = 0;
    for (size_t i = 1; i < made.size(); ++i) in_order += made[i].first > made[i - 1].first;
    EXPECT_GE(in_order, made.size() - 10);  // ascending but at chunk boundaries
    EXPECT_TRUE(dropped.empty());
  }
  ASSERT_EQ(dropped.size(), 2000u);
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(dropped[static_cast<size_t>(i)], 1999 - i);
}
