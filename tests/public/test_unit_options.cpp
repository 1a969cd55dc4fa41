// One UnitOptions and one CaptureOptions, used as they are by Capture and inside JitOptions: each
// field reaches the unit or the capture it governs.
#include <gtest/gtest.h>

#include "encore/encore.hpp"
#include "test_util.hpp"

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

// The options' bounds, checked where they come in (issue 27 item 10): before, max_units =
// UINT32_MAX wrapped max_units + 1 to 0 in TinyJit (an empty ring, then a modulo 0), and only the C
// shim checked max_units and verify; max_in_flight was refused only when a capture ended.
TEST(OptionsValidate, JitOptionsBounds) {
  EXPECT_NO_THROW(encore::JitOptions{}.validate());
  EXPECT_NO_THROW(encore::JitOptions::from_env().validate());
  EXPECT_NO_THROW((encore::JitOptions{.max_units = 1}.validate()));
  EXPECT_NO_THROW((encore::JitOptions{.max_units = 1024}.validate()));
  EXPECT_EQ(encore_test::argument_error([] { encore::JitOptions{.max_units = UINT32_MAX}.validate(); }),
            "JitOptions::max_units: expected 1 to 1024 units (one per input signature), found 4294967295");
  EXPECT_EQ(encore_test::argument_error([] { encore::JitOptions{.max_units = 0}.validate(); }),
            "JitOptions::max_units: expected 1 to 1024 units (one per input signature), found 0");
  EXPECT_EQ(encore_test::argument_error([] { encore::JitOptions{.max_units = 1025}.validate(); }),
            "JitOptions::max_units: expected 1 to 1024 units (one per input signature), found 1025");
  EXPECT_EQ(encore_test::argument_error([] { encore::JitOptions{.verify = -1}.validate(); }),
            "JitOptions::verify: expected a count of replays to check, 0 or more, found -1");
  EXPECT_EQ(encore_test::argument_error([] { encore::JitOptions{.unit = {.max_in_flight = 1025}}.validate(); }),
            "JitOptions::unit.max_in_flight: at most 1024 replays in flight (0: unbounded), found 1025");
}

TEST(OptionsValidate, UnitAndCaptureOptionsBounds) {
  EXPECT_NO_THROW(encore::UnitOptions{}.validate());
  EXPECT_NO_THROW((encore::UnitOptions{.max_in_flight = 0}.validate()));
  EXPECT_NO_THROW((encore::UnitOptions{.max_in_flight = 1024, .min_items_in_flight = UINT32_MAX}.validate()));
  EXPECT_EQ(encore_test::argument_error([] { encore::UnitOptions{.max_in_flight = UINT32_MAX}.validate(); }),
            "UnitOptions::max_in_flight: at most 1024 replays in flight (0: unbounded), found 4294967295");
  EXPECT_NO_THROW((encore::CaptureOptions{.allow_copyout = true, .check_closure = false}.validate()));
}

TEST(OptionsValidate, TinyJitAndCaptureRefuseBadOptionsWhenMade) {
  Step s;
  encore::Buffer x = s.dev.alloc<float>(64);
  // refused by the constructor, before any call could index an empty ring
  EXPECT_NE(encore_test::argument_error([&] { encore::TinyJit j(s, encore::JitOptions{.max_units = UINT32_MAX}); }).find("found 4294967295"), std::string::npos);
  EXPECT_NE(encore_test::argument_error([&] { encore::TinyJit j(s, encore::JitOptions{.verify = -3}); }).find("JitOptions::verify"), std::string::npos);
  EXPECT_NE(encore_test::argument_error([&] { encore::TinyJit j(s, encore::JitOptions{.unit = {.max_in_flight = 5000}}); }).find("JitOptions::unit.max_in_flight"),
            std::string::npos);
  // a Capture refuses them when it begins, not when it ends (no recording is left open)
  EXPECT_NE(encore_test::argument_error([] { encore::Capture cap(encore::UnitOptions{.max_in_flight = 5000}); }).find("UnitOptions::max_in_flight"), std::string::npos);
  encore::Capture cap;  // and a capture may begin on this thread afterwards
  cap.add_input(x);
  s(x);
  EXPECT_EQ(cap.end().stats().items, 2u);
  // the bounds' ends work: 1024 units, 1024 replays in flight
  encore::TinyJit wide(s, encore::JitOptions{.unit = {.max_in_flight = 1024}, .max_units = 1024});
  for (int i = 0; i < 4; ++i) wide(x);
  EXPECT_EQ(wide.units().size(), 1u);
  EXPECT_EQ(wide.calls(), 4u);
}
