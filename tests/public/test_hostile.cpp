// Careless and hostile callers (issue 17): C API handles used from two threads at once
// (CapiThreads.*, also run under TSan), a unit called back from inside its own replay, and
// values that overflow or do not fit (launch sizes, f32 variables, max_in_flight, device numbers).
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.h"
#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"

using namespace encore_test;

namespace {

// ~milliseconds of work per launch on PoCL, so a wait is in progress when another thread acts
constexpr const char* kSpinSrc = R"(
__kernel void spin(__global int* x, int n) { int a = x[0]; for (int i = 0; i < n; ++i) a = a * 1103515245 + 12345; x[get_global_id(0)] = a; }
)";

#define C_OK(call) ASSERT_EQ((call), ENCORE_OK) << #call << ": " << encore_last_error()

}  // namespace

// encore_event_wait held only a temporary reference to the event while waiting on its parts: a
// destroy on another thread freed them under the wait (the next part read freed memory). The unit
// spans two sub-devices, so its completion has two parts to wait for one after the other.
TEST(CapiThreads, EventWaitWhileAnotherThreadDestroysIt) {
  NEED_CL();
  encore_device dev = nullptr, sub[2] = {nullptr, nullptr};
  C_OK(encore_device_open("CL", &dev));
  if (encore_device_split(dev, 2, sub) != ENCORE_OK) {
    encore_device_destroy(dev);
    GTEST_SKIP() << "cannot split the device in two: " << encore_last_error();
  }
  encore_program prog[2] = {};
  encore_kernel spin[2] = {};
  encore_buffer x[2] = {};
  encore_capture cap = nullptr;
  encore_unit unit = nullptr;
  int zero = 0;
  size_t one = 1;
  C_OK(encore_capture_begin(nullptr, &cap));
  for (int d = 0; d < 2; ++d) {
    C_OK(encore_program_compile(sub[d], kSpinSrc, nullptr, &prog[d]));
    C_OK(encore_kernel_create(prog[d], "spin", &spin[d]));
    C_OK(encore_buffer_alloc(sub[d], ENCORE_I32, 1, &x[d]));
    C_OK(encore_buffer_copyin(x[d], &zero, sizeof zero));
    encore_arg args[2] = {encore_arg_buffer(x[d]), encore_arg_i32(300000)};
    C_OK(encore_launch(sub[d], spin[d], &one, nullptr, 1, args, 2));
  }
  C_OK(encore_capture_end(cap, &unit));
  for (int round = 0; round < 8; ++round) {
    encore_event ev = nullptr;
    C_OK(encore_unit_run(unit, nullptr, 0, &ev));
    std::atomic<bool> started{false};
    encore_status waited = ENCORE_OK;
    std::thread waiter([&] {
      started = true;
      waited = encore_event_wait(ev);
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 4)));
    EXPECT_EQ(encore_event_destroy(ev), ENCORE_OK);
    waiter.join();
    EXPECT_TRUE(waited == ENCORE_OK || waited == ENCORE_ERROR_INVALID_HANDLE) << encore_status_name(waited);
  }
  encore_unit_destroy(unit);
  for (int d = 0; d < 2; ++d) {
    C_OK(encore_device_synchronize(sub[d]));
    encore_buffer_destroy(x[d]);
    encore_kernel_destroy(spin[d]);
    encore_program_destroy(prog[d]);
    encore_device_destroy(sub[d]);
  }
  encore_device_destroy(dev);
}

// A failing call describes its buffer, name included, while another thread renames it.
TEST(CapiThreads, SetNameWhileAnotherThreadFailsOnTheBuffer) {
  encore_device dev = nullptr;
  encore_buffer b = nullptr;
  C_OK(encore_device_open("NULL", &dev));
  C_OK(encore_buffer_alloc(dev, ENCORE_F32, 16, &b));
  constexpr int kRounds = 4000;
  std::thread renamer([&] {
    for (int i = 0; i < kRounds; ++i) {
      // long names: copying one into a message takes long enough for a free to land in the middle
      std::string name = std::string(8192, 'n') + " a buffer name long enough, number " + std::to_string(i);
      EXPECT_EQ(encore_buffer_set_name(b, name.c_str()), ENCORE_OK);
    }
  });
  float host[16] = {};
  for (int i = 0; i < kRounds; ++i)
    ASSERT_EQ(encore_buffer_copyin(b, host, 3), ENCORE_ERROR_INVALID_ARGUMENT);  // wrong size: the message names b
  renamer.join();
  EXPECT_EQ(encore_buffer_copyin(b, host, 3), ENCORE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(encore_last_error()).find("number " + std::to_string(kRounds - 1)), std::string::npos) << encore_last_error();
  encore_buffer_destroy(b);
  encore_device_destroy(dev);
}

// Handles given out by one thread and destroyed by another while a third queries them: every
// answer is OK or INVALID_HANDLE, never another object's.
TEST(CapiThreads, QueriesRaceDestroys) {
  encore_device dev = nullptr;
  C_OK(encore_device_open("NULL", &dev));
  constexpr int kN = 2000;
  std::vector<std::atomic<encore_buffer>> slots(64);
  for (auto& s : slots) s = nullptr;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      for (auto& s : slots) {
        encore_buffer h = s.load();
        encore_buffer_info info;
        encore_status st = encore_buffer_get_info(h, &info);
        EXPECT_TRUE(st == ENCORE_OK || st == ENCORE_ERROR_INVALID_HANDLE);
        if (st == ENCORE_OK) {
          EXPECT_EQ(info.count, 8u);
        }
      }
    }
  });
  for (int i = 0; i < kN; ++i) {
    auto& s = slots[static_cast<size_t>(i) % slots.size()];
    encore_buffer old = s.exchange(nullptr);
    if (old) {
      EXPECT_EQ(encore_buffer_destroy(old), ENCORE_OK);
    }
    encore_buffer nb = nullptr;
    ASSERT_EQ(encore_buffer_alloc(dev, ENCORE_F32, 8, &nb), ENCORE_OK);
    s = nb;
  }
  done = true;
  reader.join();
  for (auto& s : slots)
    if (encore_buffer h = s.load()) encore_buffer_destroy(h);
  encore_device_destroy(dev);
}

// A native call that calls back into the unit replaying it: the replay still reads the binding,
// arena and values, so changing them is refused (C++ API; the C API refuses earlier, see
// tests/capi/test_hostile.c).
TEST(UnitReentry, CallsOnTheReplayingUnitAreRefused) {
  NEED_CL();
  Env& e = cl();
  encore::Variable k{"k", 0, 100};
  encore::Buffer x = make(e.dev, seq(64, 0.f)), y = e.dev.alloc<float>(64);
  encore::ExecutionUnit* self = nullptr;
  std::vector<std::string> refused;
  int calls = 0;
  auto try_call = [&](const char* what, auto&& f) {
    try {
      f();
      refused.push_back(std::string(what) + ": not refused");
    } catch (const encore::JitError& err) {
      if (!contains(err.what(), "from inside the same unit's replay")) refused.push_back(std::string(what) + ": " + err.what());
    }
  };
  encore::Capture cap;
  cap.add_input(x);
  e.dev.launch(e.axpb, {64}, {}, x, y, 2.f, 1.f);
  encore::opencl::enqueue_native(
      e.dev,
      [&](cl_command_queue, std::span<const cl_mem>) {
        ++calls;
        if (!self) return;
        try_call("free_intermediates", [&] { self->free_intermediates(); });
        try_call("run", [&] { (*self)(); });
        try_call("bind_var", [&] { self->bind_var(0, 3); });
        try_call("bind_input", [&] { self->bind_input(0, x); });
        (void)self->stats();  // queries are fine
      },
      {encore::inout(y)}, "reenter");
  e.dev.launch(e.addk, {64}, {}, y, k);
  encore::ExecutionUnit unit = cap.end();
  self = &unit;
  for (int i = 0; i < 3; ++i) unit();
  unit.run_and_wait();
  self = nullptr;
  EXPECT_EQ(calls, 5);
  for (const std::string& r : refused) ADD_FAILURE() << r;
  unit.free_intermediates();  // fine once the replay returned
  unit.bind_var(0, 2);
  unit();
  std::vector<float> want = seq(64, 1.f, 2.f);
  for (float& v : want) v += 2.f;
  EXPECT_EQ(get(y), want);
}

TEST(HostileValues, LaunchSizeOverflowIsAnArgumentError) {
  Env& e = null_env();
  encore::Variable n{"n", 0, INT64_MAX};
  const int64_t big = int64_t{1} << 62;
  encore::Size s = n * big + 16;  // 4 * 2^62 + 16 wraps to 16
  n.bind(4);
  EXPECT_THROW(s.eval(), encore::ArgumentError);
  EXPECT_THROW(s.eval(INT64_MAX), encore::ArgumentError);
  EXPECT_EQ(s.eval(0), 16);
  encore::Buffer y = e.dev.alloc<float>(64);
  EXPECT_THROW(e.dev.launch(e.addk, {s}, {}, y, 1), encore::ArgumentError);
  // captured at a safe value, rebound to one that overflows
  n.bind(1);
  encore::Capture cap;
  e.dev.launch(e.addk, {n * big + (4 - big)}, {}, y, 1);
  encore::ExecutionUnit unit = cap.end();
  size_t slot = unit.variable_slot(n);
  try {
    unit.bind_var(slot, 4);
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "overflows")) << err.what();
  }
  EXPECT_EQ(unit.variable_value(slot).i, 1);  // unchanged
  unit();
}

TEST(HostileValues, F32VariableRejectsValuesBeyondTheFloatRange) {
  encore::Variable f = encore::Variable::f32("f");
  EXPECT_EQ(f.fmax(), static_cast<double>(FLT_MAX));
  EXPECT_EQ(f.fmin(), -static_cast<double>(FLT_MAX));
  try {
    f.bind(1e300);
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "does not fit the variable's type f32")) << err.what();
  }
  EXPECT_NO_THROW(f.bind(3.0e38));
  EXPECT_NO_THROW(encore::Variable::f64("d").bind(1e300));  // f64 holds it
  EXPECT_THROW(encore::Variable::f32("g", 1e39, 1e40), encore::ArgumentError);
  // an ExecutionUnit's own bind checks the same bounds
  Env& e = null_env();
  encore::Buffer y = e.dev.alloc<float>(8);
  f.bind(1.f);
  encore::Capture cap;
  e.dev.launch(e.scalef, {8}, {}, y, f);
  encore::ExecutionUnit unit = cap.end();
  EXPECT_THROW(unit.bind_var_f(unit.variable_slot(f), 1e300), encore::JitError);
}

TEST(HostileValues, MaxInFlightIsBounded) {
  Env& e = null_env();
  encore::Buffer y = e.dev.alloc<float>(8);
  encore::UnitOptions o;
  o.max_in_flight = 1u << 26;
  try {  // refused when the capture begins (UnitOptions::validate), not when it ends
    encore::Capture cap(o);
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "max_in_flight: at most 1024")) << err.what();
  }
  o.max_in_flight = 1024;
  encore::Capture ok(o);
  e.dev.launch(e.addk, {8}, {}, y, 1);
  EXPECT_NO_THROW(ok.end()());
}

TEST(HostileValues, DeviceNumbersParseStrictly) {
  for (const char* name : {"CL:4294967296", "CL:99999999999999999999", "cl:2147483648"}) {
    try {
      encore::Device::open(name);
      ADD_FAILURE() << name << " opened a device";
    } catch (const encore::DeviceError& err) {
      EXPECT_TRUE(contains(err.what(), "out of range")) << err.what();
      EXPECT_TRUE(contains(err.what(), "available: NULL")) << err.what();
    }
  }
}
