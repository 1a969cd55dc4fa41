// Steps that decide (encore/control.hpp), measured:
//   host_item/paired/CL   one step with a host item (reduce, read two floats, set a Variable, scale)
//                         against the same work as two jits with a copyout and a bind between,
//                         step by step in one loop (order rotating); reports both medians and
//                         their ratio (the goal: <= 1.0), and the median of the same two kernels as
//                         one step with the value bound instead (no host item): the difference is
//                         the cost of the host item (its round trip)
//   host_item/paired/NULL the same on NULL: the host's own cost of a host item (no device round trip)
//   loop/repeat/NULL/K    a counted loop of K iterations of a one-kernel body, per iteration
//   loop/replays/NULL/K   the same work as K replays of a one-kernel step, per replay
//   loop/unrolled/NULL/K  a K-kernel straight step, per item (the replay loop's own cost per item)
//   loop_while/CL/K       a loop until a condition that holds K times, per iteration (a round trip each)
// Usage: bench-flow [--benchmark_filter=...] (Google Benchmark flags).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <encore/encore.hpp>

using namespace encore;

namespace {

const char* kSrc = R"CL(
__kernel void b_sums(__global const float* x, __global float* s, int n) {
  float a = 0.0f, b = 0.0f;
  for (int i = 0; i < n; ++i) { a += x[i]; b += x[i] * x[i]; }
  s[0] = a; s[1] = b;
}
__kernel void b_scale(__global const float* x, __global float* y, float q) { size_t i = get_global_id(0); y[i] = x[i] * q; }
__kernel void b_add(__global float* y, float v) { y[get_global_id(0)] += v; }
__kernel void b_count(__global int* c, __global int* r) { c[0] += 1; r[0] = c[0]; }
)CL";

struct Env {
  Device dev;
  Program prog;
  Kernel sums, scale, add, count;
  explicit Env(Device d)
      : dev(d), prog(d.compile(kSrc)), sums(prog.kernel("b_sums")), scale(prog.kernel("b_scale")), add(prog.kernel("b_add")),
        count(prog.kernel("b_count")) {}
};

Env* env(const std::string& name) {
  static Env* cl = nullptr;
  static Env* null = nullptr;
  try {
    if (name == "NULL") return null ? null : (null = new Env(Device::open("NULL")));
    return cl ? cl : (cl = new Env(Device::open()));
  } catch (const Error&) {
    return nullptr;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_host_item_paired(benchmark::State& state, const char* device) {
  Env* e = env(device);
  if (!e || (e->dev.is_null() && std::string(device) != "NULL")) {
    state.SkipWithError("no OpenCL device");
    return;
  }
  Device dev = e->dev;
  const int n = 1024;
  Variable q = Variable::f32("q");
  Buffer x = dev.alloc<float>(n), y = dev.alloc<float>(n), s = dev.alloc<float>(2);
  dev.fill(x, 0.5f);
  TinyJit one([&] {
    dev.launch(e->sums, {1}, {}, x, s, n);
    dev.host({s}, {q}, [q](HostCtx& c) { c.set(q, static_cast<double>(c.read<float>(0, 1) / (1.0f + c.read<float>(0, 0)))); });
    dev.launch(e->scale, {n}, {}, x, y, q);
  });
  TinyJit first([&] { dev.launch(e->sums, {1}, {}, x, s, n); });
  TinyJit second([&](BoundVar) { dev.launch(e->scale, {n}, {}, x, y, q); });
  TinyJit plain([&](BoundVar) {
    dev.launch(e->sums, {1}, {}, x, s, n);
    dev.launch(e->scale, {n}, {}, x, y, q);
  });
  auto bound = [&] { plain(q.bind(0.25)); };
  float host[2];
  auto two = [&] {
    first();
    s.copyout(std::span<float>(host, 2));
    second(q.bind(static_cast<double>(host[1] / (1.0f + host[0]))));
  };
  for (int i = 0; i < 3; ++i) {
    one();
    two();
    bound();
  }
  dev.synchronize();
  std::vector<double> t[3];
  int turn = 0;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) {  // each form first in turn
      const int w = (turn + k) % 3;
      auto a = clock::now();
      if (w == 0) one();
      else if (w == 1) two();
      else bound();
      dev.synchronize();
      t[w].push_back(std::chrono::duration<double, std::micro>(clock::now() - a).count());
    }
    turn = (turn + 1) % 3;
  }
  state.counters["one_step_us"] = median(t[0]);
  state.counters["two_jits_us"] = median(t[1]);
  state.counters["ratio"] = median(t[0]) / median(t[1]);
  state.counters["no_host_item_us"] = median(t[2]);
  state.counters["host_item_us"] = median(t[0]) - median(t[2]);
}

// The body's work K times: as a counted loop, as K replays, and as a K-item straight step.
void BM_loop(benchmark::State& state, const char* form) {
  Env* e = env("NULL");
  const int K = static_cast<int>(state.range(0));
  Device dev = e->dev;
  Buffer y = dev.alloc<float>(64);
  Variable k{"k", 0, 1 << 20};
  const std::string f = form;
  TinyJit loop([&](BoundVar) { dev.repeat(k, [&] { dev.launch(e->add, {64}, {}, y, 1.0f); }); });
  TinyJit body([&] { dev.launch(e->add, {64}, {}, y, 1.0f); });
  TinyJit straight([&] {
    for (int i = 0; i < K; ++i) dev.launch(e->add, {64}, {}, y, 1.0f);
  });
  auto run = [&] {
    if (f == "repeat") loop(k.bind(K));
    else if (f == "replays")
      for (int i = 0; i < K; ++i) body();
    else straight();
  };
  for (int i = 0; i < 3; ++i) run();
  for (auto _ : state) run();
  state.counters["per_iteration"] = benchmark::Counter(static_cast<double>(state.iterations()) * K, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_loop_while(benchmark::State& state) {
  Env* e = env("CL");
  if (!e || e->dev.is_null()) {
    state.SkipWithError("no OpenCL device");
    return;
  }
  const int K = static_cast<int>(state.range(0));
  Device dev = e->dev;
  Buffer c = dev.alloc<int32_t>(1), r = dev.alloc<int32_t>(1);
  TinyJit jit([&] {
    dev.fill(c, 0);
    dev.loop_while(1 << 20, {r}, [&] { dev.launch(e->count, {1}, {}, c, r); }, [K](HostCtx& h) { return h.read<int32_t>(0) < K; });
  });
  for (int i = 0; i < 3; ++i) jit();
  for (auto _ : state) jit();
  state.counters["per_iteration"] = benchmark::Counter(static_cast<double>(state.iterations()) * K, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_host_item_paired, cl, "CL")->Name("host_item/paired/CL")->Iterations(2000)->UseRealTime();
BENCHMARK_CAPTURE(BM_host_item_paired, null, "NULL")->Name("host_item/paired/NULL")->Iterations(200000)->UseRealTime();
BENCHMARK_CAPTURE(BM_loop, repeat, "repeat")->Name("loop/repeat/NULL")->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(BM_loop, replays, "replays")->Name("loop/replays/NULL")->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(BM_loop, unrolled, "unrolled")->Name("loop/unrolled/NULL")->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_loop_while)->Name("loop_while/CL")->Arg(10)->Arg(100)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
