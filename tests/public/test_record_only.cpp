// CaptureOptions::record_only: a Capture that records its step without running it (nothing reaches
// the device until the unit's first run), and whose first run also runs the items a replay prunes,
// so a step described elsewhere (workload::load_unit) starts with a replay. Refused for TinyJit and
// for steps with host items, branches or loops.
#include <gtest/gtest.h>

#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

namespace {

constexpr size_t N = 256;

// table: one-time (no input reaches it); blend: reads the input and the table.
const char* kSrc = R"CL(
__kernel void table(__global float* t) { size_t i = get_global_id(0); t[i] = (float)(i % 5) + 0.5f; }
__kernel void blend(__global const float* x, __global const float* t, __global float* out) {
  size_t i = get_global_id(0);
  out[i] = x[i] * t[i] + 1.0f;
}
)CL";

std::vector<float> expect_for(const std::vector<float>& x) {
  std::vector<float> e(N);
  for (size_t i = 0; i < N; ++i) e[i] = x[i] * (static_cast<float>(i % 5) + 0.5f) + 1.0f;
  return e;
}

}  // namespace

TEST(RecordOnly, NothingRunsUntilTheFirstRunWhichRunsEveryItem) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  encore::Device dev = encore::Device::open("CL:0");
  encore::Program p = dev.compile(kSrc);
  std::vector<float> xs(N), ys(N);
  for (size_t i = 0; i < N; ++i) xs[i] = 0.25f * static_cast<float>(i), ys[i] = 3.0f - static_cast<float>(i % 9);
  encore::Buffer x = dev.alloc<float>(N), y = dev.alloc<float>(N), out = dev.alloc<float>(N);
  x.copyin(xs);
  y.copyin(ys);
  out.copyin(std::vector<float>(N, -7.0f));
  encore::CaptureOptions co;
  co.record_only = true;
  encore::Capture cap({}, co);
  cap.add_input(x);
  {
    encore::Buffer t = dev.alloc<float>(N);
    dev.launch(p.kernel("table"), {N}, {}, t);
    dev.launch(p.kernel("blend"), {N}, {}, x, t, out);
  }
  encore::ExecutionUnit u = cap.end();
  EXPECT_EQ(u.stats().items_pruned, 1u);
  std::vector<float> got(N);
  got = out.copyout<float>();
  EXPECT_EQ(got, std::vector<float>(N, -7.0f)) << "the capture ran work";
  u();
  got = out.copyout<float>();
  EXPECT_EQ(got, expect_for(xs)) << "the first run must run the pruned table item too";
  u.bind_input(0, y)();
  got = out.copyout<float>();
  EXPECT_EQ(got, expect_for(ys));
  u.free_intermediates();  // a rebind keeps the table: its versions were taken at the first bind
  u.bind_input(0, x)();
  got = out.copyout<float>();
  EXPECT_EQ(got, expect_for(xs));
}

TEST(RecordOnly, RefusedForTinyJitAndForStepsThatDecide) {
  encore::JitOptions o;
  o.capture.record_only = true;
  EXPECT_THROW(o.validate(), encore::ArgumentError);
  encore::Device dev = encore::Device::open("NULL");
  encore::Program p = dev.compile(kSrc);
  encore::Buffer t = dev.alloc<float>(N);
  encore::Variable flag{"flag", 0, 1};
  (void)flag.bind(1);
  encore::CaptureOptions co;
  co.record_only = true;
  encore::Capture cap({}, co);
  dev.when(flag, [&] { dev.launch(p.kernel("table"), {N}, {}, t); });
  EXPECT_THROW(cap.end(), encore::JitError);
}
