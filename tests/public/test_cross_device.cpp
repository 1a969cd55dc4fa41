// Order between two devices of one context on replay: a copy between them waits for the items it
// depends on and nothing else, so independent work overlaps; and it is still ordered against every
// item that writes what it reads or overwrites what it reads. Each test holds one device's queue
// back with a native item waiting on a user event (the "gate"), which makes an ordering mistake
// deterministic: a copy that does not wait reads stale bytes, and a queue that waits for too much
// never reaches the probe. Runs on the pair of tests/support/device_pair.hpp (CI: two PoCL devices of one
// platform, and two sub-devices of one device); skips without two devices of one context.
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "device_pair.hpp"
#include "jit_env.hpp"

using encore::Buffer;
using encore::Device;

namespace {

constexpr const char* kSrc =
    "__kernel void affine(__global float* out, __global const float* in, float a, float b) {"
    "  size_t i = get_global_id(0); out[i] = in[i] * a + b; }"
    "__kernel void bump(__global float* x, float b) { x[get_global_id(0)] += b; }";
constexpr size_t kN = 64;

struct Pair {
  Device a, b;
  encore::Kernel affine_a, affine_b, bump_b;
};

// Two OpenCL devices of one context (tests/support/device_pair.hpp: ENCORE_TEST_DEVICE_SPLIT), or false
// (the test skips with kNeedsPair).
constexpr const char* kNeedsPair = "needs two OpenCL devices of one context (POCL_DEVICES=\"pthread pthread\", or a device that splits)";
bool open_pair(Pair& p) {
  if (!encore_test::have_cl()) return false;
  const encore_test::DevicePair& dp = encore_test::device_pair();
  EXPECT_EQ(dp.error, "");
  if (dp.devs.size() != 2) return false;
  p.a = dp.devs[0];
  p.b = dp.devs[1];
  if (p.a.is_null() || p.b.is_null() || encore::opencl::context(p.a) != encore::opencl::context(p.b)) return false;
  p.affine_a = p.a.compile(kSrc).kernel("affine");
  p.affine_b = p.b.compile(kSrc).kernel("affine");
  p.bump_b = p.b.compile(kSrc).kernel("bump");
  return true;
}

// A user event that holds back a queue while armed: the gate item enqueues a barrier on it.
struct Gate {
  cl_event ev = nullptr;
  bool armed = false;
  explicit Gate(const Device& d) {
    cl_int err = CL_SUCCESS;
    ev = clCreateUserEvent(encore::opencl::context(d), &err);
    EXPECT_EQ(err, CL_SUCCESS);
  }
  ~Gate() {
    open();
    clReleaseEvent(ev);
  }
  void open() {
    if (ev && !opened) clSetUserEventStatus(ev, CL_COMPLETE);
    opened = true;
  }
  // Opens it 50 ms from now: time enough for work that does not wait for the gate to run first.
  void open_after_a_pause() {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    open();
  }
  // a native item on `d` that, while armed, makes the rest of d's queue wait for the gate
  void item(const Device& d, const Buffer& token) {
    encore::opencl::enqueue_native(
        d,
        [this](cl_command_queue q, std::span<const cl_mem>) {
          if (armed) clEnqueueBarrierWithWaitList(q, 1, &ev, nullptr);
        },
        {encore::in(token)}, "gate");
  }
  bool opened = false;
};

// Polls `ready` for up to 20 s.
template <class F> bool eventually(F&& ready) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

std::vector<float> affine(const std::vector<float>& x, float a, float b) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * a + b;
  return y;
}

}  // namespace

// The copy reads what an earlier item on the other device wrote; work queued on that device after
// the writer, held back by the gate, must not hold the copy back.
TEST(CrossDevice, CopyWaitsForItsWriterNotForLaterWork) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  Gate gate(p.b);
  Buffer token = p.b.alloc<float>(kN);
  auto step = [&](const Buffer& x) {  // x on b
    Buffer xb = p.b.alloc<float>(kN);
    p.b.launch(p.affine_b, {kN}, {}, xb, x, 1.f, 1.f);  // the copy's writer
    gate.item(p.b, token);                             // later, unrelated work on b
    Buffer ya = p.a.alloc<float>(kN);
    p.a.copy(ya, xb);
    Buffer za = p.a.alloc<float>(kN);
    p.a.launch(p.affine_a, {kN}, {}, za, ya, 3.f, 0.f);
    return za;
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.b, in);
    gate.armed = call == 3;  // a replay
    Buffer out = jit(x);
    if (gate.armed) {
      encore::Event done = p.a.marker();
      EXPECT_TRUE(eventually([&] { return done.done(); })) << "device a's copy waited for work queued on b after the copy's writer";
      gate.open();
    }
    EXPECT_EQ(encore_test::get(out), affine(affine(in, 1.f, 1.f), 3.f, 0.f)) << "call " << call;
  }
}

// The copy reads bytes that a later item on the source device overwrites. Device a (the copy's
// queue) is held back: b's independent work must still run (the probe completes), while b's
// overwrite waits for the copy (the copy sees the bytes of its place in the step).
TEST(CrossDevice, SourceWaitsOnlyToOverwriteWhatACopyReads) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  Gate gate(p.a);
  Buffer token = p.a.alloc<float>(kN), probe_token = p.b.alloc<float>(kN);
  cl_event probe = nullptr;
  bool probing = false;
  auto step = [&](const Buffer& x) {  // x on b
    Buffer xb = p.b.alloc<float>(kN);
    p.b.launch(p.affine_b, {kN}, {}, xb, x, 1.f, 1.f);
    gate.item(p.a, token);
    Buffer ya = p.a.alloc<float>(kN);
    p.a.copy(ya, xb);                                    // waits behind the gate on a
    Buffer zb = p.b.alloc<float>(kN);
    p.b.launch(p.affine_b, {kN}, {}, zb, x, 5.f, 0.f);  // independent of the copy
    encore::opencl::enqueue_native(
        p.b,
        [&](cl_command_queue q, std::span<const cl_mem>) {
          if (probing) clEnqueueMarkerWithWaitList(q, 0, nullptr, &probe);
          if (probing) clFlush(q);
        },
        {encore::in(probe_token)}, "probe");
    p.b.launch(p.bump_b, {kN}, {}, xb, 10.f);           // overwrites what the copy reads
    return std::vector<Buffer>{ya, zb, xb};
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.b, in);
    gate.armed = probing = call == 3;
    std::vector<Buffer> out = jit(x);
    if (probing) {
      ASSERT_NE(probe, nullptr);
      EXPECT_TRUE(eventually([&] {
        cl_int st = CL_QUEUED;
        clGetEventInfo(probe, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr);
        return st == CL_COMPLETE;
      })) << "device b's independent work waited for the copy on a";
      clReleaseEvent(probe);
      gate.open();
    }
    EXPECT_EQ(encore_test::get(out[0]), affine(in, 1.f, 1.f)) << "call " << call << ": the copy saw b's later overwrite";
    EXPECT_EQ(encore_test::get(out[1]), affine(in, 5.f, 0.f)) << "call " << call;
    EXPECT_EQ(encore_test::get(out[2]), affine(in, 1.f, 11.f)) << "call " << call;
  }
}

// The copy's writer on the other device is held back: the copy must wait for it (and not read the
// previous call's bytes), in a step where the writer is the step's first item on its device.
TEST(CrossDevice, CopyWaitsForALateWriter) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  Gate gate(p.a);
  Buffer token = p.a.alloc<float>(kN);
  auto step = [&](const Buffer& x) {  // x on a
    gate.item(p.a, token);
    Buffer xa = p.a.alloc<float>(kN);
    p.a.launch(p.affine_a, {kN}, {}, xa, x, 2.f, 0.f);
    Buffer yb = p.b.alloc<float>(kN);
    p.b.copy(yb, xa);
    return yb;
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 5; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.a, in);
    gate.armed = call == 3;
    Buffer out = jit(x);
    if (gate.armed) gate.open_after_a_pause();
    EXPECT_EQ(encore_test::get(out), affine(in, 2.f, 0.f)) << "call " << call;
  }
}

// Nothing in the step overwrites what the copy reads, but eager work after the replay does: it must
// still wait for the copy (held back on device a).
TEST(CrossDevice, WorkAfterTheReplayWaitsForItsCopies) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  Gate gate(p.a);
  Buffer token = p.a.alloc<float>(kN);
  auto step = [&](const Buffer& x) {  // x on b
    gate.item(p.a, token);
    Buffer ya = p.a.alloc<float>(kN);
    p.a.copy(ya, x);
    return ya;
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.b, in);
    gate.armed = call == 3;
    Buffer out = jit(x);
    p.b.launch(p.bump_b, {kN}, {}, x, 10.f);  // eager, on the copy's source, right after the call
    if (gate.armed) gate.open_after_a_pause();
    EXPECT_EQ(encore_test::get(out), in) << "call " << call;
    EXPECT_EQ(encore_test::get(x), affine(in, 1.f, 10.f)) << "call " << call;
  }
}

// The copy reads an input that eager work queued before the call writes (held back on device a):
// no item of the step writes it, and the copy still waits for that work.
TEST(CrossDevice, CopyWaitsForWorkBeforeTheReplay) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  encore::Kernel bump_a = p.a.compile(kSrc).kernel("bump");
  Gate gate(p.a);
  auto step = [&](const Buffer& x) {  // x on a
    Buffer yb = p.b.alloc<float>(kN);
    p.b.copy(yb, x);
    return yb;
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.a, in);
    if (call == 3) clEnqueueBarrierWithWaitList(encore::opencl::queue(p.a), 1, &gate.ev, nullptr);
    p.a.launch(bump_a, {kN}, {}, x, 10.f);  // eager, before the call
    Buffer out = jit(x);
    if (call == 3) gate.open_after_a_pause();
    EXPECT_EQ(encore_test::get(out), affine(in, 1.f, 10.f)) << "call " << call;
  }
}

// A replay that fails halfway (a native item throws after a cross-device copy was enqueued, before
// its overwriter) leaves the unit usable: the next replay orders its copies afresh and is right.
TEST(CrossDevice, AFailedReplayLeavesTheUnitUsable) {
  Pair p;
  if (!open_pair(p)) GTEST_SKIP() << kNeedsPair;
  Buffer token = p.b.alloc<float>(kN);
  bool fail = false;
  auto step = [&](const Buffer& x) {  // x on b
    Buffer ya = p.a.alloc<float>(kN);
    p.a.copy(ya, x);
    encore::opencl::enqueue_native(
        p.b,
        [&](cl_command_queue, std::span<const cl_mem>) {
          if (fail) throw std::runtime_error("injected failure");
        },
        {encore::in(token)}, "fails");
    p.b.launch(p.bump_b, {kN}, {}, x, 10.f);  // overwrites what the copy read
    return ya;
  };
  encore::TinyJit jit(step);
  for (int call = 0; call < 6; ++call) {
    std::vector<float> in = encore_test::seq(kN, static_cast<float>(call * 100), 1.f);
    Buffer x = encore_test::make(p.b, in);
    fail = call == 3;
    if (fail) {
      EXPECT_THROW(jit(x), std::runtime_error);
      continue;
    }
    Buffer out = jit(x);
    EXPECT_EQ(encore_test::get(out), in) << "call " << call;
    EXPECT_EQ(encore_test::get(x), affine(in, 1.f, 10.f)) << "call " << call;
  }
}
