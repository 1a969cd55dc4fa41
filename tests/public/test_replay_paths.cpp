// Replay equals eager on every path a user can take: variable bindings per call and per thread,
// verify mode, copies between platforms, all-or-nothing replays, call counting, device timing,
// integral sizes, concurrent writers of pruned state, captures ended elsewhere, moving a TinyJit.
// Public headers only.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"
#include "../../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone

using encore::BoundVar;
using encore::Device;
using encore::Size;
using namespace encore_test;

namespace {

constexpr const char* kSetSrc = R"(
__kernel void setk(__global int* y, int k) { y[get_global_id(0)] = k; }
__kernel void inc1(__global float* s) { s[get_global_id(0)] += 1.0f; }
__kernel void copyf(__global const float* a, __global float* b) { b[get_global_id(0)] = a[get_global_id(0)]; }
__kernel void dbl(__global float* x) { x[get_global_id(0)] *= 2.0f; }
)";

struct SetEnv {
  Device dev;
  encore::Program p;
  encore::Kernel setk, inc1, copyf, dbl;
  explicit SetEnv(Device d)
      : dev(d), p(d.compile(kSetSrc)), setk(p.kernel("setk")), inc1(p.kernel("inc1")), copyf(p.kernel("copyf")), dbl(p.kernel("dbl")) {}
};
SetEnv& set_cl() {
  static SetEnv e(Device::open());
  return e;
}
SetEnv& set_null() {
  static SetEnv e(Device::open("NULL"));
  return e;
}

JitOptions opts(bool enabled = true, int verify = 0) {
  JitOptions o;
  o.enabled = enabled;
  o.verify = verify;
  return o;
}

}  // namespace

// Issue 8.1: every call's own BoundVars reach its eager runs (warm-up, capture, replay, verify,
// disabled), though the BoundVars were made before the calls and the variable's last bind() is 14.
TEST(ReplayPaths, EachCallSeesItsOwnBoundVars) {
  NEED_CL();
  SetEnv& e = set_cl();
  for (int mode = 0; mode < 3; ++mode) {  // jit on, verify on, jit disabled
    Variable k{"k", 0, 100};
    std::vector<BoundVar> s;
    for (int i = 0; i < 5; ++i) s.push_back(k.bind(10 + i));
    Buffer y = e.dev.alloc<int32_t>(4);
    TinyJit jit([&](const Buffer& out, const BoundVar&) { e.dev.launch(e.setk, {4}, {}, out, k); },
                opts(mode != 2, mode == 1 ? 3 : 0));
    for (int i = 0; i < 5; ++i) {
      jit(y, s[i]);
      EXPECT_EQ(y.copyout<int32_t>()[0], 10 + i) << "call " << i << " mode " << mode;
    }
  }
}

// Issue 8.1: a value bound on one thread never leaks into another thread's work; two threads
// sharing one Variable with different values each get their own.
TEST(ReplayPaths, BindingsArePerThread) {
  NEED_CL();
  SetEnv& e = set_cl();
  Variable k{"k", 0, 1000};
  std::atomic<int> wrong{0};
  auto worker = [&](int base) {
    Buffer y = e.dev.alloc<int32_t>(4);
    for (int i = 0; i < 50; ++i) {
      k.bind(base + i);
      e.dev.launch(e.setk, {4}, {}, y, k);
      if (y.copyout<int32_t>()[0] != base + i) ++wrong;
    }
  };
  std::thread a(worker, 100), b(worker, 500);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0);
  // a fresh thread that never bound k sees its initial value (min)
  int seen = -1;
  std::thread c([&] {
    Buffer y = e.dev.alloc<int32_t>(4);
    e.dev.launch(e.setk, {4}, {}, y, k);
    seen = y.copyout<int32_t>()[0];
  });
  c.join();
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(k.value(), 0) << "this thread never bound k";
}

// Issue 8.2: verify compares what the call returns: an output that is the (new) input itself.
TEST(ReplayPaths, VerifyComparesTheReturnedOutputs) {
  NEED_CL();
  SetEnv& e = set_cl();
  TinyJit jit(
      [&](const Buffer& x) {
        e.dev.launch(e.dbl, {8}, {}, x);
        return x;
      },
      opts(true, 4));
  for (int i = 0; i < 6; ++i) {
    Buffer x = make(e.dev, seq(8, static_cast<float>(i)));
    Buffer r;
    ASSERT_NO_THROW(r = jit(x)) << "call " << i;
    EXPECT_EQ(r.copyout<float>(), seq(8, 2.f * i, 2.f)) << "call " << i;
  }
}

// Issue 8.3: verify on a device that computes nothing is skipped (one line on stderr), never a
// false alarm.
TEST(ReplayPaths, VerifyOnNullIsSkipped) {
  SetEnv& e = set_null();
  Buffer s = e.dev.alloc<float>(8);
  TinyJit jit(
      [&](const Buffer& x) {
        Buffer t = e.dev.alloc<float>(8);
        e.dev.launch(e.copyf, {8}, {}, x, t);
        e.dev.launch(e.inc1, {8}, {}, s);
        return t;
      },
      opts(true, 5));
  Buffer x = e.dev.alloc<float>(8);
  LogCapture logs;
  for (int i = 0; i < 6; ++i) ASSERT_NO_THROW(jit(x)) << "call " << i;
  std::string err = logs.text();
  EXPECT_TRUE(contains(err, "verify skipped")) << err;
  EXPECT_EQ(jit.calls(), 6u);
}

// log.hpp: without a sink, warnings are printed to stderr by default (issue 26 item 7; they used
// to need ENCORE_DEBUG=1), and the same warning reaches a sink instead when one is installed.
TEST(ReplayPaths, WarningsArePrintedByDefault) {
  if (std::getenv("ENCORE_DEBUG") || std::getenv("ENCORE_LOG")) GTEST_SKIP() << "runs without ENCORE_DEBUG and ENCORE_LOG";
  SetEnv& e = set_null();
  TinyJit jit([&](const Buffer& x) { e.dev.launch(e.inc1, {8}, {}, x); }, opts(true, 3));
  Buffer x = e.dev.alloc<float>(8);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 4; ++i) jit(x);  // the capture logs "verify skipped" (a warning)
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "encore: warning: TinyJit verify skipped")) << err;
  LogCapture logs;  // the same warning reaches a sink, and nothing is printed
  TinyJit again([&](const Buffer& y) { e.dev.launch(e.inc1, {8}, {}, y); }, opts(true, 3));
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) again(x);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(contains(logs.text(), "verify skipped")) << logs.text();
}

// Issue 8.4: a copy between devices of different platforms (an OpenCL device and the NULL device)
// inside a step replays as eager runs it: through host memory made at bind time.
TEST(ReplayPaths, CopyBetweenPlatformsReplays) {
  NEED_CL();
  SetEnv& c = set_cl();
  SetEnv& n = set_null();
  Buffer host_side = n.dev.alloc<float>(16);  // NULL buffers hold host memory: copies work
  auto step = [&](const Buffer& x) {
    Buffer t = c.dev.alloc<float>(16);
    c.dev.launch(c.copyf, {16}, {}, x, t);
    c.dev.launch(c.dbl, {16}, {}, t);
    n.dev.copy(host_side, t);  // CL -> NULL
    Buffer back = c.dev.alloc<float>(16);
    c.dev.copy(back, host_side);  // NULL -> CL
    c.dev.launch(c.inc1, {16}, {}, back);
    return back;
  };
  TinyJit jit(step, opts());
  for (int i = 0; i < 6; ++i) {
    Buffer x = make(c.dev, seq(16, static_cast<float>(i), 0.5f));
    Buffer r;
    ASSERT_NO_THROW(r = jit(x)) << "call " << i;
    std::vector<float> want = seq(16, 2.f * i + 1.f, 1.f);
    EXPECT_EQ(r.copyout<float>(), want) << "call " << i;
    EXPECT_EQ(host_side.copyout<float>(), seq(16, 2.f * i, 1.f)) << "call " << i;
  }
}

// Issue 8.5: a replay runs the whole step or nothing. A variable value that makes a later item's
// launch invalid is refused before anything is enqueued; the next valid call is correct.
TEST(ReplayPaths, InvalidSizesAreRefusedBeforeAnyEnqueue) {
  NEED_CL();
  SetEnv& e = set_cl();
  Variable n{"n", 0, 64};
  Buffer s = make(e.dev, std::vector<float>(64, 0.f));
  Buffer y = e.dev.alloc<float>(64);
  TinyJit jit(
      [&](const Buffer& x, const BoundVar&) {
        e.dev.launch(e.inc1, {64}, {}, s);                   // first item: fixed size
        e.dev.launch(e.copyf, {n * 1}, {Size(8)}, x, y);     // second: a multiple of 8 only
      },
      opts());
  Buffer x = make(e.dev, seq(64, 0.f));
  for (int i = 0; i < 3; ++i) jit(x, n.bind(16));
  EXPECT_EQ(s.copyout<float>()[0], 3.f);
  uint64_t v = s.version();
  EXPECT_THROW(jit(x, n.bind(12)), encore::ArgumentError);  // 12 is not a multiple of 8
  EXPECT_EQ(s.copyout<float>()[0], 3.f) << "the first item ran although the replay was refused";
  EXPECT_EQ(s.version(), v);
  jit(x, n.bind(24));
  EXPECT_EQ(s.copyout<float>()[0], 4.f);
  std::vector<float> got = y.copyout<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(got[i], static_cast<float>(i));
  // the same through the unit's slot API
  encore::ExecutionUnit& unit = jit.unit();
  EXPECT_THROW(unit.bind_var(unit.variable_slot(n), 20), encore::ArgumentError);
  EXPECT_EQ(unit.variable_value(unit.variable_slot(n)).i, 24) << "a refused value must not stick";
  unit();
  EXPECT_EQ(s.copyout<float>()[0], 5.f);
}

// Issue 8.6: a call counts only when it completed: a failing call 0 is not the warm-up.
TEST(ReplayPaths, FailedCallsDoNotCount) {
  for (SetEnv* e : {&set_null(), have_cl() ? &set_cl() : nullptr}) {
    if (!e) continue;
    bool fail = true;
    TinyJit jit(
        [&](const Buffer& x) {
          if (fail) throw std::runtime_error("not yet");
          e->dev.launch(e->dbl, {8}, {}, x);
        },
        opts());
    Buffer x = make(e->dev, seq(8, 1.f));
    EXPECT_THROW(jit(x), std::runtime_error);
    EXPECT_EQ(jit.calls(), 0u);
    fail = false;
    jit(x);
    EXPECT_EQ(jit.calls(), 1u);
    EXPECT_FALSE(jit.unit()) << "call 0 only warms up";
    jit(x);
    EXPECT_EQ(jit.calls(), 2u);
    EXPECT_TRUE(jit.unit()) << "call 1 captures";
    static_assert(std::is_same_v<decltype(jit.calls()), uint64_t>, "calls() is 64-bit (issue 8.13)");
  }
}

// Issue 8.7: run_and_wait reports device time where the queue profiles, and says so.
TEST(ReplayPaths, RunAndWaitReportsDeviceTimeOnProfilingQueues) {
  NEED_CL();
  Device def = Device::open();
  cl_int err = CL_SUCCESS;
  cl_context ctx = encore::opencl::context(def);
  cl_device_id id = encore::opencl::device_id(def);
  cl_command_queue q = encore::cl::create_queue(ctx, id, CL_QUEUE_PROFILING_ENABLE, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  Device prof = encore::opencl::adopt(q);
  clReleaseCommandQueue(q);
  for (Device d : {prof, def}) {
    SetEnv e(d);
    Buffer s = make(d, std::vector<float>(1 << 16, 0.f));
    encore::Capture cap;
    for (int i = 0; i < 20; ++i) d.launch(e.inc1, {size_t(1) << 16}, {}, s);
    encore::ExecutionUnit unit = cap.end();
    EXPECT_EQ(unit.times_on_device(), d == prof);
    auto t0 = std::chrono::steady_clock::now();
    double t = unit.run_and_wait();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(t, 0.0);
    EXPECT_LE(t, wall * 1.0001 + 1e-6) << "device time cannot exceed the wall time around the call";
    EXPECT_EQ(s.copyout<float>()[0], 40.f) << "capture ran 20, the replay 20";
  }
}

// Issue 8.9: every integral type is a size and a variable value.
TEST(ReplayPaths, AnyIntegralTypeIsASizeAndAValue) {
  SetEnv& e = set_null();
  Variable k{"k", 0, 1 << 20};
  Buffer y = e.dev.alloc<int32_t>(64);
  uint32_t n32 = 64;
  size_t nsz = 64;
  long long nll = 64;
  uint16_t n16 = 64;
  e.dev.launch(e.setk, {n32}, {}, y, k);
  e.dev.launch(e.setk, {nsz}, {n16}, y, k);
  e.dev.launch(e.setk, {nll}, {}, y, k);
  e.dev.launch(e.setk, {k * 2 + n32}, {}, y, k);
  EXPECT_EQ(k.bind(uint32_t{7}).i, 7);
  EXPECT_EQ(k.bind(size_t{9}).i, 9);
  EXPECT_EQ(k.bind(static_cast<long long>(11)).i, 11);
  EXPECT_EQ(k.bind(static_cast<unsigned char>(13)).i, 13);
  EXPECT_THROW(k.bind(~uint64_t{0}), encore::ArgumentError);
  EXPECT_THROW(k.bind(-1), encore::ArgumentError);
  EXPECT_THROW(e.dev.launch(e.setk, {~size_t{0}}, {}, y, k), encore::ArgumentError);  // above INT64_MAX: negative
}

// Issue 8.15: a pruned table rebuilt while another thread keeps writing its source never stays
// stale: once the writer stops, the next replay sees the final source. The table is a chain of
// one-time copies, so a replay spends most of its time re-running them while the writer writes.
TEST(ReplayPaths, PrunedTableSeesConcurrentWrites) {
  NEED_CL();
  SetEnv& e = set_cl();
  constexpr int kChain = 200, kWrites = 2000;
  for (int round = 0; round < 3; ++round) {
    Buffer src = make(e.dev, std::vector<float>(64, 0.f));
    std::vector<Buffer> chain;
    for (int i = 0; i < kChain; ++i) chain.push_back(e.dev.alloc<float>(64));
    TinyJit jit(
        [&](const Buffer& x) {
          e.dev.launch(e.copyf, {64}, {}, encore::in(src), encore::out(chain[0]));  // one-time: built from src
          for (int i = 1; i < kChain; ++i) e.dev.launch(e.copyf, {64}, {}, encore::in(chain[i - 1]), encore::out(chain[i]));
          e.dev.launch(e.dbl, {64}, {}, x);
        },
        opts());
    Buffer x = make(e.dev, seq(64, 0.f));
    jit(x);
    jit(x);
    ASSERT_EQ(jit.unit().stats().items_pruned, static_cast<size_t>(kChain));
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      for (int i = 0; i < kWrites; ++i) e.dev.launch(e.inc1, {64}, {}, src);
      stop = true;
    });
    while (!stop) jit(x);
    writer.join();
    jit(x);
    EXPECT_EQ(chain.back().copyout<float>()[0], static_cast<float>(kWrites)) << "round " << round;
  }
}

// Issue 8.16: a Capture destroyed on another thread stops the recording safely: the recording
// thread's next launches run eagerly and are not recorded, and a new Capture works there.
TEST(ReplayPaths, CaptureDestroyedOnAnotherThread) {
  for (SetEnv* e : {&set_null(), have_cl() ? &set_cl() : nullptr}) {
    if (!e) continue;
    Buffer s = make(e->dev, std::vector<float>(8, 0.f));
    auto cap = std::make_unique<encore::Capture>();
    e->dev.launch(e->inc1, {8}, {}, s);
    EXPECT_EQ(cap->items_recorded(), 1u);
    std::thread([c = std::move(cap)]() mutable { c.reset(); }).join();
    for (int i = 0; i < 3; ++i) e->dev.launch(e->inc1, {8}, {}, s);  // eager, recorded nowhere
    encore::Capture again;
    e->dev.launch(e->inc1, {8}, {}, s);
    encore::ExecutionUnit unit = again.end();
    EXPECT_EQ(unit.items().size(), 1u);
    unit();
    if (!e->dev.is_null()) {
      EXPECT_EQ(s.copyout<float>()[0], 6.f);
    }
  }
}

// Issue 8.18: a TinyJit can be returned by value and kept in a vector, and keeps replaying.
TEST(ReplayPaths, TinyJitMoves) {
  SetEnv& e = have_cl() ? set_cl() : set_null();
  auto make_jit = [&](float k) {
    auto fn = [&e, k](const Buffer& x) {
      Buffer t = e.dev.alloc<float>(8);
      e.dev.launch(e.copyf, {8}, {}, x, t);
      for (float i = 0; i < k; ++i) e.dev.launch(e.inc1, {8}, {}, t);
      return t;
    };
    TinyJit j(fn, opts());
    return j;
  };
  std::vector<decltype(make_jit(1.f))> jits;
  for (int i = 0; i < 3; ++i) jits.push_back(make_jit(static_cast<float>(i + 1)));
  Buffer x = make(e.dev, seq(8, 0.f));
  for (int call = 0; call < 4; ++call)
    for (size_t j = 0; j < jits.size(); ++j) {
      Buffer r = jits[j](x);
      if (!e.dev.is_null()) {
        EXPECT_EQ(r.copyout<float>(), seq(8, static_cast<float>(j + 1))) << "jit " << j << " call " << call;
      }
    }
  auto moved = std::move(jits[1]);
  EXPECT_EQ(moved.calls(), 4u);
  Buffer r = moved(x);
  EXPECT_EQ(moved.calls(), 5u);
  if (!e.dev.is_null()) {
      EXPECT_EQ(r.copyout<float>(), seq(8, 2.f));
    }
}

// Concurrent replay (UnitOptions::concurrent): ENCORE_DEBUG=1 says which path a unit takes. A step
// of one chain keeps the in-order path; two independent chains go concurrent where the device gives
// a second in-order queue (PoCL), and stay in order on NULL, which has none.
TEST(DebugNotes, SayWhetherAUnitReplaysConcurrently) {
  const char* level = std::getenv("ENCORE_DEBUG");
  if (!level || std::string(level) != "1") GTEST_SKIP() << "runs with ENCORE_DEBUG=1 (meson test debug-notes)";
  SetEnv& e = set_null();
  encore::UnitOptions on;
  on.concurrent = true;
  Buffer y = e.dev.alloc<float>(16), z = e.dev.alloc<float>(16);
  auto logged = [&](bool two) {
    LogCapture logs;
    encore::Capture cap(on);
    cap.add_input(y);
    if (two) cap.add_input(z);
    e.dev.launch(e.dbl, {16}, {}, y);
    e.dev.launch(e.dbl, {16}, {}, two ? z : y);
    cap.end();
    return logs.text();
  };
  std::string one = logged(false), two = logged(true);
  {
    LogCapture logs;
    encore::Capture cap;  // off by default
    e.dev.launch(e.dbl, {16}, {}, y);
    e.dev.launch(e.dbl, {16}, {}, z);
    cap.end();
    EXPECT_TRUE(contains(logs.text(), "replay: in order (UnitOptions::concurrent is off)")) << logs.text();
  }
  EXPECT_TRUE(contains(one, "replay: in order (one chain) (replayed items 2, chains 1)")) << one;
  EXPECT_TRUE(contains(two, "replay: in order (the device has no second queue) (replayed items 2, chains 2)")) << two;
  if (!encore_test::have_cl()) return;
  SetEnv& c = set_cl();
  Buffer a = c.dev.alloc<float>(16), b = c.dev.alloc<float>(16);
  LogCapture logs;
  encore::Capture cap(on);
  cap.add_input(a);
  cap.add_input(b);
  c.dev.launch(c.dbl, {16}, {}, a);
  c.dev.launch(c.dbl, {16}, {}, b);
  cap.end();
  EXPECT_TRUE(contains(logs.text(), "replay: concurrent, on 2 lanes (in-order queues) (replayed items 2, chains 2)")) << logs.text();
}

// Issue 8.12: a constant-table kernel whose table parameter is not const defaults to inout and is
// kept; ENCORE_DEBUG=1 says which item and why, with the fix. The level is read once per process:
// meson runs this test again in a process of its own with ENCORE_DEBUG=1 (test "debug-notes").
TEST(DebugNotes, SayWhyALookalikeOneTimeItemIsKept) {
  const char* level = std::getenv("ENCORE_DEBUG");
  if (!level || std::string(level) != "1") GTEST_SKIP() << "runs with ENCORE_DEBUG=1 (meson test debug-notes)";
  SetEnv& e = set_null();
  Buffer table = e.dev.alloc<int32_t>(16);
  Buffer y = e.dev.alloc<float>(16);
  std::string text;
  {
    LogCapture logs;
    encore::Capture cap;
    e.dev.launch(e.setk, {16}, {}, table, 7);  // `__global int* y`: inout by default, so it reads its output
    e.dev.launch(e.dbl, {16}, {}, y);
    EXPECT_EQ(cap.end().stats().items_pruned, 0u);
    text = logs.text();
  }
  EXPECT_TRUE(contains(text, "captured 2 items")) << text;
  EXPECT_TRUE(contains(text, "item 0")) << text;
  EXPECT_TRUE(contains(text, "setk")) << text;
  EXPECT_TRUE(contains(text, "encore::out()")) << text;
  // with the access declared, the table is one-time and no note names it
  LogCapture logs;
  encore::Capture cap;
  e.dev.launch(e.setk, {16}, {}, encore::out(table), 7);
  e.dev.launch(e.dbl, {16}, {}, y);
  EXPECT_EQ(cap.end().stats().items_pruned, 1u);
  EXPECT_FALSE(contains(logs.text(), "setk")) << logs.text();
}

// An item kept for several conditions is listed with all of them, and the items that are each
// call's own work (they touch an input) are counted on one line rather than left unexplained.
TEST(DebugNotes, SayEveryReasonAndCountTheInputsWork) {
  const char* level = std::getenv("ENCORE_DEBUG");
  if (!level || std::string(level) != "1") GTEST_SKIP() << "runs with ENCORE_DEBUG=1 (meson test debug-notes)";
  SetEnv& e = set_null();
  Buffer x = e.dev.alloc<float>(16), y = e.dev.alloc<float>(16);
  LogCapture logs;
  encore::Capture cap;
  cap.add_input(x);
  e.dev.launch(e.dbl, {16}, {}, x);  // touches the input
  e.dev.launch(e.dbl, {16}, {}, y);  // reads its own output, and item 2 writes the same bytes
  e.dev.launch(e.dbl, {16}, {}, y);
  EXPECT_EQ(cap.end().stats().items_pruned, 0u);
  const std::string text = logs.text();
  // item 1 also reads bytes item 2 writes later; item 2 reads what the kept item 1 wrote
  EXPECT_TRUE(contains(text, ": for 3 reasons: reads its own output (a read-modify-write): declare encore::out() on the argument if the kernel "
                             "only writes it; another item writes the same bytes; reads bytes that a later item in the step writes")) << text;
  EXPECT_TRUE(contains(text, "another item writes the same bytes; reads bytes written by an item that is itself kept")) << text;
  EXPECT_TRUE(contains(text, "kept item 1 (")) << text;
  EXPECT_TRUE(contains(text, "kept item 2 (")) << text;
  EXPECT_TRUE(contains(text, "kept 1 item that touches an input or uses a variable")) << text;
  EXPECT_FALSE(contains(text, "item 0 (")) << text;
}
