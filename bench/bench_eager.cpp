// Eager launch overhead: N tiny kernels (1024 floats, x = x*1.0001f + 0.5f, in place) launched
// through encore's Device::launch vs the same kernel launched by a hand-written OpenCL loop
// (clSetKernelArg + clEnqueueNDRangeKernel on its own context, queue and kernel), both ending with
// a finish. Reports µs per kernel and, at the end, the ratio eager / hand-written per N.
// Goal (issue 2): eager <= 1.5x the hand-written loop at N >= 100.
//   bench-eager --benchmark_min_time=0.2 --benchmark_repetitions=5
// ENCORE_DEVICE picks the device (default: the first GPU, else the first OpenCL device).
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone
#include "encore/encore.hpp"

namespace {

constexpr size_t kElems = 1024;
constexpr size_t kLocal = 256;  // what encore chooses for 1024: the largest of {256, 128, ..., 1} dividing it
const char* kSource =
    "__kernel void bench_scale(__global float* x) {\n"
    "  size_t i = get_global_id(0);\n"
    "  x[i] = x[i] * 1.0001f + 0.5f;\n"
    "}\n";

void check(cl_int st, const char* what) {
  if (st != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed with " + encore::cl_status_name(st));
}

// The cl_device_id that encore calls "CL:N" (the same enumeration: platforms in order, all types).
cl_device_id cl_device_for(const std::string& id) {
  if (id.rfind("CL:", 0) != 0) throw std::runtime_error("not an OpenCL device: " + id);
  size_t want = std::stoul(id.substr(3));
  cl_uint np = 0;
  check(clGetPlatformIDs(0, nullptr, &np), "clGetPlatformIDs");
  std::vector<cl_platform_id> ps(np);
  check(clGetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
  size_t n = 0;
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ds(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : ds)
      if (n++ == want) return d;
  }
  throw std::runtime_error("no such device " + id);
}

// The hand-written baseline: its own context, queue, program, kernel and buffer.
struct RawCl {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  cl_program prog = nullptr;
  cl_kernel k = nullptr;
  cl_mem x = nullptr;

  explicit RawCl(cl_device_id dev) {
    cl_int err = CL_SUCCESS;
    ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    q = encore::cl::create_queue(ctx, dev, 0, &err);
    check(err, "clCreateCommandQueue");
    prog = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr), "clBuildProgram");
    k = clCreateKernel(prog, "bench_scale", &err);
    check(err, "clCreateKernel");
    std::vector<float> init(kElems, 1.f);
    x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kElems * sizeof(float), nullptr, &err);
    check(err, "clCreateBuffer");
    check(clEnqueueWriteBuffer(q, x, CL_TRUE, 0, kElems * sizeof(float), init.data(), 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }
  ~RawCl() {
    if (q) clFinish(q);
    if (x) clReleaseMemObject(x);
    if (k) clReleaseKernel(k);
    if (prog) clReleaseProgram(prog);
    if (q) clReleaseCommandQueue(q);
    if (ctx) clReleaseContext(ctx);
  }
  void run(int64_t n) {
    const size_t global = kElems, local = kLocal;
    for (int64_t i = 0; i < n; ++i) {
      check(clSetKernelArg(k, 0, sizeof x, &x), "clSetKernelArg");
      check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
    }
    check(clFinish(q), "clFinish");
  }
};

void per_kernel_counter(benchmark::State& state, int64_t n) {
  // seconds per kernel (shown in µs): iterations * n kernels over the measured time, inverted
  state.counters["per_kernel"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                                               benchmark::Counter::kInvert);
}

void BM_HandWritten(benchmark::State& state) {
  const int64_t n = state.range(0);
  encore::Device dev;
  try {
    dev = encore::Device::open();
    if (dev.is_null()) return state.SkipWithError("ENCORE_DEVICE is NULL: no OpenCL device to compare with");
    static RawCl* raw = new RawCl(cl_device_for(dev.id()));  // one set of objects for all runs
    raw->run(1);                                             // warm: compiles the launch configuration
    for (auto _ : state) raw->run(n);
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  per_kernel_counter(state, n);
}

void eager_loop(benchmark::State& state, const encore::Device& dev) {
  const int64_t n = state.range(0);
  encore::Kernel k = dev.compile(kSource).kernel("bench_scale");
  encore::Buffer x = dev.alloc<float>(kElems);
  x.copyin(std::vector<float>(kElems, 1.f));
  dev.launch(k, {kElems}, {}, x);  // warm
  dev.synchronize();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) dev.launch(k, {kElems}, {}, x);
    dev.synchronize();
  }
  per_kernel_counter(state, n);
}

void BM_Eager(benchmark::State& state) {
  encore::Device dev;
  try {
    dev = encore::Device::open();
    if (dev.is_null()) return state.SkipWithError("ENCORE_DEVICE is NULL: no OpenCL device to compare with");
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  eager_loop(state, dev);
}

// encore's own host cost: the same eager path on the NULL device, where launches do nothing.
void BM_EagerNull(benchmark::State& state) { eager_loop(state, encore::Device::open("NULL")); }

BENCHMARK(BM_HandWritten)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Eager)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_EagerNull)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Console output as usual, and the real time per iteration of every run kept for the ratio table
// (the median aggregate when repetitions are asked for, else the mean of the runs).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(isatty(1) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      std::string family = r.run_name.function_name;  // "BM_Eager"
      int64_t n = std::stoll(r.run_name.args.empty() ? "0" : r.run_name.args);
      double us = r.GetAdjustedRealTime();              // in the benchmark's unit: µs per iteration
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[{family, n}] = us;
      } else {
        auto& s = sums_[{family, n}];
        s.first += us;
        s.second += 1;
      }
    }
  }
  double per_iteration_us(const std::string& family, int64_t n) const {
    if (auto it = median_.find({family, n}); it != median_.end()) return it->second;
    if (auto it = sums_.find({family, n}); it != sums_.end()) return it->second.first / it->second.second;
    return -1;
  }

 private:
  std::map<std::pair<std::string, int64_t>, double> median_;
  std::map<std::pair<std::string, int64_t>, std::pair<double, int>> sums_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  std::printf("\nµs per kernel (launch + share of the final finish)%s\n", "");
  std::printf("%6s %12s %12s %12s %8s\n", "N", "hand-written", "eager", "eager NULL", "ratio");
  for (int64_t n : {1, 10, 100, 1000}) {
    double h = rep.per_iteration_us("BM_HandWritten", n), e = rep.per_iteration_us("BM_Eager", n),
           z = rep.per_iteration_us("BM_EagerNull", n);
    if (h < 0 && e < 0 && z < 0) continue;
    auto cell = [&](double v) { return v < 0 ? -1.0 : v / static_cast<double>(n); };
    std::printf("%6lld %12.3f %12.3f %12.3f %8.2f%s\n", static_cast<long long>(n), cell(h), cell(e), cell(z),
                h > 0 && e > 0 ? e / h : 0.0, n >= 100 && h > 0 && e > 0 ? (e / h <= 1.5 ? "  (goal <= 1.5: met)" : "  (goal <= 1.5: MISSED)") : "");
  }
  benchmark::Shutdown();
  return 0;
}
