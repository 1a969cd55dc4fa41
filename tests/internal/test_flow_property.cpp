// Property test of steps that decide (encore/control.hpp): random steps of kernels, host items that
// set Variables from device data (used as scalars and in launch sizes), branches on bound and on
// host-set Variables, counted loops and loops until a host condition, nested once, with every
// decision changing between calls. Each seed runs its step through a TinyJit and eagerly, over two
// copies of the same state, and every state byte must agree after every call. Mutations of the
// replay (the other branch taken, a stale host value, a loop one iteration short) must be caught.
//   ENCORE_FLOW_SEEDS=N   seeds to run (default 150 on OpenCL; the NULL run checks structure only)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "testing.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

const char* kSrc = R"CL(
__kernel void p_axpy(__global float* y, __global const float* x, float a) { size_t i = get_global_id(0); y[i] = 0.5f * y[i] + a * x[i]; }
__kernel void p_addi(__global float* y, int k) { y[get_global_id(0)] += 0.25f * (float)k; }
__kernel void p_inc(__global int* c) { c[0] += 1; }
)CL";

constexpr int n = 32;
constexpr int kBufs = 4;   // state buffers; index kBufs is the call's input
constexpr int kHost = 3;   // host-set Variables

struct Node {
  enum Kind { axpy, addi_bound, addi_host, host, when_bound, when_host, repeat, loop_while } kind = axpy;
  int dst = 0, src = 0, var = -1, loop = -1;
  float a = 0;
  bool sized = false;  // launch size 8 + 8 * host Variable `var`
  std::vector<std::vector<Node>> kids;
};

struct Gen {
  std::mt19937_64 g;
  int loops = 0;
  int pick(int k) { return static_cast<int>(g() % static_cast<uint64_t>(k)); }
  std::vector<Node> seq(int depth, std::vector<int> avail) {
    std::vector<Node> out;
    const int len = 2 + pick(4);
    for (int k = 0; k < len; ++k) {
      Node x;
      int r = pick(depth < 2 ? 10 : 6);
      if ((r == 2 || r == 8) && avail.empty()) r = 3;
      switch (r) {
        case 0: case 1: {
          x.kind = Node::axpy;
          x.dst = pick(kBufs);
          x.src = pick(kBufs + 1);
          if (x.src == x.dst) x.src = kBufs;
          x.a = 0.125f * static_cast<float>(1 + pick(7));
          if (!avail.empty() && pick(3) == 0) {
            x.sized = true;
            x.var = avail[static_cast<size_t>(pick(static_cast<int>(avail.size())))];
          }
          break;
        }
        case 4: x.kind = Node::addi_bound; x.dst = pick(kBufs); break;
        case 2:
          x.kind = Node::addi_host;
          x.dst = pick(kBufs);
          x.var = avail[static_cast<size_t>(pick(static_cast<int>(avail.size())))];
          break;
        case 3: case 5:
          x.kind = Node::host;
          x.var = pick(kHost);
          x.src = pick(kBufs);
          avail.push_back(x.var);
          break;
        case 6: x.kind = Node::when_bound; x.kids = {seq(depth + 1, avail), seq(depth + 1, avail)}; break;
        case 7: x.kind = Node::repeat; x.kids = {seq(depth + 1, avail)}; break;
        case 8:
          x.kind = Node::when_host;
          x.var = avail[static_cast<size_t>(pick(static_cast<int>(avail.size())))];
          x.kids = {seq(depth + 1, avail), seq(depth + 1, avail)};
          break;
        default:
          x.kind = Node::loop_while;
          x.src = pick(kBufs);
          x.loop = loops++;
          x.kids = {seq(depth + 1, avail)};
          break;
      }
      out.push_back(std::move(x));
    }
    return out;
  }
};

struct Kernels {
  Device dev;
  Program prog;
  Kernel axpy, addi, inc;
  explicit Kernels(Device d) : dev(d), prog(d.compile(kSrc)), axpy(prog.kernel("p_axpy")), addi(prog.kernel("p_addi")), inc(prog.kernel("p_inc")) {}
};

struct Vars {
  Variable b{"b", 0, 1}, c{"c", 0, 3};
  std::vector<Variable> h{Variable{"h0", 0, 3}, Variable{"h1", 0, 3}, Variable{"h2", 0, 3}};
};

int host_value(float v) { return std::isfinite(v) ? static_cast<int>(std::fmod(std::floor(std::fabs(v) * 7.f), 4.f)) : 0; }

// One copy of a seed's state, and the step over it.
struct Twin {
  std::vector<Buffer> s;
  std::vector<Buffer> cnt;
  Twin(const Device& dev, int loops, uint64_t seed) {
    std::mt19937 g(static_cast<uint32_t>(seed));
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (int i = 0; i < kBufs; ++i) {
      std::vector<float> v(n);
      for (float& e : v) e = d(g);
      s.push_back(dev.alloc<float>(n));
      s.back().copyin(v);
    }
    for (int i = 0; i < loops; ++i) cnt.push_back(dev.alloc<int32_t>(1));
  }
};

void emit(const Kernels& k, const Vars& v, Twin& t, const Buffer& x, const std::vector<Node>& seq) {
  const Device& dev = k.dev;
  for (const Node& nd : seq) {
    auto buf = [&](int i) { return i == kBufs ? x : t.s[static_cast<size_t>(i)]; };
    switch (nd.kind) {
      case Node::axpy:
        if (nd.sized) dev.launch(k.axpy, {v.h[static_cast<size_t>(nd.var)] * 8 + 8}, {}, buf(nd.dst), buf(nd.src), nd.a);
        else dev.launch(k.axpy, {n}, {}, buf(nd.dst), buf(nd.src), nd.a);
        break;
      case Node::addi_bound: dev.launch(k.addi, {n}, {}, buf(nd.dst), v.c); break;
      case Node::addi_host: dev.launch(k.addi, {n}, {}, buf(nd.dst), v.h[static_cast<size_t>(nd.var)]); break;
      case Node::host: {
        Variable h = v.h[static_cast<size_t>(nd.var)];
        dev.host({buf(nd.src).view(0, 1)}, {h}, [h](HostCtx& c) { c.set(h, host_value(c.read<float>(0))); });
        break;
      }
      case Node::when_bound:
      case Node::when_host:
        dev.when(nd.kind == Node::when_bound ? v.b : v.h[static_cast<size_t>(nd.var)], [&] { emit(k, v, t, x, nd.kids[0]); },
                 [&] { emit(k, v, t, x, nd.kids[1]); });
        break;
      case Node::repeat: dev.repeat(v.c, [&] { emit(k, v, t, x, nd.kids[0]); }); break;
      case Node::loop_while: {
        Buffer cnt = t.cnt[static_cast<size_t>(nd.loop)];
        dev.fill(cnt, 0);
        dev.loop_while(8, {cnt, buf(nd.src).view(0, 1)}, [&] {
          emit(k, v, t, x, nd.kids[0]);
          dev.launch(k.inc, {1}, {}, cnt);
        }, dev.is_null() ? HostCond([ran = std::make_shared<int>(0)](HostCtx&) { return ++*ran % 3 != 0; })  // NULL runs no kernel
                         : HostCond([](HostCtx& c) { return c.read<int32_t>(0) < 1 + host_value(c.read<float>(1, 0)); }));
        break;
      }
    }
  }
}

struct Outcome {
  bool mismatch = false;
  bool replayed = false;  // the last calls replayed one unit
  std::string what;
};

// Runs seed `seed`: `calls` calls through a TinyJit and eagerly; compares every state byte (OpenCL only).
Outcome run_seed(const Kernels& k, uint64_t seed, int calls) {
  Gen gen{std::mt19937_64(seed)};
  std::vector<Node> prog = gen.seq(0, {});
  Vars v;
  Twin a(k.dev, gen.loops, seed), b(k.dev, gen.loops, seed);
  TinyJit jit([&](Buffer x, BoundVar, BoundVar) { emit(k, v, a, x, prog); });
  std::mt19937 g(static_cast<uint32_t>(seed * 7 + 1));
  Outcome o;
  for (int call = 0; call < calls && !o.mismatch; ++call) {
    std::vector<float> xs(n);
    for (float& e : xs) e = static_cast<float>(g() % 1000) / 500.f - 1.f;
    Buffer x = k.dev.alloc<float>(n);
    x.copyin(xs);
    BoundVar bb = v.b.bind(static_cast<int64_t>(g() % 2)), cc = v.c.bind(static_cast<int64_t>(g() % 4));
    if (call >= 2) o.replayed = jit.next_call_replays(x, bb, cc);
    jit(x, bb, cc);
    {
      std::vector<BoundVar> vals{bb, cc};
      BindingScope scope(vals, true);
      emit(k, v, b, x, prog);
    }
    if (k.dev.is_null()) continue;
    for (int i = 0; i < kBufs && !o.mismatch; ++i)
      if (a.s[static_cast<size_t>(i)].copyout<float>() != b.s[static_cast<size_t>(i)].copyout<float>()) {
        o.mismatch = true;
        o.what = "seed " + std::to_string(seed) + " call " + std::to_string(call) + ": state buffer " + std::to_string(i) + " differs";
      }
  }
  return o;
}

int seeds() {
  const char* s = std::getenv("ENCORE_FLOW_SEEDS");
  return s && *s ? std::atoi(s) : 150;
}

Kernels* cl_kernels() {
  static Kernels* k = encore_test::have_cl() ? new Kernels(Device::open()) : nullptr;
  return k;
}

TEST(FlowProperty, ReplayEqualsEagerOnOpenCL) {
  Kernels* k = cl_kernels();
  if (!k) GTEST_SKIP() << "no OpenCL device";
  for (int s = 0; s < seeds(); ++s) {
    Outcome o = run_seed(*k, static_cast<uint64_t>(s), 8);
    ASSERT_FALSE(o.mismatch) << o.what;
    ASSERT_TRUE(o.replayed) << "seed " << s << " never replayed";
  }
}

TEST(FlowProperty, EveryStructureReplaysOnNull) {
  Kernels k(Device::open("NULL"));
  for (int s = 0; s < 2 * seeds(); ++s) EXPECT_NO_THROW(run_seed(k, static_cast<uint64_t>(s), 6)) << "seed " << s;
}

// A mutation is caught when some seed (of up to 60) shows a mismatch.
void expect_caught(bool& flag, const char* name) {
  Kernels* k = cl_kernels();
  if (!k) GTEST_SKIP() << "no OpenCL device";
  ASSERT_FALSE(run_seed(*k, 0, 8).mismatch);
  struct Restore {
    bool& f;
    ~Restore() { f = false; }
  } restore{flag};
  flag = true;
  int caught = 0, ran = 0;
  for (uint64_t s = 0; s < 60 && caught < 3; ++s, ++ran) caught += run_seed(*k, s, 8).mismatch;
  std::printf("[mutation %s] %d of %d seeds caught it\n", name, caught, ran);
  EXPECT_GE(caught, 1) << name << " went unnoticed";
}

// Verify mode (ENCORE_VERIFY) compares a deciding step's replays with eager runs: a replay that
// takes the other alternative is reported, naming the buffer that differs.
TEST(FlowPropertyMutation, VerifyModeCatchesTheOtherBranch) {
  Kernels* k = cl_kernels();
  if (!k) GTEST_SKIP() << "no OpenCL device";
  const Device& dev = k->dev;
  Vars v;
  Buffer y = dev.alloc<float>(n), x = dev.alloc<float>(n);
  dev.fill(x, 0.5f);
  TinyJit jit([&](BoundVar) {
    dev.when(v.b, [&] { dev.launch(k->axpy, {n}, {}, y, x, 1.0f); }, [&] { dev.launch(k->axpy, {n}, {}, y, x, -1.0f); });
    return y;
  }, JitOptions{.verify = 4});
  struct Restore {
    ~Restore() { encore::testing::flow_other_branch = false; }
  } restore;
  for (int i = 0; i < 2; ++i) jit(v.b.bind(i % 2));
  encore::testing::flow_other_branch = true;
  try {
    jit(v.b.bind(1));
    ADD_FAILURE() << "verify mode did not see the replay take the other alternative";
  } catch (const JitError& e) {
    EXPECT_NE(std::string(e.what()).find("TinyJit verify: replay differs from eager execution"), std::string::npos) << e.what();
  }
}

TEST(FlowPropertyMutation, TheOtherBranchIsCaught) { expect_caught(encore::testing::flow_other_branch, "flow_other_branch"); }
TEST(FlowPropertyMutation, AStaleHostValueIsCaught) { expect_caught(encore::testing::flow_stale_host, "flow_stale_host"); }
TEST(FlowPropertyMutation, ALoopOneShortIsCaught) { expect_caught(encore::testing::flow_loop_short, "flow_loop_short"); }

}  // namespace
