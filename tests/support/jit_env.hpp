#pragma once
// Shared helpers for the capture/replay tests (test_jit, test_execution_unit, test_footguns,
// test_alloc_free_replay): one small kernel library compiled once per device per process, the
// OpenCL skip, host-side float vectors, and JitError message checks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

namespace encore_test {

// The public names the capture/replay tests spell most (they use namespace encore_test).
using encore::Buffer;
using encore::JitError;
using encore::JitOptions;
using encore::TinyJit;
using encore::Variable;

// Every kernel the capture/replay tests launch. No test depends on this exact text.
inline constexpr const char* kJitSrc = R"(
__kernel void axpb(__global const float* x, __global float* y, float a, float b) { size_t i = get_global_id(0); y[i] = a * x[i] + b; }
__kernel void add(__global const float* a, __global const float* b, __global float* c) { size_t i = get_global_id(0); c[i] = a[i] + b[i]; }
__kernel void rev(__global const float* x, __global float* y, int n) { int i = (int)get_global_id(0); y[i] = x[n - 1 - i]; }
__kernel void addk(__global float* y, int k) { y[get_global_id(0)] += (float)k; }
__kernel void scalef(__global float* y, float s) { y[get_global_id(0)] *= s; }
__kernel void fillpos(__global float* y, int pos) { int i = (int)get_global_id(0); y[i] = (float)(pos * 1000 + i); }
__kernel void accum(__global float* s, __global const float* x) { size_t i = get_global_id(0); s[i] += x[i]; }
)";

// A device with kJitSrc compiled on it and its kernels.
struct Env {
  encore::Device dev;
  encore::Program prog;
  encore::Kernel axpb, add, rev, addk, scalef, fillpos, accum;
  explicit Env(encore::Device d)
      : dev(d), prog(d.compile(kJitSrc)), axpb(prog.kernel("axpb")), add(prog.kernel("add")), rev(prog.kernel("rev")),
        addk(prog.kernel("addk")), scalef(prog.kernel("scalef")), fillpos(prog.kernel("fillpos")),
        accum(prog.kernel("accum")) {}
};


// One Env per device for the whole process (PoCL compiles each new source in ~80 ms).
inline Env& cl() {
  static Env e(encore::Device::open());
  return e;
}
inline Env& null_env() {
  static Env e(encore::Device::open("NULL"));
  return e;
}

// start, start + step, ... (n values).
inline std::vector<float> seq(size_t n, float start, float step = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

// A buffer on d holding v.
inline encore::Buffer make(const encore::Device& d, const std::vector<float>& v) {
  encore::Buffer b = d.alloc<float>(v.size());
  b.copyin(v);
  return b;
}

inline std::vector<float> get(const encore::Buffer& b) { return b.copyout<float>(); }

inline bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// Runs f, expects a JitError whose message contains every string in `parts`.
template <class F> void expect_jit_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected a JitError";
  } catch (const encore::JitError& e) {
    for (const std::string& p : parts) EXPECT_TRUE(contains(e.what(), p)) << "message lacks \"" << p << "\": " << e.what();
  }
}

// Frees a unit (free_intermediates) or destroys it on another thread, as an engine might while the
// unit's replays still wait behind one of its events; returned_soon() says whether that call returned
// within ~300 ms. Join after opening the event.
class FreeOnAnotherThread {
 public:
  FreeOnAnotherThread(std::unique_ptr<encore::ExecutionUnit>& unit, bool destroy)
      : t_([&unit, destroy, this] {
          if (destroy) unit.reset();
          else unit->free_intermediates();
          done_ = true;
        }) {}
  ~FreeOnAnotherThread() { join(); }
  bool returned_soon() const {
    for (int i = 0; i < 30 && !done_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done_;
  }
  void join() {
    if (t_.joinable()) t_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread t_;
};

// A test that runs on the NULL device and on OpenCL (when present): for behaviour that needs no
// computed results (validation, errors, structure). Results are compared only where they are
// computed (expect_same).
class OnDevices : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "CL" && !have_cl()) GTEST_SKIP() << "no OpenCL device";
  }
  Env& env() const { return GetParam() == "NULL" ? null_env() : cl(); }
};

// Equal contents, checked where the device computes (NULL runs no kernels). Both sides are
// evaluated on every device, so the calls that produce them run everywhere.
inline void expect_same(const Env& e, const encore::Buffer& got, const encore::Buffer& want) {
  if (!e.dev.is_null()) {
    EXPECT_EQ(get(got), get(want));
  }
}

}  // namespace encore_test

#define ON_NULL_AND_CL(Suite) INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::Values("NULL", "CL"), [](const auto& i) { return i.param; })

// Skips the test when there is no OpenCL device.
#define NEED_CL() \
  if (!::encore_test::have_cl()) { GTEST_SKIP() << "no OpenCL device"; }
