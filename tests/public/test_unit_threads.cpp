// One ExecutionUnit used from two threads at once (issue 28 item 5): execution_unit.hpp says a unit
// is used by one thread at a time; a second thread that runs, binds or frees it meanwhile is refused
// with a JitError saying so, instead of a crash inside the kernel or a misleading aliasing error.
// And free_intermediates on a TinyJit's unit, whose arena the jit's units share (item 7).
// CI runs UnitThreads.* under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

constexpr size_t kN = 256;

// NULL, and OpenCL when present.
std::vector<Env*> devices() {
  std::vector<Env*> v{&null_env()};
  if (have_cl()) v.push_back(&cl());
  return v;
}

bool refused_as_busy(const std::string& what) {
  return contains(what, "another thread is replaying this unit") && contains(what, "a TinyJit serialises its calls");
}

// y = 2 * a + 1, then c = y + b, then c += k: two inputs (a, b) and one variable.
encore::ExecutionUnit two_input_unit(Env& e, const Buffer& a, const Buffer& b, const Buffer& y, const Buffer& c, const Variable& k) {
  encore::Capture cap;
  cap.add_input(a);
  cap.add_input(b);
  e.dev.launch(e.axpb, {kN}, {}, a, y, 2.f, 1.f);
  e.dev.launch(e.add, {kN}, {}, y, b, c);
  e.dev.launch(e.addk, {kN}, {}, c, k);
  return cap.end();
}

// y = 2 * x + 1, then a native call on y (OpenCL only) that runs `inside`, then y += k when k is given.
encore::ExecutionUnit unit_with_native(Env& e, const Buffer& x, const Buffer& y, std::function<void()> inside, const Variable* k = nullptr) {
  encore::Capture cap;
  cap.add_input(x);
  e.dev.launch(e.axpb, {kN}, {}, x, y, 2.f, 1.f);
  encore::opencl::enqueue_native(
      e.dev, [inside = std::move(inside)](cl_command_queue, std::span<const cl_mem>) { inside(); }, {encore::inout(y)}, "native");
  if (k) e.dev.launch(e.addk, {kN}, {}, y, *k);
  return cap.end();
}

}  // namespace

// A replay held inside a native call (OpenCL only): every call that would run, bind or free the
// unit from another thread meanwhile is refused, and the unit replays normally afterwards.
TEST(UnitThreads, CallsFromAnotherThreadDuringAReplayAreRefused) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(kN, 1.f)), x2 = make(e.dev, seq(kN, 100.f));
  Buffer y = e.dev.alloc<float>(kN);
  Variable k{"k", 0, 100};
  k.bind(0);
  std::atomic<bool> hold{false};
  std::atomic<int> phase{0};  // 1: the replay waits inside the native call; 2: it may go on
  std::atomic<std::thread::id> holder{};  // only the replaying thread waits (a replay wrongly let through does not)
  encore::ExecutionUnit unit = unit_with_native(
      e, x, y,
      [&] {
        if (!hold.load() || std::this_thread::get_id() != holder.load()) return;
        phase.store(1);
        while (phase.load() != 2) std::this_thread::yield();
      },
      &k);
  ASSERT_EQ(unit.num_variables(), 1u);

  hold = true;
  std::thread replayer([&] {
    holder = std::this_thread::get_id();
    unit();
  });
  while (phase.load() != 1) std::this_thread::yield();
  const std::pair<const char*, std::function<void()>> calls[] = {
      {"run", [&] { unit(); }},
      {"run", [&] { unit.run(); }},
      {"run_and_wait", [&] { unit.run_and_wait(); }},
      {"bind_input", [&] { unit.bind_input(0, x2); }},
      {"bind_var", [&] { unit.bind_var(0, 5); }},
      {"bind_var_f", [&] { unit.bind_var_f(0, 5.0); }},
      {"bind", [&] { unit.bind(encore::BoundVar{k, 5, 5.0}); }},
      {"update", [&] { unit.update({{x, x2}}, {}); }},
      {"free_intermediates", [&] { unit.free_intermediates(); }},
  };
  for (const auto& [op, call] : calls) {
    SCOPED_TRACE(op);
    try {
      call();
      ADD_FAILURE() << "ExecutionUnit::" << op << " ran while another thread replayed the unit";
    } catch (const encore::JitError& err) {
      EXPECT_TRUE(refused_as_busy(err.what())) << err.what();
      EXPECT_TRUE(contains(err.what(), std::string("ExecutionUnit::") + op)) << err.what();
    }
  }
  phase = 2;
  replayer.join();
  hold = false;
  // nothing was changed by the refused calls, and the unit binds and replays normally
  EXPECT_EQ(unit.input(0), x);
  EXPECT_EQ(unit.variable_value(0).i, 0);
  unit.bind_input(0, x2).bind_var(0, 3)();
  const std::vector<float> got = get(y), in = seq(kN, 100.f);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.f * in[i] + 1.f + 3.f) << "element " << i;
}

// Two threads binding and running one unit as fast as they can (what crashed inside the kernel, or
// read as "inputs 0 and 1 share storage"): each call either does its work or is refused as busy;
// no other error, and the unit is intact afterwards.
TEST(UnitThreads, TwoThreadsBindingAndRunningOneUnit) {
  for (Env* e : devices()) {
    SCOPED_TRACE(e->dev.id());
    Buffer a = make(e->dev, seq(kN, 1.f)), b = make(e->dev, seq(kN, 2.f));
    Buffer y = e->dev.alloc<float>(kN), c = e->dev.alloc<float>(kN);
    Variable k{"k", 0, 100};
    encore::ExecutionUnit unit = two_input_unit(*e, a, b, y, c, k);
    std::atomic<int> refused{0}, other{0};
    std::string other_text;
    std::atomic<bool> go{false};
    auto worker = [&](int t) {
      Buffer mine_a = make(e->dev, seq(kN, 10.f * static_cast<float>(t + 1)));
      Buffer mine_b = make(e->dev, seq(kN, 3.f));
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 2000; ++i) {
        try {
          switch (i % 4) {
            case 0: unit.bind_input(0, mine_a).bind_input(1, mine_b); break;
            case 1: unit.bind_var(0, t + 1); break;
            case 2: unit(); break;
            case 3: unit.update({{a, mine_a}}, {}); break;
          }
        } catch (const encore::JitError& err) {
          if (refused_as_busy(err.what())) {
            ++refused;
          } else if (other++ == 0) {
            other_text = err.what();
          }
        } catch (const std::exception& err) {
          if (other++ == 0) other_text = err.what();
        }
      }
    };
    std::thread t0(worker, 0), t1(worker, 1);
    go = true;
    t0.join();
    t1.join();
    EXPECT_EQ(other.load(), 0) << other_text;
    e->dev.synchronize();
    // one thread again: the unit's state is whole
    unit.bind_input(0, a).bind_input(1, b).bind_var(0, 7)();
    if (!e->dev.is_null()) {
      const std::vector<float> got = get(c), va = seq(kN, 1.f), vb = seq(kN, 2.f);
      for (size_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.f * va[i] + 1.f + vb[i] + 7.f) << "element " << i;
    }
  }
}

// A unit's own replay calling back into it (a native call on the replaying thread) still gets the
// re-entry message, not the other-thread one.
TEST(UnitThreads, CallBackFromItsOwnReplayIsReentry) {
  NEED_CL();
  Env& e = cl();
  Buffer x = make(e.dev, seq(kN, 1.f));
  Buffer y = e.dev.alloc<float>(kN);
  encore::ExecutionUnit* self = nullptr;
  std::string seen;
  encore::ExecutionUnit unit = unit_with_native(e, x, y, [&] {
    if (!self) return;
    try {
      self->bind_input(0, x);
    } catch (const encore::JitError& err) {
      seen = err.what();
    }
  });
  self = &unit;
  unit();
  self = nullptr;
  EXPECT_TRUE(contains(seen, "called from inside the same unit's replay")) << seen;
  EXPECT_FALSE(contains(seen, "another thread")) << seen;
}

// free_intermediates on a TinyJit's unit gives its arena back to the device (execution_unit.hpp):
// the units of one jit share one arena per device, released when none of them is bound to it.
namespace {
struct TwoTemps {
  Env* e;
  Buffer operator()(const Buffer& x) {
    const size_t n = x.count();
    Buffer t1 = e->dev.alloc<float>(n), t2 = e->dev.alloc<float>(n), out = e->dev.alloc<float>(n);
    e->dev.launch(e->axpb, {n}, {}, x, t1, 2.f, 1.f);
    e->dev.launch(e->axpb, {n}, {}, t1, t2, 1.f, 1.f);
    e->dev.launch(e->add, {n}, {}, t1, t2, out);
    return out;
  }
};
}  // namespace

TEST(UnitMemory, FreeIntermediatesOfAJitUnitReleasesTheSharedArena) {
  for (Env* e : devices()) {
    SCOPED_TRACE(e->dev.id());
    constexpr size_t n = 1 << 14;  // 64 KiB per temporary (small: Oclgrind runs this test too)
    JitOptions o;
    o.verify = 0;
    TinyJit jit(TwoTemps{e}, o);
    Buffer x = make(e->dev, seq(n, 1.f));
    Buffer big = make(e->dev, seq(2 * n, 1.f));
    Buffer xv = big.view(n, n);  // the same shape as x, but a view: another signature, another unit
    for (int i = 0; i < 3; ++i) jit(x);
    const uint64_t planned = jit.unit().stats().temp_bytes_planned;
    ASSERT_GE(planned, n * sizeof(float));
    for (int i = 0; i < 3; ++i) jit(xv);
    ASSERT_NE(&jit.unit(), jit.unit_for(x)) << "two units";
    auto in_use = [&] { return e->dev.allocator_stats().bytes_in_use; };

    // the view's unit lets go; x's unit is still bound to the same arena: nothing to release yet
    const size_t both = in_use();
    jit.unit().free_intermediates();
    EXPECT_EQ(in_use(), both) << "the other unit still uses the shared arena";
    // x's unit lets go too: the arena goes back
    jit(x);
    jit.unit().free_intermediates();
    const size_t freed = in_use();
    EXPECT_LE(freed + planned, both) << "free_intermediates released no arena";

    // both replay again (each binds a new arena) with the right results
    Buffer y = jit(x);
    EXPECT_GE(in_use(), freed + planned);
    Buffer yv = jit(xv);
    if (!e->dev.is_null()) {
      const std::vector<float> got = get(y), gotv = get(yv), in = seq(n, 1.f), inv = seq(2 * n, 1.f);
      for (size_t i = 0; i < n; i += 97) {
        const float t1 = 2.f * in[i] + 1.f, t1v = 2.f * inv[n + i] + 1.f;
        ASSERT_EQ(got[i], t1 + (t1 + 1.f)) << "element " << i;
        ASSERT_EQ(gotv[i], t1v + (t1v + 1.f)) << "element " << i;
      }
    }
  }
}
