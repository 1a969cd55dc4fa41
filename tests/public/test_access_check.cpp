// Issue 31: access inferred from the source lets replay prune what `const` would have (item 1), and
// access claims that let an item be pruned or reordered are checked on the captured call's data
// (item 2, CaptureOptions::check_access): a wrong encore::out (a buffer the kernel accumulates into)
// or a wrong encore::in (a buffer it writes) is a JitError at capture instead of a silently wrong
// replay. The checks need kernels that really run: OpenCL only (NULL runs nothing).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

const char* const kSrc = R"CL(
__kernel void ac_expand(__global float* table, __global float* lut) { int i = get_global_id(0); lut[i] = table[i] * 3.0f; }
__kernel void ac_apply(__global float* x, __global float* lut, __global float* y) { int i = get_global_id(0); y[i] = x[i] + lut[i]; }
__kernel void ac_accumulate(__global float* x, __global float* acc) { int i = get_global_id(0); acc[i] += x[i]; }
__kernel void ac_set(__global float* x, __global float* y) { int i = get_global_id(0); y[i] = x[i] * 2.0f; }
__kernel void ac_even(__global float* y) { int i = get_global_id(0); if (i % 2 == 0) y[i] = 7.0f; }
)CL";

constexpr size_t kN = 64;

std::vector<float> get(const Buffer& b) { return b.copyout<float>(); }
Buffer make(const Device& d, float start) {
  Buffer b = d.alloc<float>(kN);
  std::vector<float> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = start + static_cast<float>(i);
  b.copyin(std::span<const float>(v));
  return b;
}

struct Env {
  Device dev;
  Program prog;
  explicit Env(Device d) : dev(std::move(d)), prog(dev.compile(kSrc)) {}
  Kernel k(const char* n) const { return prog.kernel(n); }
};

// lut = table * 3 from closure state, then y = x + lut: ac_expand reads no input, and with table
// inferred `in` it is one-time; said to be inout it reads its own output and stays.
auto lut_step(Env& e, const Buffer& table, bool annotate_inout) {
  return [&e, table, annotate_inout](const Buffer& x) {
    Buffer lut = e.dev.alloc<float>(kN), y = e.dev.alloc<float>(kN);
    if (annotate_inout) e.dev.launch(e.k("ac_expand"), {kN}, {}, encore::inout(table), lut);
    else e.dev.launch(e.k("ac_expand"), {kN}, {}, table, lut);
    e.dev.launch(e.k("ac_apply"), {kN}, {}, x, lut, y);
    return y;
  };
}

class AccessReplay : public encore_test::DeviceTest {};

// On every device: the plan prunes the launch thanks to inference, and not when told inout.
TEST_P(AccessReplay, InferredInMakesAnItemOneTime) {
  Env e(dev);
  Buffer table = make(dev, 1.0f), x = make(dev, 0.5f);
  for (bool annotate : {false, true}) {
    TinyJit jit(lut_step(e, table, annotate), JitOptions{});
    for (int call = 0; call < 3; ++call) jit(x);
    ASSERT_EQ(jit.unit().stats().items, 2u);
    EXPECT_EQ(jit.unit().one_time()[0], !annotate) << (annotate ? "encore::inout(table)" : "inferred");
    EXPECT_EQ(jit.unit().stats().items_pruned, annotate ? 0u : 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, AccessReplay, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

// Replay of the pruned step equals eager, also when the closure table changes between calls (its
// version re-runs the pruned launch).
TEST(AccessCheck, PrunedByInferenceReplayEqualsEager) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  Buffer table = make(e.dev, 1.0f);
  auto f = lut_step(e, table, false);
  TinyJit jit(f, JitOptions{});
  for (int call = 0; call < 6; ++call) {
    if (call == 4) table.copyin(std::span<const float>(std::vector<float>(kN, -2.0f)));
    Buffer x = make(e.dev, 10.0f * static_cast<float>(call));
    EXPECT_EQ(get(jit(x)), get(f(x))) << "call " << call;
  }
  EXPECT_EQ(jit.unit().stats().items_pruned, 1u);
}

// issue 28 item 2: encore::out on a buffer the kernel accumulates into used to prune the launch
// silently; now call 1 refuses it, naming the kernel and the argument.
TEST(AccessCheck, OutOnAnAccumulatedBufferIsAJitError) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  Buffer w = make(e.dev, 1.0f), acc = make(e.dev, 0.0f);
  auto step = [&](const Buffer& x) {
    e.dev.launch(e.k("ac_accumulate"), {kN}, {}, w, encore::out(acc));
    Buffer y = e.dev.alloc<float>(kN);
    e.dev.launch(e.k("ac_set"), {kN}, {}, x, y);
    return y;
  };
  TinyJit jit(step, JitOptions{});
  Buffer x = make(e.dev, 0.0f);
  jit(x);
  try {
    jit(x);
    FAIL() << "call 1 accepted encore::out on a += buffer";
  } catch (const JitError& err) {
    encore_test::expect_has(err.what(), {"ac_accumulate", "argument 1", "float* acc", "encore::out", "encore::inout"});
  }
  // the off switch trusts the claim
  JitOptions off;
  off.capture.check_access = false;
  TinyJit trusting(step, off);
  for (int call = 0; call < 3; ++call) EXPECT_NO_THROW(trusting(x));
}

TEST(AccessCheck, InOnAWrittenBufferIsAJitError) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  auto step = [&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(kN);
    e.dev.launch(e.k("ac_set"), {kN}, {}, x, y);
    e.dev.launch(e.k("ac_accumulate"), {kN}, {}, x, encore::in(y));
    return y;
  };
  TinyJit jit(step, JitOptions{});
  Buffer x = make(e.dev, 3.0f);
  jit(x);
  try {
    jit(x);
    FAIL() << "call 1 accepted encore::in on a written buffer";
  } catch (const JitError& err) {
    encore_test::expect_has(err.what(), {"ac_accumulate", "argument 1", "float* acc", "encore::in", "changed"});
  }
  // the jit is left clean: the next call captures again and is refused again, never replaying
  EXPECT_THROW(jit(x), JitError);
  EXPECT_FALSE(jit.next_call_replays(x));
}

// The explicit capture path checks too: a launch whose out claim is tried is refused itself; an in
// claim is compared when the capture ends (its reads are not waited for launch by launch), and
// end() refuses it naming the launch, however many launches came after it.
TEST(AccessCheck, ExplicitCaptureChecks) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  Buffer w = make(e.dev, 1.0f), acc = make(e.dev, 0.0f);
  {
    Capture cap;
    EXPECT_THROW(e.dev.launch(e.k("ac_accumulate"), {kN}, {}, w, encore::out(acc)), JitError);
  }
  Buffer x = make(e.dev, 2.0f), y = make(e.dev, 0.0f), sum = make(e.dev, 0.0f);
  Capture cap;
  cap.add_input(x);
  e.dev.launch(e.k("ac_set"), {kN}, {}, encore::in(x), y);
  e.dev.launch(e.k("ac_accumulate"), {kN}, {}, x, encore::in(sum));  // the wrong claim: sum is written
  for (int i = 0; i < 3; ++i) e.dev.launch(e.k("ac_set"), {kN}, {}, x, y);
  try {
    (void)cap.end();
    FAIL() << "end() accepted encore::in on a written buffer";
  } catch (const JitError& err) {
    encore_test::expect_has(err.what(), {"ac_accumulate", "argument 1", "float* acc", "encore::in", "changed", "of its 256 bytes"});
  }
  std::vector<float> got = get(sum);
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], 2.0f * static_cast<float>(i) + 2.0f) << "the launch ran once, element " << i;
}

// The first wrong claim in launch order is the one refused: a launch whose out claim is tried waits
// for its reads, and compares the in claims held from earlier launches before its own.
TEST(AccessCheck, FirstWrongClaimInLaunchOrderIsRefused) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  Buffer x = make(e.dev, 2.0f), sum = make(e.dev, 0.0f), acc = make(e.dev, 0.0f);
  Capture cap;
  cap.add_input(x);
  e.dev.launch(e.k("ac_accumulate"), {kN}, {}, x, encore::in(sum));  // wrong, held until a wait
  try {
    e.dev.launch(e.k("ac_accumulate"), {kN}, {}, x, encore::out(acc));  // wrong too, tried at once
    FAIL() << "the launch with a tried out claim did not throw";
  } catch (const JitError& err) {
    encore_test::expect_has(err.what(), {"ac_accumulate", "argument 1", "has access in: given as encore::in", "changed"});
    EXPECT_EQ(std::string(err.what()).find("given as encore::out"), std::string::npos) << err.what();
  }
}

// Correct claims pass: out on a pure write, out on a buffer written only in part (the bytes it
// leaves keep their values, in the re-run too), in on a read; replay equals eager.
TEST(AccessCheck, CorrectClaimsPass) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  Env e(Device::open());
  Buffer half = make(e.dev, 0.0f);
  auto step = [&](const Buffer& x) {
    Buffer y = e.dev.alloc<float>(kN);
    e.dev.launch(e.k("ac_set"), {kN}, {}, encore::in(x), encore::out(y));
    e.dev.launch(e.k("ac_even"), {kN}, {}, encore::out(half));
    Buffer z = e.dev.alloc<float>(kN);
    e.dev.launch(e.k("ac_apply"), {kN}, {}, y, half, encore::out(z));
    return z;
  };
  TinyJit jit(step, JitOptions{});
  for (int call = 0; call < 5; ++call) {
    Buffer x = make(e.dev, static_cast<float>(call));
    std::vector<float> got = get(jit(x));
    EXPECT_EQ(got, get(step(x))) << "call " << call;
  }
  EXPECT_EQ(jit.unit().stats().items_pruned, 1u) << "ac_even writes constants into closure state";
}

}  // namespace
