// Overlap between two devices: a step whose cross-device copy creates one real dependency, run
//   eager   through encore directly (a copy waits for everything queued before it on the source
//           device, and the source waits for the copy);
//   replay  through TinyJit (a copy waits only for its writer; the source waits only to overwrite);
//   hand    a hand-written OpenCL loop with exactly the one event the dependency needs.
// The step, with T one spin kernel's time:
//   a: a1 = spin(x, T)         b: b1 = spin(y, 2T)
//   b: c = copy of a1 (after b1 on b's in-order queue)
//   a: a2 = spin(a1, 2T)       b: b2 = spin(c, T)
// Eagerly a2 waits for the copy, so for b1: about 4T. With only the dependency: about 3T.
// Devices: two sub-devices of the default device (Device::split(2), one compute unit each, so the
// two really run side by side on a 2-core machine), or BENCH_OVERLAP_PAIR=1 for the first two of
// Device::list() (POCL_DEVICES="pthread pthread").
//   bench-overlap --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
// Prints a table of medians over repetitions with the ratios eager/replay and replay/hand.
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"

namespace {

constexpr size_t kN = 4096;
constexpr const char* kSrc = R"(
__kernel void spin(__global const float* x, __global float* y, int iters) {
  size_t i = get_global_id(0);
  float v = x[i];
  for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
  y[i] = v;
})";

void die(const std::string& what) {
  std::fprintf(stderr, "bench-overlap: %s\n", what.c_str());
  std::exit(1);
}

struct Setup {
  encore::Device a, b;
  encore::Kernel spin_a, spin_b;
  encore::Buffer x, y;
  int iters = 0;  // T
};

Setup& setup() {
  static Setup* s = [] {
    auto* r = new Setup;
    try {
      if (const char* p = std::getenv("BENCH_OVERLAP_PAIR"); p && *p == '1') {
        auto list = encore::Device::list();
        if (list.size() < 2) die("BENCH_OVERLAP_PAIR=1 needs two OpenCL devices (POCL_DEVICES=\"pthread pthread\")");
        r->a = encore::Device::open(list[0].id);
        r->b = encore::Device::open(list[1].id);
      } else {
        auto parts = encore::Device::open().split(2);
        r->a = parts[0];
        r->b = parts[1];
      }
    } catch (const std::exception& e) {
      die(e.what());
    }
    r->spin_a = r->a.compile(kSrc).kernel("spin");
    r->spin_b = r->b.compile(kSrc).kernel("spin");
    r->x = r->a.alloc<float>(kN);
    r->y = r->b.alloc<float>(kN);
    r->x.copyin(std::vector<float>(kN, 1.f));
    r->y.copyin(std::vector<float>(kN, 2.f));
    r->iters = std::getenv("BENCH_OVERLAP_ITERS") ? std::atoi(std::getenv("BENCH_OVERLAP_ITERS")) : 2000;
    return r;
  }();
  return *s;
}

std::pair<encore::Buffer, encore::Buffer> step(const encore::Buffer& x, const encore::Buffer& y) {
  Setup& s = setup();
  encore::Buffer a1 = s.a.alloc<float>(kN), b1 = s.b.alloc<float>(kN), c = s.b.alloc<float>(kN);
  encore::Buffer a2 = s.a.alloc<float>(kN), b2 = s.b.alloc<float>(kN);
  s.a.launch(s.spin_a, {kN}, {}, x, a1, s.iters);
  s.b.launch(s.spin_b, {kN}, {}, y, b1, 2 * s.iters);
  s.b.copy(c, a1);
  s.a.launch(s.spin_a, {kN}, {}, a1, a2, 2 * s.iters);
  s.b.launch(s.spin_b, {kN}, {}, c, b2, s.iters);
  return {a2, b2};
}

void finish_both() {
  Setup& s = setup();
  s.a.synchronize();
  s.b.synchronize();
}

void BM_eager(benchmark::State& st) {
  Setup& s = setup();
  for (auto _ : st) {
    auto r = step(s.x, s.y);
    finish_both();
  }
}

void BM_replay(benchmark::State& st) {
  Setup& s = setup();
  encore::TinyJit jit(step);
  for (int i = 0; i < 3; ++i) jit(s.x, s.y);
  finish_both();
  for (auto _ : st) {
    jit(s.x, s.y);
    finish_both();
  }
}

void check(cl_int st, const char* what) {
  if (st != CL_SUCCESS) die(std::string(what) + " failed: " + std::to_string(st));
}

void BM_hand(benchmark::State& st) {
  Setup& s = setup();
  cl_context ctx = encore::opencl::context(s.a);
  if (ctx != encore::opencl::context(s.b)) die("the two devices do not share a context");
  cl_device_id ids[2] = {encore::opencl::device_id(s.a), encore::opencl::device_id(s.b)};
  cl_command_queue qa = encore::opencl::queue(s.a), qb = encore::opencl::queue(s.b);
  cl_int err = CL_SUCCESS;
  const char* src = kSrc;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 2, ids, "", nullptr, nullptr), "clBuildProgram");
  cl_mem a1 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * 4, nullptr, &err), b1 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * 4, nullptr, &err);
  cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * 4, nullptr, &err), a2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * 4, nullptr, &err);
  cl_mem b2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * 4, nullptr, &err);
  cl_mem x = encore::opencl::native(s.x), y = encore::opencl::native(s.y);
  auto kernel = [&](cl_mem in, cl_mem out, int iters) {
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    check(err, "clCreateKernel");
    clSetKernelArg(k, 0, sizeof in, &in);
    clSetKernelArg(k, 1, sizeof out, &out);
    clSetKernelArg(k, 2, sizeof iters, &iters);
    return k;
  };
  cl_kernel ka1 = kernel(x, a1, s.iters), kb1 = kernel(y, b1, 2 * s.iters), ka2 = kernel(a1, a2, 2 * s.iters), kb2 = kernel(c, b2, s.iters);
  size_t g = kN, l = 256;
  for (auto _ : st) {
    cl_event done_a1 = nullptr, copied = nullptr;
    check(clEnqueueNDRangeKernel(qa, ka1, 1, nullptr, &g, &l, 0, nullptr, &done_a1), "a1");
    clFlush(qa);
    check(clEnqueueNDRangeKernel(qb, kb1, 1, nullptr, &g, &l, 0, nullptr, nullptr), "b1");
    check(clEnqueueCopyBuffer(qb, a1, c, 0, 0, kN * 4, 1, &done_a1, &copied), "copy");
    clFlush(qb);
    check(clEnqueueNDRangeKernel(qa, ka2, 1, nullptr, &g, &l, 0, nullptr, nullptr), "a2");  // reads a1 only: no wait
    check(clEnqueueNDRangeKernel(qb, kb2, 1, nullptr, &g, &l, 0, nullptr, nullptr), "b2");
    check(clEnqueueBarrierWithWaitList(qa, 1, &copied, nullptr), "barrier");  // before a1 is overwritten next round
    clFinish(qa);
    clFinish(qb);
    clReleaseEvent(done_a1);
    clReleaseEvent(copied);
  }
  for (cl_kernel k : {ka1, kb1, ka2, kb2}) clReleaseKernel(k);
  for (cl_mem m : {a1, b1, c, a2, b2}) clReleaseMemObject(m);
  clReleaseProgram(prog);
}

// Medians over repetitions, then the ratios.
class Summary : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {  // every repetition, or only the median with --benchmark_report_aggregates_only
      if (r.run_type == Run::RT_Iteration) times_[r.run_name.function_name].push_back(r.GetAdjustedRealTime());
      else if (r.aggregate_name == "median") medians_[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
  }
  double median(const std::string& name) {
    auto& v = times_[name];
    if (v.empty()) return medians_.count(name) ? medians_[name] : -1;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  void print() {
    double e = median("eager"), r = median("replay"), h = median("hand");
    std::printf("\nmedian step time (%s + %s): eager %.2f ms, replay %.2f ms, hand %.2f ms; eager/replay %.2fx, replay/hand %.2fx\n",
                setup().a.id().c_str(), setup().b.id().c_str(), e, r, h, e / r, r / h);
  }

 private:
  std::map<std::string, std::vector<double>> times_;
  std::map<std::string, double> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  if (encore::Device::list().empty()) {
    std::printf("bench-overlap: no OpenCL device\n");
    return 0;
  }
  benchmark::RegisterBenchmark("eager", BM_eager)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("replay", BM_replay)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("hand", BM_hand)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Summary rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  rep.print();
  benchmark::Shutdown();
  return 0;
}
