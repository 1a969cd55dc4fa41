// Issue 28 item 4: the per-call form of a by-value struct or vector. Its bytes come from a host
// input (encore::bytes_from of a span argument, Capture::add_host_input), recorded as (slot,
// offset, size): every replay passes that call's bytes, so a struct that changes every call
// replays equal to eager; the capture check compares the place, not the value; a frozen copy is
// still refused, and the message names the per-call form. Public headers only.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "by_value_twins.hpp"
#include "jit_env.hpp"
#include "test_util.hpp"

using namespace encore;
using encore_test::argument_error;
using encore_test::expect_has;
using encore_test::expect_jit_error;

namespace {

const char* kSrc = R"CL(
typedef struct { float alpha; int n; } par_str;
struct shift { float4 add; int k; };
__kernel void pc_fill(__global float* y, par_str p) { int i = (int)get_global_id(0); y[i] = p.alpha * (float)i + (float)p.n; }
__kernel void pc_shift(__global float* y, struct shift s, float4 w) {
  int i = (int)get_global_id(0);
  y[i] = y[i] * w.x + s.add.x * (float)s.k + s.add.w + w.w;
}
)CL";

using encore_test::ParStr;
using encore_test::Shift;

// A call's values, different every call.
ParStr par(int call) { return {0.5f + 0.25f * static_cast<float>(call), 3 * call - 7}; }
Shift shift(int call) { return {{1.f + static_cast<float>(call), 0, 0, -0.5f * static_cast<float>(call)}, call % 5 + 1}; }

JitOptions opts() {
  JitOptions o;
  o.verify = 0;  // the comparison with eager is the test's own
  return o;
}


class PerCallBytes : public encore_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    prog = dev.compile(kSrc);
    fill = prog.kernel("pc_fill");
    shifter = prog.kernel("pc_shift");
  }
  Program prog;
  Kernel fill, shifter;
};

// The step reads nothing but its host input: without the per-call form its one launch would be
// one-time (pruned) or frozen. Every call's struct reaches the kernel, over many calls.
TEST_P(PerCallBytes, StructFromAHostInputReplaysEachCallsValue) {
  auto step = [&](std::span<const ParStr> p) {
    Buffer y = dev.alloc<float>(64);
    dev.launch(fill, {64}, {}, y, bytes_from(p));
    return y;
  };
  TinyJit jit(step, opts());
  ParStr p{};  // one struct, rewritten in place before every call
  for (int call = 0; call < 40; ++call) {
    p = par(call);
    std::vector<float> got = jit(std::span<const ParStr>(&p, 1)).copyout<float>();
    std::vector<float> want = step(std::span<const ParStr>(&p, 1)).copyout<float>();
    if (is_cl()) {
      EXPECT_EQ(got, want) << "call " << call;
      EXPECT_EQ(got[2], p.alpha * 2 + static_cast<float>(p.n)) << "call " << call;
    }
  }
  const ExecutionUnit& u = jit.unit();
  ASSERT_TRUE(u);
  EXPECT_EQ(u.stats().items_pruned, 0u) << "the launch with per-call bytes was pruned as one-time";
  EXPECT_EQ(u.num_host_inputs(), 1u);
  expect_has(u.items()[0].describe(), {"8 bytes by value from host input 0 at byte 0"});
}

// Two by-value arguments of one launch from one host input at offsets (a struct and a float4),
// a plain bytes(span[i]) found by its address, a new vector every call, and a buffer input.
TEST_P(PerCallBytes, OffsetsIntoOneHostInputAndPlainBytesOfAnElement) {
  struct Frame {
    Shift s;
    std::array<float, 4> w;
  };
  auto step = [&](const Buffer& y, std::span<const Frame> f) {
    dev.launch(shifter, {y.count()}, {}, y, bytes(f[0].s), bytes_from(f, offsetof(Frame, w), sizeof(Frame::w)));
  };
  TinyJit jit(step, opts());
  Buffer a = dev.alloc<float>(32), b = dev.alloc<float>(32);
  std::vector<float> init(32);
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>(i) * 0.5f;
  a.copyin(init);
  b.copyin(init);
  for (int call = 0; call < 25; ++call) {
    std::vector<Frame> f{Frame{shift(call), {1.f + 0.125f * static_cast<float>(call % 3), 0, 0, static_cast<float>(call)}}};
    jit(a, std::span<const Frame>(f));
    step(b, std::span<const Frame>(f));
    if (is_cl()) {
      EXPECT_EQ(a.copyout<float>(), b.copyout<float>()) << "call " << call;
    }
  }
  expect_has(jit.unit().items()[0].describe(), {"32 bytes by value from host input 0 at byte 0", "16 bytes by value from host input 0 at byte 32"});
}

// The size is checked against the parameter's, and a range outside the span is refused.
TEST_P(PerCallBytes, WrongSizeOrRangeIsRefused) {
  std::array<float, 3> three{1, 2, 3};
  Buffer y = dev.alloc<float>(8);
  const std::span<const float> s(three);
  expect_has(argument_error([&] { dev.launch(fill, {8}, {}, y, bytes_from(s)); }), {"argument 1", "par_str", "expected 8 bytes", "got 12 bytes"});
  expect_has(argument_error([&] { (void)bytes_from(s, 8, 8); }), {"encore::bytes_from", "8 bytes at byte offset 8", "12 bytes"});
  expect_has(argument_error([&] { (void)bytes_from(s, 16); }), {"byte offset 16", "12 bytes"});
  // in a capture too, before anything is recorded: the jit stays usable
  TinyJit jit([&](std::span<const float> h) { dev.launch(fill, {8}, {}, y, bytes_from(h)); }, opts());
  expect_has(argument_error([&] { jit(s); }), {"expected 8 bytes", "got 12 bytes"});
  std::array<float, 2> two{1, 2};
  for (int call = 0; call < 3; ++call) EXPECT_NO_THROW(jit(std::span<const float>(two)));
}

// The old frozen path is still refused: a copy of the host input's struct changes between calls 0
// and 1, and the message points to bytes_from. bytes_from of such a copy is refused when recorded.
TEST_P(PerCallBytes, FrozenCopyIsStillRefusedAndNamesTheForm) {
  Buffer y = dev.alloc<float>(16);
  {
    TinyJit jit([&](std::span<const ParStr> p) {
      ParStr copy = p[0];
      dev.launch(fill, {16}, {}, y, bytes(copy));
    }, opts());
    ParStr p = par(0);
    jit(std::span<const ParStr>(&p, 1));
    p = par(1);
    expect_jit_error([&] { jit(std::span<const ParStr>(&p, 1)); }, {"argument 1", "8 bytes 0x", "encore::bytes_from(span)"});
  }
  {
    TinyJit jit([&](std::span<const ParStr> p) {
      ParStr copy = p[0];
      dev.launch(fill, {16}, {}, y, bytes_from(std::span<const ParStr>(&copy, 1)));
    }, opts());
    ParStr p = par(0);
    expect_jit_error([&] { jit(std::span<const ParStr>(&p, 1)); }, {"encore::bytes_from", "inside no host input", "not a copy"});
  }
  {  // checked off: the copy is frozen, as documented (verify mode is what would find it)
    JitOptions o = opts();
    o.capture.check_closure = false;
    TinyJit jit([&](std::span<const ParStr> p) {
      ParStr copy = p[0];
      dev.launch(fill, {16}, {}, y, bytes(copy));
    }, o);
    ParStr p = par(0);
    for (int call = 0; call < 3; ++call) jit(std::span<const ParStr>(&p, 1));
    expect_has(jit.unit().items()[0].describe(), {"8 bytes by value)"});
  }
}

// Call 0 passes a constant, call 1 the host input's bytes: the sources differ, named at capture.
TEST_P(PerCallBytes, SourceSwitchIsCaughtAtCapture) {
  Buffer y = dev.alloc<float>(16);
  int call = 0;
  TinyJit jit([&](std::span<const ParStr> p) {
    const ParStr fixed{1, 1};
    dev.launch(fill, {16}, {}, y, call++ == 0 ? bytes(fixed) : bytes_from(p));
  }, opts());
  ParStr p{1, 1};
  jit(std::span<const ParStr>(&p, 1));
  expect_jit_error([&] { jit(std::span<const ParStr>(&p, 1)); }, {"argument 1", "(a constant)", "8 bytes from host input 0 at byte offset 0"});
}

// The explicit path: Capture::add_host_input, bytes_from, ExecutionUnit::bind_host_input; a frame
// captured against the previous one passes the check (the place is the same).
TEST_P(PerCallBytes, ExplicitCaptureBindsEachRunsBytes) {
  Buffer y = dev.alloc<float>(32), want = dev.alloc<float>(32);
  ParStr params = par(0);
  auto frame = [&](const Buffer& out, std::span<const ParStr> p) { dev.launch(fill, {32}, {}, out, bytes_from(p)); };
  Capture c0;
  c0.add_host_input(std::span<const ParStr>(&params, 1));
  frame(y, std::span<const ParStr>(&params, 1));
  ExecutionUnit u0 = c0.end();
  Capture c1;
  c1.check_against(u0);
  c1.add_host_input(std::span<const ParStr>(&params, 1));
  frame(y, std::span<const ParStr>(&params, 1));
  ExecutionUnit unit = c1.end();
  unit.bind_host_input(0, std::span<const ParStr>(&params, 1));
  for (int run = 0; run < 30; ++run) {
    params = par(run + 10);  // in place: the bound memory is read at each run
    unit();
    frame(want, std::span<const ParStr>(&params, 1));
    if (is_cl()) {
      EXPECT_EQ(y.copyout<float>(), want.copyout<float>()) << "run " << run;
    }
  }
  // a frame whose struct is a constant now is caught against the previous recording
  Capture c2;
  c2.check_against(unit);
  c2.add_host_input(std::span<const ParStr>(&params, 1));
  const ParStr fixed{2, 2};
  dev.launch(fill, {32}, {}, y, bytes(fixed));
  expect_jit_error([&] { (void)c2.end(); }, {"Capture check", "(a constant)", "Capture::add_host_input", "bind_host_input"});
}

INSTANTIATE_TEST_SUITE_P(Devices, PerCallBytes, ::testing::ValuesIn(encore_test::all_params()), encore_test::param_name);

}  // namespace
