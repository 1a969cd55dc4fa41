// Cost of the capture check (JitOptions::capture.check_closure): call 0 records its items as well as
// running them, and the end of call 1 compares the two recordings. A chain of N launches, each
// writing a new temporary (a kernel with two buffers and two scalars), on NULL by default.
//   bench-warmup --benchmark_min_time=0.2
//   ENCORE_DEVICE=CL bench-warmup --benchmark_filter=/1000
// warmup/*: call 0 alone; record/capture: the same step recorded by an encore::Capture (the
// recording path alone, without the check's summary); first2/*: calls 0 and 1 (the capture:
// recording, check, prune, plan, bind). Counter per_item: time per item of the step.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "encore/encore.hpp"

namespace {

encore::Device device() {
  const char* d = std::getenv("ENCORE_DEVICE");
  return encore::Device::open(d && *d ? d : "NULL");
}

constexpr const char* kSrc =
    "__kernel void axpb(__global const float* x, __global float* y, float a, float b) { size_t i = get_global_id(0); y[i] = a * x[i] + b; }\n";

template <bool Check, int Calls> void bench(benchmark::State& state) {
  const encore::Device dev = device();
  const encore::Program p = dev.compile(kSrc);
  const encore::Kernel k = p.kernel("axpb");
  const encore::Buffer x = dev.alloc<float>(64);
  x.copyin(std::vector<float>(64, 1.f));
  const int64_t n = state.range(0);
  auto step = [&](const encore::Buffer& in) {
    encore::Buffer cur = in;
    for (int64_t i = 0; i < n; ++i) {
      encore::Buffer y = dev.alloc<float>(64);
      dev.launch(k, {64}, {}, cur, y, 1.0001f, 0.5f);
      cur = y;
    }
    return cur;
  };
  for (auto _ : state) {
    if (Calls == 0) {  // recording alone: what call 0 adds before the comparison's summary
      encore::Capture cap;
      benchmark::DoNotOptimize(step(x));
      dev.synchronize();
      continue;
    }
    encore::JitOptions o;
    o.capture.check_closure = Check;
    encore::TinyJit jit(step, o);
    for (int c = 0; c < Calls; ++c) benchmark::DoNotOptimize(jit(x));
    dev.synchronize();
  }
  state.counters["per_item"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(bench<false, 1>)->Name("warmup/nocheck")->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bench<true, 1>)->Name("warmup/check")->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bench<true, 0>)->Name("record/capture")->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bench<false, 2>)->Name("first2/nocheck")->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bench<true, 2>)->Name("first2/check")->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_MAIN();
