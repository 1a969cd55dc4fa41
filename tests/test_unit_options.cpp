// One UnitOptions and one CaptureOptions, used as they are by Capture and inside JitOptions: each
// field reaches the unit or the capture it governs.
#include <gtest/gtest.h>

#include "encore/encore.hpp"

namespace {

constexpr const char* kSrc = R"(
__kernel void set1(__global float* x) { x[get_global_id(0)] = 1.0f; }
__kernel void add1(__global float* x, __global const float* c) { size_t i = get_global_id(0); x[i] += c[i]; }
)";

struct Step {
  encore::Device dev = encore::Device::open("NULL");
  encore::Program prog = dev.compile(kSrc);
  encore::Buffer c = dev.alloc<float>(64);  // closure state: written by a one-time item
  void operator()(const encore::Buffer& x) const {
    dev.launch(prog.kernel("set1"), {64}, {}, encore::out(c));  // a pure write: one-time
    dev.launch(prog.kernel("add1"), {64}, {}, x, c);
  }
};

}  // namespace

TEST(UnitOptions, JitPassesItsUnitOptionsToTheUnit) {
  Step s;
  encore::Buffer x = s.dev.alloc<float>(64);
  encore::TinyJit pruned(s, encore::JitOptions{});
  encore::TinyJit kept(s, encore::JitOptions{.unit = {.prune = false}});
  for (int i = 0; i < 3; ++i) {
    pruned(x);
    kept(x);
  }
  EXPECT_EQ(pruned.unit().stats().items_pruned, 1u);
  EXPECT_EQ(kept.unit().stats().items_pruned, 0u);
  EXPECT_EQ(kept.unit().stats().items_replayed, 2u);
  EXPECT_FALSE(kept.options().unit.prune);
}

TEST(UnitOptions, CaptureTakesUnitAndCaptureOptions) {
  Step s;
  encore::Buffer x = s.dev.alloc<float>(64);
  {
    encore::Capture cap(encore::UnitOptions{.prune = false});
    cap.add_input(x);
    s(x);
    EXPECT_THROW(x.copyout<float>(), encore::JitError) << "copyout during a capture is refused by default";
    EXPECT_EQ(cap.end().stats().items_pruned, 0u);
  }
  encore::Capture cap({}, encore::CaptureOptions{.allow_copyout = true});
  cap.add_input(x);
  s(x);
  EXPECT_EQ(x.copyout<float>().size(), 64u);  // allowed: its value is frozen into the capture
  EXPECT_EQ(cap.end().stats().items_pruned, 1u);
}

TEST(UnitOptions, JitCaptureOptionsReachTheCapture) {
  Step s;
  encore::Buffer x = s.dev.alloc<float>(64);
  auto reads = [&](const encore::Buffer& b) {
    s(b);
    (void)b.copyout<float>();
  };
  encore::TinyJit refused(reads, encore::JitOptions{});
  refused(x);  // call 0: a copyout is fine, nothing of it is replayed
  EXPECT_THROW(refused(x), encore::JitError);
  encore::TinyJit allowed(reads, encore::JitOptions{.capture = {.allow_copyout = true}});
  for (int i = 0; i < 3; ++i) allowed(x);
  EXPECT_TRUE(allowed.unit());
  // check_closure off: a kernel scalar that differs between calls 0 and 1 is not compared
  int call = 0;
  auto changing = [&](const encore::Buffer& b) { s.dev.launch(s.prog.kernel("set1"), {call++ == 0 ? 64u : 32u}, {}, b); };
  encore::TinyJit checked(changing, encore::JitOptions{});
  checked(x);
  EXPECT_THROW(checked(x), encore::JitError);
  call = 0;
  encore::TinyJit unchecked(changing, encore::JitOptions{.capture = {.check_closure = false}});
  for (int i = 0; i < 3; ++i) unchecked(x);
  EXPECT_EQ(unchecked.calls(), 3u);
}
