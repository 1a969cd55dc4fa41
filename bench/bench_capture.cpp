// Capture cost (record + prune + plan + bind) of steps where every item touches one buffer: an
// accumulator, an RNG state or a KV cache updated by every layer. Issue 8 item 14: this shape was
// quadratic (20,000 items: 8.8 s on NULL). Goal: 100,000 items under 1 s on NULL (release build).
//   bench-capture --benchmark_min_time=0.05                 # NULL (default)
//   ENCORE_DEVICE=CL bench-capture --benchmark_filter=/1000/  # on OpenCL
// Shapes: shared    every item `acc(state)`: state is inout in every item;
//         shared+check  the same, each capture checked against the last one's unit
//                  (Capture::check_against, as an engine recapturing its frame: the comparison
//                  is in the time, and the record is reserved at the last capture's size);
//         shared+temp  every item `acc2(state, t)` with a new temporary t per item (planned).
//         access/off|in|in+out|in+out-tried  every item `scale(x, y)`, y = 2x: the access check
//                  at capture (CaptureOptions::check_access) off, on with x inferred in (x read
//                  before and after each launch), on with encore::out(y) too (proven by the source,
//                  which only stores into y: no second run), and the same with a kernel that also
//                  reads back what it stored into y (the claim holds, but only a re-run on scratch
//                  copies can tell); what the check costs per checked launch.
// Counters: per_item (capture time per item), end (Capture::end(): prune, plan, bind).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>

#include "encore/encore.hpp"

namespace {

encore::Device device() {
  const char* d = std::getenv("ENCORE_DEVICE");
  return encore::Device::open(d && *d ? d : "NULL");
}

constexpr const char* kSrc =
    "__kernel void acc(__global float* s) { s[get_global_id(0)] += 1.0f; }\n"
    "__kernel void acc2(__global float* s, __global float* t) { size_t i = get_global_id(0); t[i] = s[i]; s[i] += t[i]; }\n";

template <bool Temp, bool Check = false> void capture(benchmark::State& state) {
  const encore::Device dev = device();
  const encore::Program p = dev.compile(kSrc);
  const encore::Kernel k = p.kernel(Temp ? "acc2" : "acc");
  const encore::Buffer s = dev.alloc<float>(64);
  s.copyin(std::vector<float>(64, 0.f));
  const int64_t n = state.range(0);
  double end_s = 0;
  encore::ExecutionUnit previous;
  for (auto _ : state) {
    encore::Capture cap;
    if (Check && previous) cap.check_against(previous);
    for (int64_t i = 0; i < n; ++i) {
      if (Temp) dev.launch(k, {64}, {}, s, dev.alloc<float>(64));
      else dev.launch(k, {64}, {}, s);
    }
    const auto t0 = std::chrono::steady_clock::now();
    encore::ExecutionUnit unit = cap.end();
    end_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(unit.stats());
    if (unit.stats().items_pruned != 0) state.SkipWithError("an item touching the shared buffer was pruned");
    if (Check) {
      state.PauseTiming();  // the last unit's teardown is not this capture's
      previous = std::move(unit);
      state.ResumeTiming();
    }
  }
  state.counters["per_item"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["end"] = benchmark::Counter(end_s, benchmark::Counter::kAvgIterations);
}

// Mode 0: check off (y given as encore::out); 1: on, x inferred in, y inout; 2: on, x in, encore::out(y);
// 3: as 2, y also read back in the kernel (so not proven by the source: each launch is tried).
template <int Mode> void capture_access(benchmark::State& state) {
  const encore::Device dev = device();
  const encore::Kernel k = dev.compile(Mode == 3 ? "__kernel void scale(__global float* x, __global float* y) { size_t i = get_global_id(0); y[i] = x[i]; y[i] = y[i] * 2.0f; }"
                                                 : "__kernel void scale(__global float* x, __global float* y) { size_t i = get_global_id(0); y[i] = x[i] * 2.0f; }")
                               .kernel("scale");
  const encore::Buffer x = dev.alloc<float>(64), y = dev.alloc<float>(64);
  x.copyin(std::vector<float>(64, 1.f));
  y.copyin(std::vector<float>(64, 0.f));
  encore::CaptureOptions opt;
  opt.check_access = Mode != 0;
  const int64_t n = state.range(0);
  for (auto _ : state) {
    encore::Capture cap({}, opt);
    for (int64_t i = 0; i < n; ++i) {
      if (Mode == 1) dev.launch(k, {64}, {}, x, y);
      else dev.launch(k, {64}, {}, x, encore::out(y));
    }
    encore::ExecutionUnit unit = cap.end();
    benchmark::DoNotOptimize(unit.stats());
  }
  state.counters["per_item"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(capture_access<0>)->Name("capture/access/off")->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture_access<1>)->Name("capture/access/in")->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture_access<2>)->Name("capture/access/in+out")->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture_access<3>)->Name("capture/access/in+out-tried")->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture<false>)->Name("capture/shared")->Arg(1000)->Arg(5000)->Arg(20000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture<false, true>)->Name("capture/shared+check")->Arg(20000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(capture<true>)->Name("capture/shared+temp")->Arg(1000)->Arg(20000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
