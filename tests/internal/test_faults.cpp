// Fault injection (issue 8, tests; DESIGN rule 6): for every backend call N of a capture-then-replay
// scenario, a device whose call N fails gives an encore::Error (nothing else escapes, nothing
// crashes), leaks no device memory, and the same jit or unit then runs every later call correctly.
// The fault device computes its kernels on the host, so results are checked, not just structure.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "fault_device.hpp"
#include "test_util.hpp"

namespace {

using encore::Buffer;
using encore::Device;
using encore_test::FaultControl;
using encore_test::HostArgs;

constexpr size_t kN = 256;

// One step: a one-time table, a temporary scaled by a variable from the input, a copy, an upload
// of a bias, and an update of closure state that also writes a fresh output:
//   y = x * k + table + bias;  state += y
// f_scale reads x through a pointer without const: at capture the access check reads x before and
// after the launch (its inferred `in`), and those reads meet the faults too.
const char* kSrc = R"(
__kernel void f_fill(__global float* o) { o[get_global_id(0)] = (float)get_global_id(0); }
__kernel void f_scale(__global float* x, __global float* t, int k) { size_t i = get_global_id(0); t[i] = x[i] * k; }
__kernel void f_add(__global const float* u, __global const float* table, __global const float* bias, __global float* y, __global float* state) {
  size_t i = get_global_id(0); y[i] = u[i] + table[i] + bias[i]; state[i] += y[i]; }
)";

std::shared_ptr<FaultControl> make_control() {
  auto c = std::make_shared<FaultControl>();
  c->kernels["f_fill"] = [](const HostArgs& a, uint32_t, const size_t* g) {
    for (size_t i = 0; i < g[0]; ++i) a.buf<float>(0)[i] = float(i);
  };
  c->kernels["f_scale"] = [](const HostArgs& a, uint32_t, const size_t* g) {
    for (size_t i = 0; i < g[0]; ++i) a.buf<float>(1)[i] = a.buf<float>(0)[i] * float(a.scalar<int32_t>(2));
  };
  c->kernels["f_add"] = [](const HostArgs& a, uint32_t, const size_t* g) {
    for (size_t i = 0; i < g[0]; ++i) {
      const float y = a.buf<float>(0)[i] + a.buf<float>(1)[i] + a.buf<float>(2)[i];
      a.buf<float>(3)[i] = y;
      a.buf<float>(4)[i] += y;
    }
  };
  return c;
}

float x_at(int which, size_t i) { return float(which + 1) + 0.25f * float(i % 8); }
float bias_at(size_t i) { return 0.5f * float(i % 3); }
float state_at(int call, size_t i) { return float(call * 10) + float(i % 5); }

struct World;

// What a scenario saw.
struct Outcome {
  int errors = 0;                 // encore::Errors caught (the fault)
  std::vector<std::string> bad;   // anything wrong: another exception type, a wrong result, a second failure
  // Checks the results of a call (its reads may meet the fault too: then once more).
  void check(const World& w, const Buffer& y, int call, int which, int kv);
};

// Runs `f`; an encore::Error is the injected fault (counted; at most one per scenario), anything
// else is a finding.
bool attempt(Outcome& o, const std::string& what, const std::function<void()>& f) {
  try {
    f();
    return true;
  } catch (const encore::Error& e) {
    if (++o.errors > 1) o.bad.push_back(what + ": a second failure after the fault fired: " + e.what());
    else if (std::string(e.what()).find("injected fault") == std::string::npos)
      o.bad.push_back(what + ": the fault surfaced as another error: " + e.what());
    return false;
  } catch (const std::exception& e) {
    o.bad.push_back(what + ": not an encore::Error: " + e.what());
  } catch (...) {
    o.bad.push_back(what + ": a non-std exception");
  }
  return false;
}

// The closure of the step: device, kernels, closure buffers, two inputs to rotate.
struct World {
  explicit World(const std::shared_ptr<FaultControl>& c) : dev(encore_test::open_fault_device(c)) {}
  Device dev;
  encore::Program prog;
  encore::Kernel fill, scale, add;
  Buffer table, bias, state, x[2];
  encore::Variable k{"k", 0, 100};
  std::vector<float> bias_host = std::vector<float>(kN);

  // Every setup step is retried once: the fault may fire in any of them.
  bool setup(Outcome& o) {
    for (size_t i = 0; i < kN; ++i) bias_host[i] = bias_at(i);
    auto twice = [&](const std::string& what, const std::function<void()>& f) { return attempt(o, what, f) || attempt(o, what + " (again)", f); };
    return twice("compile", [&] { prog = dev.compile(std::string(kSrc) + "// " + encore_test::unique_token()); }) &&
           twice("kernels", [&] {
             fill = prog.kernel("f_fill");
             scale = prog.kernel("f_scale");
             add = prog.kernel("f_add");
           }) &&
           twice("buffers", [&] {
             table = dev.alloc<float>(kN);
             bias = dev.alloc<float>(kN);
             state = dev.alloc<float>(kN);
             for (int w = 0; w < 2; ++w) {
               std::vector<float> v(kN);
               for (size_t i = 0; i < kN; ++i) v[i] = x_at(w, i);
               x[w] = dev.alloc<float>(kN);
               x[w].copyin(v);
             }
           });
  }

  Buffer step(const Buffer& in) const {
    dev.launch(fill, {kN}, {}, encore::out(table));  // one-time
    Buffer t = dev.alloc<float>(kN);
    dev.launch(scale, {kN}, {}, in, t, k);
    Buffer u = dev.alloc<float>(kN);
    dev.copy(u, t);
    bias.copyin(bias_host);
    Buffer y = dev.alloc<float>(kN);
    dev.launch(add, {kN}, {}, u, table, bias, y, state);
    return y;
  }

  // The step captured explicitly as call 0 (k = 3, input x[0]; its output in y).
  encore::ExecutionUnit capture(Buffer& y) const {
    set_state(0);
    (void)k.bind(3);
    encore::Capture cap;
    cap.add_input(x[0]);
    y = step(x[0]);
    cap.add_output(y);
    return cap.end();
  }

  void set_state(int call) const {
    std::vector<float> s(kN);
    for (size_t i = 0; i < kN; ++i) s[i] = state_at(call, i);
    state.copyin(s);
  }

  // y and state after call `call` on input `which` with k = kv.
  std::string check(const Buffer& y, int call, int which, int kv) const {
    const std::vector<float> gy = y.copyout<float>(), gs = state.copyout<float>();
    for (size_t i = 0; i < kN; ++i) {
      const float want = x_at(which, i) * float(kv) + float(i) + bias_at(i);
      if (gy[i] != want) return "call " + std::to_string(call) + ": y[" + std::to_string(i) + "] = " + std::to_string(gy[i]) + ", expected " + std::to_string(want);
      if (gs[i] != state_at(call, i) + want)
        return "call " + std::to_string(call) + ": state[" + std::to_string(i) + "] = " + std::to_string(gs[i]) + ", expected " +
               std::to_string(state_at(call, i) + want);
    }
    return {};
  }
};

void Outcome::check(const World& w, const Buffer& y, int call, int which, int kv) {
  std::string bad;
  auto f = [&] { bad = w.check(y, call, which, kv); };
  if (!attempt(*this, "check", f) && !attempt(*this, "check again", f)) return;
  if (!bad.empty()) this->bad.push_back(bad);
}

constexpr int kCalls = 6;

// TinyJit over the step: calls 0 (warm-up), 1 (capture), 2+ (replay), inputs rotating, k varying.
// A call that fails is retried once at once (the fault fired; the same jit must work again).
Outcome jit_scenario(const std::shared_ptr<FaultControl>& c, long fail_at, long* calls_used) {
  Outcome o;
  World w(c);
  c->arm(fail_at);
  if (w.setup(o)) {
    auto jit = encore::TinyJit([&w](const Buffer& in, encore::BoundVar) { return w.step(in); });
    for (int call = 0; call < kCalls; ++call) {
      const int which = call % 2, kv = 3 + call;
      Buffer y;
      auto run = [&] {
        w.set_state(call);
        y = jit(w.x[which], w.k.bind(kv));
      };
      if (!attempt(o, "call " + std::to_string(call), run) && !attempt(o, "call " + std::to_string(call) + " again", run)) continue;
      o.check(w, y, call, which, kv);
    }
  }
  *calls_used = c->calls;
  return o;
}

// Capture + unit replay by slot; a failed capture is abandoned and made again.
Outcome unit_scenario(const std::shared_ptr<FaultControl>& c, long fail_at, long* calls_used) {
  Outcome o;
  World w(c);
  c->arm(fail_at);
  if (w.setup(o)) {
    encore::ExecutionUnit unit;
    Buffer y;
    auto capture = [&] { unit = w.capture(y); };
    if (attempt(o, "capture", capture) || attempt(o, "capture again", capture)) {
      o.check(w, y, 0, 0, 3);
      for (int call = 1; call < kCalls; ++call) {
        const int which = call % 2, kv = 3 + call;
        auto run = [&] {
          w.set_state(call);
          unit.bind_input(0, w.x[which]).bind_var(unit.variable_slot(w.k), kv)();
        };
        if (!attempt(o, "replay " + std::to_string(call), run) && !attempt(o, "replay " + std::to_string(call) + " again", run)) continue;
        o.check(w, y, call, which, kv);
      }
    }
  }
  *calls_used = c->calls;
  return o;
}

void every_fault(Outcome (*scenario)(const std::shared_ptr<FaultControl>&, long, long*)) {
  auto c = make_control();
  long total = 0;
  const Outcome clean = scenario(c, -1, &total);
  ASSERT_TRUE(clean.bad.empty()) << clean.bad.front();
  ASSERT_EQ(clean.errors, 0);
  ASSERT_GT(total, 40) << "the scenario makes few backend calls";
  ASSERT_EQ(c->live_allocs.load(), 0) << "fault-free scenario leaks device memory";
  int fired = 0;
  for (long n = 0; n < total; ++n) {
    long used = 0;
    const long before = c->fired;
    const Outcome o = scenario(c, n, &used);
    const bool did_fire = c->fired > before;
    fired += did_fire;
    std::string fault;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      fault = c->last_fault;
    }
    for (const std::string& b : o.bad) ADD_FAILURE() << "fault at call " << n << " (" << fault << "): " << b;
    // a fault that fired surfaced as one encore::Error, unless it hit a path that absorbs errors on
    // purpose: a destructor's finish, or an allocation (the allocator frees its cache and retries)
    if (did_fire && o.errors == 0) {
      EXPECT_TRUE(fault.find("finish") != std::string::npos || fault.find("alloc") != std::string::npos)
          << "fault at call " << n << " (" << fault << ") vanished";
    }
    EXPECT_LE(o.errors, 1) << "fault at call " << n;
    EXPECT_EQ(c->live_allocs.load(), 0) << "fault at call " << n << " (" << fault << "): device memory leaked";
    EXPECT_EQ(c->live_views.load(), 0) << "fault at call " << n << " (" << fault << "): views leaked";
  }
  EXPECT_EQ(fired, total) << "every call number up to the fault-free count fires once";
}

TEST(Faults, EveryBackendCallOfAJitScenario) { every_fault(jit_scenario); }

// A rebind whose argument set fails must not be mistaken for done: the retry with the same input
// re-points every kernel argument (DESIGN rule 6: after an error the unit is still usable).
TEST(Faults, RebindAfterAFailedArgumentSetUsesTheNewInput) {
  auto c = make_control();
  World w(c);
  Outcome o;
  ASSERT_TRUE(w.setup(o));
  encore::ExecutionUnit unit;
  Buffer y;
  unit = w.capture(y);
  unit();  // binds every kernel object
  w.set_state(1);
  unit.bind_var(unit.variable_slot(w.k), 4).bind_input(0, w.x[1]);  // the input is re-pointed at the run
  c->arm(0);  // the next backend call fails: the first set_buffer of the rebind
  EXPECT_THROW(unit(), encore::DeviceError);
  EXPECT_NE(c->last_fault.find("set_buffer"), std::string::npos) << c->last_fault;
  w.set_state(1);
  unit.bind_input(0, w.x[1]).bind_var(unit.variable_slot(w.k), 4)();
  EXPECT_EQ(w.check(y, 1, 1, 4), "");
}
TEST(Faults, EveryBackendCallOfACaptureAndUnitReplay) { every_fault(unit_scenario); }

// The same for a variable: a failed argument set must not leave some kernels with the new value
// while a retry with that value finds nothing to do.
TEST(Faults, RebindAfterAFailedVariableSetUsesTheNewValue) {
  auto c = make_control();
  World w(c);
  Outcome o;
  ASSERT_TRUE(w.setup(o));
  Buffer y;
  encore::ExecutionUnit unit = w.capture(y);
  unit();
  w.set_state(1);
  unit.bind_input(0, w.x[1]);
  unit();
  c->arm(0);  // the first set_arg of the variable's kernels fails
  EXPECT_THROW(unit.bind_var(unit.variable_slot(w.k), 4), encore::DeviceError);
  EXPECT_NE(c->last_fault.find("set_arg"), std::string::npos) << c->last_fault;
  w.set_state(1);
  unit.bind_var(unit.variable_slot(w.k), 4)();
  EXPECT_EQ(w.check(y, 1, 1, 4), "");
}

}  // namespace
