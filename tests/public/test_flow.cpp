// Steps that decide (encore/control.hpp): host items, branches and loops inside one TinyJit step,
// through the public API. Each behaviour test runs the same step twice over separate state: once
// through a TinyJit (capture, then replay) and once eagerly, with the same inputs and bound values
// every call, and requires bit-equal results; decisions change between calls on purpose. Then the
// misuses, each refused with a message that names what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "encore/profile.hpp"
#include "jit_env.hpp"

using namespace encore;
using encore_test::contains;
using encore_test::expect_jit_error;
using encore_test::get;
using encore_test::make;

namespace {

const char* kFlowSrc = R"CL(
__kernel void fl_sums(__global const float* x, __global float* s, int n) {
  float a = 0.0f, b = 0.0f;
  for (int i = 0; i < n; ++i) { a += x[i]; b += x[i] * x[i]; }
  s[0] = a; s[1] = b;
}
__kernel void fl_scale(__global const float* x, __global float* y, float q) { size_t i = get_global_id(0); y[i] = x[i] * q + 1.0f; }
__kernel void fl_count(__global const float* x, __global int* c, int n) {
  int k = 0;
  for (int i = 0; i < n; ++i) k += x[i] > 0.0f;
  c[0] = k;
}
__kernel void fl_mark(__global float* y, float v) { y[get_global_id(0)] = v + (float)get_global_id(0); }
__kernel void fl_axpy(__global float* y, __global const float* x, float a) { size_t i = get_global_id(0); y[i] = 0.5f * y[i] + a * x[i]; }
__kernel void fl_half(__global float* y, __global float* r, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) { y[i] *= 0.5f; m = fmax(m, fabs(y[i])); }
  r[0] = m;
}
__kernel void fl_inc(__global int* c) { c[0] += 1; }
__kernel void fl_copy(__global const float* x, __global float* y) { size_t i = get_global_id(0); y[i] = x[i]; }
__kernel void fl_upd(__global float* w, __global const float* x, __global const float* lr) { size_t i = get_global_id(0); w[i] -= lr[0] * x[i]; }
__kernel void fl_scalef(__global float* y, float s) { y[get_global_id(0)] *= s; }
)CL";

struct Flow {
  Device dev;
  Program prog;
  Kernel sums, scale, count, mark, axpy, half, inc, copy, upd, scalef;
  explicit Flow(Device d)
      : dev(d), prog(d.compile(kFlowSrc)), sums(prog.kernel("fl_sums")), scale(prog.kernel("fl_scale")), count(prog.kernel("fl_count")),
        mark(prog.kernel("fl_mark")), axpy(prog.kernel("fl_axpy")), half(prog.kernel("fl_half")), inc(prog.kernel("fl_inc")),
        copy(prog.kernel("fl_copy")), upd(prog.kernel("fl_upd")), scalef(prog.kernel("fl_scalef")) {}
};

Flow& cl_flow() {
  static Flow f(Device::open());
  return f;
}
Flow& null_flow() {
  static Flow f(Device::open("NULL"));
  return f;
}

std::vector<float> data(uint32_t seed, size_t n, float lo, float hi) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

constexpr int n = 64;

// The srad pattern: reduce, read two floats back, compute a value on the host, use it in the next
// kernel: one step, bit-equal to eager and to the two-jit version with a host round trip between.
TEST(Flow, HostItemSteersTheNextKernel) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable q = Variable::f32("q0sqr");
  Buffer sums = dev.alloc<float>(2);
  auto step = [&](Buffer x) {
    Buffer y = dev.alloc<float>(n);
    dev.launch(f.sums, {1}, {}, x, sums, n);
    dev.host({sums}, {q}, [q](HostCtx& c) {
      float s = c.read<float>(0, 0), s2 = c.read<float>(0, 1), mean = s / n;
      c.set(q, static_cast<double>(s2 / n - mean * mean));
    }, "q0sqr");
    dev.launch(f.scale, {n}, {}, x, y, q);
    return y;
  };
  TinyJit jit(step);
  // the two-jit version: the reduction, a copyout, the value on the host, the rest with it bound
  TinyJit first([&](Buffer x) { dev.launch(f.sums, {1}, {}, x, sums, n); });
  TinyJit second([&](Buffer x, BoundVar) {
    Buffer y = dev.alloc<float>(n);
    dev.launch(f.scale, {n}, {}, x, y, q);
    return y;
  });
  for (uint32_t call = 0; call < 8; ++call) {
    Buffer x = make(dev, data(call, n, -2.f, 3.f + call));
    std::vector<float> got = get(jit(x));
    std::vector<float> eager = get(step(x));
    first(x);
    std::vector<float> s = sums.copyout<float>();
    float mean = s[0] / n;
    std::vector<float> two = get(second(x, q.bind(static_cast<double>(s[1] / n - mean * mean))));
    EXPECT_EQ(got, eager) << "call " << call;
    EXPECT_EQ(got, two) << "call " << call;
  }
  EXPECT_TRUE(jit.next_call_replays(make(dev, data(99, n, 0, 1))));
}

// An engine frame: live particles counted on the device, the next kernel launched over that count.
TEST(Flow, ACountReadBackSetsTheNextLaunchSize) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable live{"live", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1);
  auto frame = [&](Buffer x) {
    Buffer y = dev.alloc<float>(n);
    dev.fill(y, -1.0f);
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, c.read<int32_t>(0)); }, "live");
    dev.launch(f.mark, {live}, {}, y, 2.0f);
    return y;
  };
  TinyJit jit(frame);
  for (uint32_t t = 0; t < 40; ++t) {
    Buffer x = make(dev, data(t, n, -1.f, 0.2f + 0.05f * static_cast<float>(t % 20)));
    std::vector<float> got = get(jit(x)), want = get(frame(x));
    ASSERT_EQ(got, want) << "frame " << t;
  }
}

// A value out of the Variable's bounds stops the replay before the next enqueue, names both, and
// the jit goes on with the next call.
TEST(Flow, AHostValueOutOfBoundsStopsTheReplayCleanly) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable lim{"lim", 0, 40};
  Buffer cnt = dev.alloc<int32_t>(1);
  auto step = [&](Buffer x) {
    Buffer y = dev.alloc<float>(n);
    dev.fill(y, 0.0f);
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {lim}, [lim](HostCtx& c) { c.set(lim, c.read<int32_t>(0)); }, "lim");
    dev.launch(f.mark, {lim}, {}, y, 1.0f);
    return y;
  };
  TinyJit jit(step);
  for (int i = 0; i < 3; ++i) jit(make(dev, data(1, n, -1.f, 0.1f)));
  try {
    jit(make(dev, std::vector<float>(n, 1.0f)));  // 64 positive: above 40
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "\"lim\"") && contains(e.what(), "64") && contains(e.what(), "[0, 40]")) << e.what();
  }
  Buffer x = make(dev, data(5, n, -1.f, 0.3f));
  EXPECT_TRUE(jit.next_call_replays(x));
  EXPECT_EQ(get(jit(x)), get(step(x)));
}

// A host function's own code runs at every replay: a Variable it reads with value() there has the
// value this call was passed (the call's binding is open during its replay), not the thread's last
// bind(). Fails if a replay of a step with host code ran without the call's BindingScope.
TEST(Flow, AHostFunctionReadsTheCallsVariableValueOnReplay) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable k{"k", 0, 100}, lim{"lim", 0, 200};
  Buffer cnt = dev.alloc<int32_t>(1);
  std::vector<int64_t> seen;
  auto step = [&](Buffer x, BoundVar) {
    Buffer y = dev.alloc<float>(n);
    dev.fill(y, 0.0f);
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {lim}, [&seen, k, lim](HostCtx& c) {
      seen.push_back(k.value());
      c.set(lim, c.read<int32_t>(0) + k.value());
    }, "reads_k");
    dev.launch(f.mark, {lim}, {}, y, 1.0f);
    return y;
  };
  TinyJit jit(step);
  std::vector<BoundVar> bound;
  for (int i = 0; i < 6; ++i) bound.push_back(k.bind(10 + i));  // this thread's last bind() is 15 from here
  Buffer x = make(dev, data(3, n, -1.f, 0.5f));
  for (int i = 0; i < 2; ++i) jit(x, bound[static_cast<size_t>(i)]);  // warm-up, capture
  ASSERT_TRUE(jit.next_call_replays(x, bound[2]));
  seen.clear();
  std::vector<std::vector<float>> got;
  for (size_t i = 2; i < 6; ++i) got.push_back(get(jit(x, bound[i])));
  EXPECT_EQ(seen, (std::vector<int64_t>{12, 13, 14, 15}));
  for (size_t i = 2; i < 6; ++i) {
    BindingScope scope({&bound[i], 1}, true);  // eager, as inside a call passed bound[i]
    EXPECT_EQ(got[i - 2], get(step(x, bound[i]))) << "call " << i;
  }
}

// A host function that throws: the replay stops there, the exception reaches the caller, and the
// next replay is whole and right.
TEST(Flow, AHostFunctionThatThrowsLeavesTheUnitUsable) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable v{"v", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1);
  auto step = [&](Buffer x) {
    Buffer y = dev.alloc<float>(n);
    dev.fill(y, 0.0f);
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {v}, [v](HostCtx& c) {
      int k = c.read<int32_t>(0);
      if (k == n) throw std::runtime_error("every value positive");
      c.set(v, k);
    });
    dev.launch(f.mark, {v}, {}, y, 3.0f);
    return y;
  };
  TinyJit jit(step);
  for (int i = 0; i < 3; ++i) jit(make(dev, data(2, n, -1.f, 1.f)));
  EXPECT_THROW(jit(make(dev, std::vector<float>(n, 1.0f))), std::runtime_error);
  for (uint32_t i = 0; i < 3; ++i) {
    Buffer x = make(dev, data(10 + i, n, -1.f, 1.f));
    EXPECT_EQ(get(jit(x)), get(step(x)));
  }
}

// Two copies of a step's state: one run through a TinyJit, one eagerly, compared after each call.
struct Twin {
  Buffer w, lr;
};
Twin twin(const Device& dev, uint32_t seed) { return {make(dev, data(seed, n, -1.f, 1.f)), make(dev, std::vector<float>{1.0f})}; }

// "Decay the learning rate every 10th step", written as a branch on a bound Variable: the
// capture (calls 0 and 1) sees both values, and the replays follow each call's value.
TEST(Flow, ABranchOnABoundVariableFollowsEachCall) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable decay{"decay", 0, 1};
  auto make_step = [&](Twin& s) {
    return [&dev, &f, &s, decay](Buffer x, BoundVar) {
      dev.when(decay, [&] { dev.launch(f.scalef, {1}, {}, s.lr, 0.5f); }, {}, "decay");
      dev.launch(f.upd, {n}, {}, s.w, x, s.lr);
    };
  };
  Twin a = twin(dev, 1), b = twin(dev, 1);
  TinyJit jit(make_step(a));
  auto eager = make_step(b);
  for (int i = 0; i < 25; ++i) {
    Buffer x = make(dev, data(static_cast<uint32_t>(i), n, 0.f, 1.f));
    BoundVar d = decay.bind(i % 10 == 0 ? 1 : 0);
    jit(x, d);
    eager(x, d);
    ASSERT_EQ(get(a.w), get(b.w)) << "call " << i;
    ASSERT_EQ(get(a.lr), get(b.lr)) << "call " << i;
  }
  EXPECT_EQ(get(a.lr)[0], 0.125f);  // decayed at calls 0, 10, 20
}

// The same as a key: each value gets its own unit, captured from a call that took that path.
TEST(Flow, AKeyGivesEachValueItsOwnUnit) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  auto make_step = [&](Twin& s) {
    return [&dev, &f, &s](Buffer x, Key decay) {
      if (decay.value) dev.launch(f.scalef, {1}, {}, s.lr, 0.5f);
      dev.launch(f.upd, {n}, {}, s.w, x, s.lr);
    };
  };
  Twin a = twin(dev, 2), b = twin(dev, 2);
  TinyJit jit(make_step(a));
  auto eager = make_step(b);
  for (int i = 0; i < 35; ++i) {
    Buffer x = make(dev, data(static_cast<uint32_t>(i), n, 0.f, 1.f));
    jit(x, key(i % 10 == 0));
    eager(x, key(i % 10 == 0));
    ASSERT_EQ(get(a.w), get(b.w)) << "call " << i;
  }
  EXPECT_EQ(get(a.lr)[0], 0.0625f);
  Buffer x = make(dev, data(0, n, 0.f, 1.f));
  EXPECT_TRUE(jit.next_call_replays(x, key(1)) && jit.next_call_replays(x, key(0)));
}

// A multi-way branch on a value the device computed: every alternative is taken over the calls.
TEST(Flow, SelectOnAHostValue) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable which{"which", 0, 2};
  auto make_step = [&](Twin& s) {
    return [&dev, &f, &s, which](Buffer x) {
      Buffer cnt = dev.alloc<int32_t>(1);
      dev.launch(f.count, {1}, {}, x, cnt, n);
      dev.host({cnt}, {which}, [which](HostCtx& c) { c.set(which, c.read<int32_t>(0) % 3); });
      dev.select(which, {[&] { dev.launch(f.axpy, {n}, {}, s.w, x, 1.0f); },
                         [&] { dev.launch(f.scalef, {n}, {}, s.w, -1.0f); },
                         [&] {
                           Buffer t = dev.alloc<float>(n);  // a temporary of one alternative
                           dev.launch(f.mark, {n}, {}, t, 0.25f);
                           dev.launch(f.axpy, {n}, {}, s.w, t, 2.0f);
                         }},
                 "which");
    };
  };
  Twin a = twin(dev, 3), b = twin(dev, 3);
  TinyJit jit(make_step(a));
  auto eager = make_step(b);
  int taken[3] = {0, 0, 0};
  for (uint32_t i = 0; i < 30; ++i) {
    std::vector<float> v = data(i, n, -1.f, 1.f);
    int pos = 0;
    for (float e : v) pos += e > 0;
    ++taken[pos % 3];
    Buffer x = make(dev, v);
    jit(x);
    eager(x);
    ASSERT_EQ(get(a.w), get(b.w)) << "call " << i;
  }
  EXPECT_GT(taken[0] * taken[1] * taken[2], 0);
}

// A counted loop: the count is a bound Variable (0 at call 0: the body is traced without running),
// and the body ping-pongs inside one iteration.
TEST(Flow, RepeatRunsTheBodyCountTimes) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable steps{"steps", 0, 6};
  auto make_step = [&](Twin& s) {
    return [&dev, &f, &s, steps](Buffer x, BoundVar) {
      Buffer t = dev.alloc<float>(n);
      dev.launch(f.copy, {n}, {}, x, t);
      dev.repeat(steps, [&] {
        dev.launch(f.axpy, {n}, {}, s.w, t, 0.25f);
        dev.launch(f.axpy, {n}, {}, t, s.w, 0.5f);
      }, "substeps");
      dev.launch(f.axpy, {n}, {}, s.w, t, 1.0f);
    };
  };
  Twin a = twin(dev, 4), b = twin(dev, 4);
  TinyJit jit(make_step(a));
  auto eager = make_step(b);
  const int counts[] = {0, 2, 5, 0, 1, 6, 3, 3, 4, 0};
  for (int i = 0; i < 10; ++i) {
    Buffer x = make(dev, data(static_cast<uint32_t>(i), n, -1.f, 1.f));
    jit(x, steps.bind(counts[i]));
    eager(x, steps.bind(counts[i]));
    ASSERT_EQ(get(a.w), get(b.w)) << "call " << i;
  }
  // a count over the Variable's bound: refused before anything runs, naming both
  const std::vector<float> before = get(a.w);
  Buffer x = make(dev, data(1, n, -1.f, 1.f));
  try {
    jit(x, steps.bind(7));
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "steps") && contains(e.what(), "7")) << e.what();
  }
  EXPECT_EQ(get(a.w), before);
  jit(x, steps.bind(2));
  eager(x, steps.bind(2));
  EXPECT_EQ(get(a.w), get(b.w));
}

// A loop until a tolerance: one round trip per iteration, iterations decided by the data.
TEST(Flow, LoopWhileRunsUntilTheConditionFails) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  auto make_step = [&](Buffer iters) {
    return [&dev, &f, iters](Buffer x) {
      Buffer y = dev.alloc<float>(n), r = dev.alloc<float>(1);
      dev.launch(f.copy, {n}, {}, x, y);
      dev.fill(iters, 0);
      dev.loop_while(64, {r}, [&] {
        dev.launch(f.half, {1}, {}, y, r, n);
        dev.launch(f.inc, {1}, {}, iters);
      }, [](HostCtx& c) { return c.read<float>(0) > 0.01f; }, "halve");
      return y;
    };
  };
  Buffer ia = dev.alloc<int32_t>(1), ib = dev.alloc<int32_t>(1);
  TinyJit jit(make_step(ia));
  auto eager = make_step(ib);
  std::vector<int> seen;
  for (uint32_t i = 0; i < 12; ++i) {
    Buffer x = make(dev, data(i, n, -1.f, 1.f + 10.f * static_cast<float>(i % 4)));
    std::vector<float> got = get(jit(x)), want = get(eager(x));
    ASSERT_EQ(got, want) << "call " << i;
    ASSERT_EQ(ia.copyout<int32_t>(), ib.copyout<int32_t>()) << "call " << i;
    seen.push_back(ia.copyout<int32_t>()[0]);
  }
  EXPECT_NE(*std::min_element(seen.begin(), seen.end()), *std::max_element(seen.begin(), seen.end()));
  // past its bound: an error naming the loop, and the jit goes on
  try {
    jit(make(dev, std::vector<float>(n, 1e30f)));
    ADD_FAILURE() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_TRUE(contains(e.what(), "halve") && contains(e.what(), "max_iterations = 64")) << e.what();
  }
  Buffer x = make(dev, data(3, n, -1.f, 2.f));
  EXPECT_EQ(get(jit(x)), get(eager(x)));
}

// Misuses, on NULL and OpenCL: each a clear error.
class FlowErrors : public encore_test::OnDevices {
 protected:
  Flow& flow() const { return GetParam() == "NULL" ? null_flow() : cl_flow(); }
};
ON_NULL_AND_CL(FlowErrors);

TEST_P(FlowErrors, ALoopBodyThatSwapsBuffersIsRefused) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable steps{"steps", 0, 4};
  Buffer p = dev.alloc<float>(n), q = dev.alloc<float>(n);
  TinyJit jit([&](BoundVar) {
    Buffer a = p, b = q;
    dev.repeat(steps, [&] {
      dev.launch(f.copy, {n}, {}, a, b);
      std::swap(a, b);
    }, "pingpong");
  });
  expect_jit_error([&] {
    for (int i = 0; i < 3; ++i) jit(steps.bind(3));
  }, {"repeat pingpong", "iteration 2 did other work", "ping-pong inside one iteration"});
}

TEST_P(FlowErrors, ABufferMadeInABranchUsedAfterItIsRefused) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1};
  Buffer out = dev.alloc<float>(n);
  TinyJit jit([&](BoundVar) {
    Buffer t;
    dev.when(d, [&] {
      t = dev.alloc<float>(n);
      dev.launch(f.mark, {n}, {}, t, 1.0f);
    }, {}, "maybe");
    dev.launch(f.copy, {n}, {}, t, out);
  });
  expect_jit_error([&] {
    for (int i = 0; i < 3; ++i) jit(d.bind(1));
  }, {"allocated inside branch maybe", "Allocate it before the branch"});
}

TEST_P(FlowErrors, AHostValueUsedBeforeItsHostItemIsRefused) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable live{"live", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1), y = dev.alloc<float>(n);
  TinyJit jit([&](BoundVar) {
    dev.launch(f.mark, {live}, {}, y, 1.0f);
    dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, 1); });
  });
  expect_jit_error([&] {
    for (int i = 0; i < 3; ++i) jit(live.bind(4));
  }, {"uses Variable \"live\"", "no host item setting it runs before it"});
}

TEST_P(FlowErrors, AHostValueSetInOneAlternativeIsRefusedAfterTheBranch) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1}, live{"live", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1), y = dev.alloc<float>(n);
  TinyJit jit([&](BoundVar) {
    dev.when(d, [&] { dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, 2); }); });
    dev.launch(f.mark, {live}, {}, y, 1.0f);
  });
  expect_jit_error([&] {
    for (int i = 0; i < 3; ++i) jit(d.bind(1));
  }, {"uses Variable \"live\"", "another branch alternative"});
}

TEST_P(FlowErrors, AHostFunctionCannotIssueWork) {
  Flow& f = flow();
  Device dev = f.dev;
  Buffer cnt = dev.alloc<int32_t>(1), y = dev.alloc<float>(n);
  dev.fill(cnt, 0);
  expect_jit_error([&] { dev.host({cnt}, {}, [&](HostCtx&) { dev.launch(f.mark, {n}, {}, y, 1.0f); }); },
                   {"a host function", "cannot launch a kernel"});
  expect_jit_error([&] { dev.host({cnt}, {}, [&](HostCtx&) { dev.fill(y, 0.0f); }); }, {"cannot fill a buffer"});
  dev.launch(f.mark, {n}, {}, y, 1.0f);  // and work goes on after
}

TEST_P(FlowErrors, SetsAndReadsAreChecked) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable a{"a", 0, 10}, b{"b", 0, 10};
  Buffer cnt = dev.alloc<int32_t>(2);
  dev.fill(cnt, 3);
  encore_test::expect_has(encore_test::argument_error([&] { dev.host({cnt}, {a}, [b](HostCtx& c) { c.set(b, 1); }, "h"); }), {"host item h sets Variable \"b\", which it did not declare"});
  encore_test::expect_has(encore_test::argument_error([&] { dev.host({cnt}, {a}, [a](HostCtx& c) { c.set(a, 11); }, "h"); }), {"\"a\" to 11, outside its bounds [0, 10]"});
  encore_test::expect_has(encore_test::argument_error([&] { dev.host({cnt}, {a}, [](HostCtx& c) { (void)c.read<int32_t>(0, 2); }, "h"); }), {"element 2", "past the end of read 0 (8 bytes)"});
  encore_test::expect_has(encore_test::argument_error([&] { dev.host({cnt}, {a}, [](HostCtx& c) { (void)c.read<int32_t>(1); }, "h"); }), {"read 1 was not declared"});
  encore_test::expect_has(encore_test::argument_error([&] { dev.host({cnt}, {a, a}, [](HostCtx&) {}, "h"); }), {"declared twice"});
  if (!dev.is_null()) {
    int32_t got = -1;
    dev.host({cnt}, {a}, [&](HostCtx& c) { got = c.read<int32_t>(0, 1); });
    EXPECT_EQ(got, 3);
  }
  (void)f;
}

TEST_P(FlowErrors, ASelectWhoseBoundsPickNoAlternativeIsRefused) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable idx{"idx", 0, 5};
  Buffer y = dev.alloc<float>(n);
  TinyJit jit([&](BoundVar) {
    dev.select(idx, {[&] { dev.launch(f.mark, {n}, {}, y, 1.0f); }, [&] { dev.launch(f.mark, {n}, {}, y, 2.0f); }}, "two");
  });
  expect_jit_error([&] {
    for (int i = 0; i < 3; ++i) jit(idx.bind(1));
  }, {"select two", "bounds [0, 5]", "narrow its bounds"});
  idx.bind(5);  // this thread's value, outside any call
  encore_test::expect_has(encore_test::argument_error([&] { dev.select(idx, {[] {}, [] {}}, "two"); }), {"picks no alternative"});
}

// The trace shows what each replay decided: a host item's values, a branch's alternative, a
// loop's iterations (ENCORE_DEBUG=2 prints the same lines: tests/public/test_debug_env.cpp).
TEST_P(FlowErrors, TheTraceShowsEachDecision) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1}, k{"k", 0, 3}, live{"live", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1), y = make(dev, std::vector<float>(n, 1.0f));
  dev.fill(cnt, 5);
  TinyJit jit([&](BoundVar, BoundVar) {
    dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, 7); }, "count");
    dev.when(d, [&] { dev.launch(f.mark, {live}, {}, y, 1.0f); }, [&] { dev.launch(f.mark, {n}, {}, y, 2.0f); }, "pick");
    dev.repeat(k, [&] { dev.launch(f.axpy, {n}, {}, y, y, 0.5f); }, "more");
  });
  jit(d.bind(0), k.bind(1));
  jit(d.bind(0), k.bind(1));
  const std::string path = ::testing::TempDir() + "encore_flow_trace_" + GetParam() + ".json";
  profile::start();
  jit(d.bind(1), k.bind(2));
  jit(d.bind(0), k.bind(3));
  profile::stop(path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string t = ss.str();
  std::remove(path.c_str());
  EXPECT_TRUE(contains(t, "\"name\":\"host count\"") && contains(t, "\"decision\":\"live = 7\"")) << t;
  EXPECT_TRUE(contains(t, "\"name\":\"branch pick\"") && contains(t, "\"decision\":\"then (d = 1)\"") &&
              contains(t, "\"decision\":\"else (d = 0)\""))
      << t;
  EXPECT_TRUE(contains(t, "\"name\":\"loop more\"") && contains(t, "\"decision\":\"2 iterations\"") && contains(t, "\"decision\":\"3 iterations\""))
      << t;
}

// Verify mode (ENCORE_VERIFY) checks replays of a step that decides against eager runs like any
// step: decisions that change between calls are no mismatch.
TEST(Flow, VerifyModeAcceptsAStepThatDecides) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1}, live{"live", 0, n};
  Buffer cnt = dev.alloc<int32_t>(1), y = dev.alloc<float>(n);
  auto step = [&](Buffer x, BoundVar) {
    dev.fill(y, 0.0f);
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, c.read<int32_t>(0)); }, "live");
    dev.when(d, [&] { dev.launch(f.mark, {live}, {}, y, 1.0f); }, [&] { dev.launch(f.axpy, {n}, {}, y, x, 2.0f); });
    return y;
  };
  TinyJit jit(step, JitOptions{.verify = 6});
  for (uint32_t i = 0; i < 8; ++i) {
    Buffer x = make(dev, data(40 + i, n, -1.f, 1.f));
    EXPECT_NO_THROW(jit(x, d.bind(i % 3 == 0))) << "call " << i;
  }
  EXPECT_TRUE(jit.next_call_replays(make(dev, data(1, n, -1.f, 1.f)), d.bind(1)));
}

// A native callback runs again at every replay, outside the unit's flow: a host item, branch or
// loop it would add is refused.
TEST(Flow, ANativeCallbackCannotAddAHostItemBranchOrLoop) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable v{"v", 0, 4};
  Buffer cnt = dev.alloc<int32_t>(1), y = dev.alloc<float>(n);
  dev.fill(cnt, 1);
  auto native = [&](std::function<void()> inside) {
    encore::opencl::enqueue_native(dev, [inside](cl_command_queue, std::span<const cl_mem>) { inside(); }, {encore::in(cnt)}, "lib");
  };
  expect_jit_error([&] { native([&] { dev.host({cnt}, {v}, [v](HostCtx& c) { c.set(v, 1); }, "h"); }); },
                   {"a native callback (encore::opencl::enqueue_native) cannot add a host item", "before or after the native call"});
  expect_jit_error([&] { native([&] { dev.when(v, [] {}); }); }, {"cannot add a branch"});
  expect_jit_error([&] { native([&] { dev.repeat(v, [] {}); }); }, {"cannot add a loop"});
  // and inside a captured step: the capture fails with the same error, the next work goes on
  TinyJit jit([&] { native([&] { dev.host({cnt}, {}, [](HostCtx&) {}); }); });
  expect_jit_error([&] { jit(); }, {"cannot add a host item"});
  dev.launch(f.mark, {n}, {}, y, 1.0f);
  EXPECT_EQ(get(y)[3], 4.0f);
}

// Events and the in-flight bound hold for a unit that decides: run() returns the replay's
// completion, the next run may wait for it, and 24 replays queued under max_in_flight = 1 (and
// unbounded) give the bytes eager execution gives, with the decisions changing every replay.
TEST(Flow, EventsAndTheInFlightBoundHold) {
  NEED_CL();
  Flow& f = cl_flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1}, live{"live", 0, n};
  Buffer x = make(dev, data(3, n, -1.f, 1.f)), cnt = dev.alloc<int32_t>(1);
  auto step = [&](const Buffer& y) {
    dev.launch(f.axpy, {n}, {}, x, y, 0.25f);  // x changes with y: the count changes every call
    dev.launch(f.count, {1}, {}, x, cnt, n);
    dev.host({cnt}, {live}, [live](HostCtx& c) { c.set(live, c.read<int32_t>(0)); }, "live");
    dev.when(d, [&] { dev.launch(f.mark, {live}, {}, y, 0.5f); }, [&] { dev.launch(f.axpy, {n}, {}, y, x, -0.5f); }, "pick");
  };
  for (uint32_t bound : {1u, 0u}) {
    const std::vector<float> x0 = data(3, n, -1.f, 1.f);
    x.copyin(x0);
    Buffer y = make(dev, data(9, n, -1.f, 1.f));
    ExecutionUnit unit = [&] {
      Capture cap(UnitOptions{.max_in_flight = bound, .min_items_in_flight = 0});
      cap.add_input(y);
      std::vector<BoundVar> v{d.bind(1)};
      BindingScope scope(v, true);
      step(y);
      return cap.end();
    }();
    Buffer ye = make(dev, get(y)), xe = make(dev, get(x));  // the eager twin's state (the unit keeps x)
    Event last;
    for (int i = 0; i < 24; ++i) {
      unit.bind(d.bind(i % 3 == 0));
      std::vector<Event> after;
      if (last) after.push_back(last);
      last = unit.run(after);
      std::swap(x, xe);
      {
        std::vector<BoundVar> v{d.bind(i % 3 == 0)};
        BindingScope scope(v, true);
        step(ye);
      }
      std::swap(x, xe);
    }
    last.wait();
    EXPECT_EQ(get(y), get(ye)) << "max_in_flight " << bound;
    EXPECT_EQ(get(x), get(xe)) << "max_in_flight " << bound;
  }
}

// The capture check (call 0 against call 1) looks inside a branch's alternatives: work that
// differs there between the two calls is a JitError, as it is at top level.
TEST_P(FlowErrors, TheCaptureCheckLooksInsideAlternatives) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1};
  Buffer y = dev.alloc<float>(n);
  int calls = 0;
  TinyJit jit([&](BoundVar) {
    ++calls;
    dev.when(d, [&] { dev.launch(f.mark, {n}, {}, y, static_cast<float>(calls)); }, {}, "frozen");
  });
  for (int taken : {1, 0}) {  // the alternative taken, and the one traced without running
    jit.reset();
    expect_jit_error([&] {
      for (int i = 0; i < 3; ++i) jit(d.bind(taken));
    }, {"argument 1 (float v) in item 1 (kernel fl_mark) differs between call 0 and call 1"});
  }
}

// The structure is captured once: later replays take every path (the other alternative, another
// count) from the same unit, with the results eager execution gives.
TEST_P(FlowErrors, EveryPathReplaysFromOneUnit) {
  Flow& f = flow();
  Device dev = f.dev;
  Variable d{"d", 0, 1}, k{"k", 0, 3};
  auto make_step = [&](Buffer y) {
    return [&dev, &f, d, k, y](BoundVar, BoundVar) {
      dev.when(d, [&] { dev.repeat(k, [&] { dev.launch(f.axpy, {n}, {}, y, y, 1.5f); }); },
               [&] { dev.launch(f.mark, {n}, {}, y, 1.0f); });
    };
  };
  Buffer ya = make(dev, std::vector<float>(n, 1.0f)), yb = make(dev, std::vector<float>(n, 1.0f));
  TinyJit jit(make_step(ya));
  auto eager = make_step(yb);
  for (int i = 0; i < 2; ++i) {
    jit(d.bind(0), k.bind(0));
    eager(d.bind(0), k.bind(0));
  }
  const ExecutionUnit* unit = jit.unit_for(d.bind(1), k.bind(2));
  ASSERT_NE(unit, nullptr);
  for (int i = 0; i < 12; ++i) {
    jit(d.bind(i % 2), k.bind(i % 4));
    eager(d.bind(i % 2), k.bind(i % 4));
    if (!dev.is_null()) {
      ASSERT_EQ(get(ya), get(yb)) << "call " << i;
    }
  }
  EXPECT_EQ(jit.unit_for(d.bind(0), k.bind(3)), unit);
}

}  // namespace
