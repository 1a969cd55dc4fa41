// Replay overhead: a chain of K tiny kernels (1024 floats, y = x*1.0001f + 0.5f), K = 1, 10, 100,
// 1000, run three ways in one process:
//   eager   the step called directly through encore (allocates temps, sets args, enqueues);
//   replay  the same step through TinyJit (an ExecutionUnit replay);
//   hand    a hand-written OpenCL loop: one cl_kernel per chain element, arguments set once,
//           then only clEnqueueNDRangeKernel per kernel (local size 256, as encore chooses),
//           ping-ponging between two buffers;
//   hand_sub the same loop over one sub-buffer per chain element inside one arena, as encore's
//           memory planner lays the temporaries out (isolates the cost of sub-buffers);
//   paired  replay and hand in one loop, a step of each in turn, each step timed: the ratio of
//           their median steps (both see the same drift of a shared machine's speed);
// each iteration ends with a finish. On "CL" (the default OpenCL device, PoCL here) and on "NULL"
// (the no-op device: encore's own cost per item; no hand-written loop there).
//   bench-replay --benchmark_repetitions=5 --benchmark_min_time=0.2 --benchmark_enable_random_interleaving=true
// Counters: per_kernel (per_item on NULL), seconds with an SI prefix. At the end a table of medians over repetitions
// with the ratios replay/hand and eager/replay, and the paired rows' ratios. Goals (issue 18): replay
// <= 1.02x hand at K >= 10 on PoCL (the paired rows), <= 4.5 ns per item on NULL at K >= 100, and the
// launch-bound stencil below <= 1.00x its hand-written loop. The stencil_forms rows measure that
// loop against the best hand loops for the same step (the same in-flight bound, prebound kernels,
// command buffers): docs/performance.md.
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/opencl/cl_queue.hpp"  // header-only, <CL/cl.h> alone
#include "encore/encore.hpp"

namespace {

constexpr size_t kN = 1024;
constexpr size_t kLocal = 256;
constexpr int kChains[] = {1, 10, 100, 1000};
constexpr const char* kSrc =
    "__kernel void chain(__global const float* x, __global float* y) { size_t i = get_global_id(0); y[i] = x[i] * 1.0001f + 0.5f; }";

void die(const std::string& what) {
  std::fprintf(stderr, "bench-replay: %s\n", what.c_str());
  std::exit(1);
}

// ---- encore --------------------------------------------------------------------------------------

struct Chain {
  encore::Device dev;
  encore::Kernel k;
  int K;
  encore::Buffer operator()(const encore::Buffer& x) const {
    encore::Buffer cur = x;
    for (int i = 0; i < K; ++i) {
      encore::Buffer y = dev.alloc<float>(kN);
      dev.launch(k, {kN}, {}, cur, y);
      cur = y;
    }
    return cur;
  }
};

struct EncoreFixture {
  Chain chain;
  encore::Buffer x;
  encore::TinyJit<Chain> jit;
  EncoreFixture(const encore::Device& dev, const encore::Kernel& k, int K)
      : chain{dev, k, K}, x(dev.alloc<float>(kN)), jit(chain, encore::JitOptions{}) {
    std::vector<float> host(kN);
    for (size_t i = 0; i < kN; ++i) host[i] = static_cast<float>(i) * 0.001f;
    x.copyin(host);
    for (int i = 0; i < 4; ++i) jit(x);  // eager, capture, two replays
    dev.synchronize();
    if (!dev.is_null() && jit(x).copyout<float>() != chain(x).copyout<float>()) die("replay differs from eager");
    if (jit.unit().stats().items_replayed != static_cast<size_t>(K)) die("unexpected number of replayed items");
  }
};

struct DeviceState {
  encore::Device dev;
  encore::Kernel k;
  std::map<int, std::unique_ptr<EncoreFixture>> fixtures;
};

DeviceState& device_state(const std::string& name) {
  static std::map<std::string, std::unique_ptr<DeviceState>> states;
  auto& s = states[name];
  if (!s) {
    s = std::make_unique<DeviceState>();
    s->dev = name == "CL" ? encore::Device::open() : encore::Device::open(name);
    s->k = s->dev.compile(kSrc).kernel("chain");
  }
  return *s;
}

EncoreFixture& fixture(const std::string& dev_name, int K) {
  DeviceState& s = device_state(dev_name);
  auto& f = s.fixtures[K];
  if (!f) f = std::make_unique<EncoreFixture>(s.dev, s.k, K);
  return *f;
}

void set_counters(benchmark::State& state, int K, bool null) {
  // seconds per kernel (per item on NULL), shown with an SI prefix: "1.52u" is 1.52 us
  state.counters[null ? "per_item" : "per_kernel"] =
      benchmark::Counter(static_cast<double>(K), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_eager(benchmark::State& state, std::string dev, int K) {
  EncoreFixture& f = fixture(dev, K);
  for (auto _ : state) {
    encore::Buffer y = f.chain(f.x);
    benchmark::DoNotOptimize(y);
    f.chain.dev.synchronize();
  }
  set_counters(state, K, dev == "NULL");
}

void BM_replay(benchmark::State& state, std::string dev, int K) {
  EncoreFixture& f = fixture(dev, K);
  for (auto _ : state) {
    const encore::Buffer& y = f.jit(f.x);
    benchmark::DoNotOptimize(&y);
    f.chain.dev.synchronize();
  }
  set_counters(state, K, dev == "NULL");
}

// ---- hand-written OpenCL -------------------------------------------------------------------------

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cl_int st_ = (call);                                                                 \
    if (st_ != CL_SUCCESS) die(std::string(#call) + " failed: " + std::to_string(st_));  \
  } while (0)

struct HandChain {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  cl_program prog = nullptr;
  std::vector<cl_kernel> ks;
  cl_mem x = nullptr, ping = nullptr, pong = nullptr;

  // The device encore opens by default: first GPU, else the first OpenCL device.
  static cl_device_id pick(cl_platform_id* plat) {
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(0, nullptr, &np));
    std::vector<cl_platform_id> ps(np);
    CHECK(clGetPlatformIDs(np, ps.data(), nullptr));
    for (cl_device_type t : {static_cast<cl_device_type>(CL_DEVICE_TYPE_GPU), static_cast<cl_device_type>(CL_DEVICE_TYPE_ALL)})
      for (cl_platform_id p : ps) {
        cl_device_id d = nullptr;
        cl_uint nd = 0;
        if (clGetDeviceIDs(p, t, 1, &d, &nd) == CL_SUCCESS && nd > 0) {
          *plat = p;
          return d;
        }
      }
    die("no OpenCL device");
    return nullptr;
  }

  std::vector<cl_mem> subs;  // sub-buffer variant: one cl_mem per chain element, in one arena
  cl_mem arena = nullptr;

  explicit HandChain(int K, bool sub_buffers = false) {
    cl_platform_id plat = nullptr;
    cl_device_id dev = pick(&plat);
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(plat), 0};
    ctx = clCreateContext(props, 1, &dev, nullptr, nullptr, &err);
    CHECK(err);
    q = encore::cl::create_queue(ctx, dev, 0, &err);
    CHECK(err);
    const char* src = kSrc;
    prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr));
    std::vector<float> host(kN);
    for (size_t i = 0; i < kN; ++i) host[i] = static_cast<float>(i) * 0.001f;
    x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kN * sizeof(float), host.data(), &err);
    CHECK(err);
    ping = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * sizeof(float), nullptr, &err);
    CHECK(err);
    pong = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kN * sizeof(float), nullptr, &err);
    CHECK(err);
    if (sub_buffers) {
      arena = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * kN * sizeof(float), nullptr, &err);
      CHECK(err);
      for (int i = 0; i < K; ++i) {
        cl_buffer_region r{(i % 2) * kN * sizeof(float), kN * sizeof(float)};
        subs.push_back(clCreateSubBuffer(arena, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err));
        CHECK(err);
      }
    }
    for (int i = 0; i < K; ++i) {
      cl_kernel k = clCreateKernel(prog, "chain", &err);
      CHECK(err);
      cl_mem in = i == 0 ? x : sub_buffers ? subs[i - 1] : (i % 2 ? ping : pong);
      cl_mem out = sub_buffers ? subs[i] : i % 2 ? pong : ping;
      CHECK(clSetKernelArg(k, 0, sizeof in, &in));
      CHECK(clSetKernelArg(k, 1, sizeof out, &out));
      ks.push_back(k);
    }
    run();
    run();
  }
  void run() {
    const size_t g = kN, l = kLocal;
    for (cl_kernel k : ks) CHECK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &l, 0, nullptr, nullptr));
    CHECK(clFinish(q));
  }
  ~HandChain() {
    for (cl_kernel k : ks) clReleaseKernel(k);
    for (cl_mem m : subs) clReleaseMemObject(m);
    for (cl_mem m : {x, ping, pong, arena})
      if (m) clReleaseMemObject(m);
    if (prog) clReleaseProgram(prog);
    if (q) clReleaseCommandQueue(q);
    if (ctx) clReleaseContext(ctx);
  }
};

HandChain& hand_chain(int K, bool sub_buffers) {
  static std::map<std::pair<int, bool>, std::unique_ptr<HandChain>> chains;
  auto& c = chains[{K, sub_buffers}];
  if (!c) c = std::make_unique<HandChain>(K, sub_buffers);
  return *c;
}

void BM_hand(benchmark::State& state, int K, bool sub_buffers) {
  HandChain& c = hand_chain(K, sub_buffers);
  for (auto _ : state) c.run();
  set_counters(state, K, false);
}

// ---- replay and hand in one loop, step by step ----------------------------------------------------
// On a shared machine the speed drifts over seconds by more than the difference measured here, so
// the separate benchmarks above need many interleaved rounds. This one runs one replayed step and one
// hand-written step in turn (which goes first alternating), times each, and reports the ratio of the
// two median step times: both medians see the same drift.
// The median (of the two middle values for an even count; 0 for none); reorders v.
double median_of(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double hi = v[n / 2];
  if (n % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2)));
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Runs `replay` and `hand` in turn (which goes first alternating), each timed (wall and the calling
// thread's CPU), and sets the ratios of their median times: "ratio", "host_ratio".
template <class R, class H> void run_paired(benchmark::State& state, R&& replay, H&& hand) {
  std::vector<double> wall[2], cpu[2];  // [0] replay, [1] hand
  for (auto* v : {&wall[0], &wall[1], &cpu[0], &cpu[1]}) v->reserve(1 << 16);
  auto timed = [&](int which, auto& step) {
    const double c0 = thread_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    wall[which].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu[which].push_back(thread_cpu_s() - c0);
  };
  bool replay_first = true;
  for (auto _ : state) {
    if (replay_first) timed(0, replay), timed(1, hand);
    else timed(1, hand), timed(0, replay);
    replay_first = !replay_first;
  }
  const double mr = median_of(wall[0]), mh = median_of(wall[1]), cr = median_of(cpu[0]), ch = median_of(cpu[1]);
  state.counters["ratio"] = mh > 0 ? mr / mh : 0;
  state.counters["host_ratio"] = ch > 0 ? cr / ch : 0;
}

void BM_paired(benchmark::State& state, int K) {
  EncoreFixture& f = fixture("CL", K);
  HandChain& h = hand_chain(K, false);
  auto replay = [&] {
    const encore::Buffer& y = f.jit(f.x);
    benchmark::DoNotOptimize(&y);
    f.chain.dev.synchronize();
  };
  auto hand = [&] { h.run(); };
  run_paired(state, replay, hand);
}

// ---- a launch-bound loop: one stencil kernel per step -------------------------------------------
// A 64x64 five-point stencil between two grids that swap roles every step, kSteps steps per
// iteration then a finish: replay (TinyJit over (src, dst), its two input slots swapping each call)
// vs a hand-written loop that sets both arguments and enqueues, every step. Here a replay's own
// extra commands would show, not the planner's or the chain's.
constexpr size_t kGrid = 64;
constexpr int kSteps = 2000;
constexpr const char* kStencilSrc = R"(
__kernel void stencil(__global const float* a, __global float* b) {
  int x = (int)get_global_id(0), y = (int)get_global_id(1), n = (int)get_global_size(0);
  float c = a[y * n + x];
  float l = x > 0 ? a[y * n + x - 1] : c, r = x < n - 1 ? a[y * n + x + 1] : c;
  float u = y > 0 ? a[(y - 1) * n + x] : c, d = y < n - 1 ? a[(y + 1) * n + x] : c;
  b[y * n + x] = c + 0.2f * (l + r + u + d - 4.0f * c);
})";

struct Stencil {
  encore::Device dev;
  encore::Kernel k;
  void operator()(const encore::Buffer& a, const encore::Buffer& b) const { dev.launch(k, {kGrid, kGrid}, {16, 16}, a, b); }
};

std::vector<float> stencil_init() {
  std::vector<float> h(kGrid * kGrid, 0.f);
  h[kGrid * kGrid / 2 + kGrid / 2] = 1000.f;
  return h;
}

// bound: -1 the default (3 replays, at least 64 items in flight), N >= 0: exactly N replays in
// flight (min_items_in_flight 0; 0: unbounded). run(): kSteps steps, then a wait for the device.
struct StencilReplay {
  encore::Device dev = encore::Device::open();
  Stencil st{dev, dev.compile(kStencilSrc).kernel("stencil")};
  encore::Buffer g[2] = {dev.alloc<float>(kGrid * kGrid), dev.alloc<float>(kGrid * kGrid)};
  std::map<int64_t, std::unique_ptr<encore::TinyJit<Stencil>>> jits;
  encore::TinyJit<Stencil>& jit(int64_t bound) {
    auto& j = jits[bound];
    if (!j) {
      encore::JitOptions o;
      if (bound >= 0) {
        o.unit.max_in_flight = static_cast<uint32_t>(bound);
        o.unit.min_items_in_flight = 0;
      }
      j = std::make_unique<encore::TinyJit<Stencil>>(st, o);
    }
    return *j;
  }
  void start() { g[0].copyin(stencil_init()); }
  void run(encore::TinyJit<Stencil>& j) {
    for (int i = 0; i < kSteps; ++i) j(g[i % 2], g[(i + 1) % 2]);
    dev.synchronize();
  }
  static StencilReplay& get() {
    static StencilReplay r;
    return r;
  }
};

// A kernel built from `src` in `base`'s context, for its device (the hand-written loops below).
cl_kernel hand_kernel(const HandChain& base, const char* src, const char* name) {
  cl_int err = CL_SUCCESS;
  cl_device_id dev = nullptr;
  CHECK(clGetCommandQueueInfo(base.q, CL_QUEUE_DEVICE, sizeof dev, &dev, nullptr));
  cl_program prog = clCreateProgramWithSource(base.ctx, 1, &src, nullptr, &err);
  CHECK(err);
  CHECK(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr));
  cl_kernel k = clCreateKernel(prog, name, &err);
  CHECK(err);
  clReleaseProgram(prog);
  return k;
}

// The hand-written loop: both arguments set and the kernel enqueued every step, then a finish. Its
// other forms, each a way a careful programmer might cut the host's cost (the stencil rows compare
// them, so that what encore adds is measured against the best a hand loop does on this device):
//   bounded   the same in-flight bound as encore's default for a one-kernel step (64 launches in 2
//             groups of 32: the last launch of a group takes an event, the first waits for the
//             event of the group before the last), so replay and hand both pay the bound's waits;
//   prebound  one kernel object per parity with its arguments set once (no clSetKernelArg);
//   cmdbuf    one cl_khr_command_buffer per parity, recorded once (simultaneous use), enqueued
//             every step; only on a device that offers it (PoCL 3.1 does);
//   spinning  the plain loop plus `spin_ns` of busy host work before each step's enqueue: set to
//             what encore's TinyJit call costs on NULL in the same process (stencil_forms/3), so
//             it shows what that much host time costs any loop on this device.
struct StencilHand {
  HandChain base{1};  // its context and queue
  cl_kernel k = nullptr, pre[2] = {nullptr, nullptr};
  cl_mem g[2] = {nullptr, nullptr};
  cl_event ends[2] = {nullptr, nullptr};
  clEnqueueCommandBufferKHR_fn enqueue_cb = nullptr;
  cl_command_buffer_khr cb[2] = {nullptr, nullptr};
  StencilHand() {
    cl_int err = CL_SUCCESS;
    k = hand_kernel(base, kStencilSrc, "stencil");
    for (cl_mem& m : g) {
      m = clCreateBuffer(base.ctx, CL_MEM_READ_WRITE, kGrid * kGrid * sizeof(float), nullptr, &err);
      CHECK(err);
    }
    const size_t gws[2] = {kGrid, kGrid}, lws[2] = {16, 16};
    for (int i = 0; i < 2; ++i) {
      pre[i] = hand_kernel(base, kStencilSrc, "stencil");
      CHECK(clSetKernelArg(pre[i], 0, sizeof(cl_mem), &g[i]));
      CHECK(clSetKernelArg(pre[i], 1, sizeof(cl_mem), &g[1 - i]));
    }
    cl_device_id dev = nullptr;
    cl_platform_id plat = nullptr;
    CHECK(clGetCommandQueueInfo(base.q, CL_QUEUE_DEVICE, sizeof dev, &dev, nullptr));
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, nullptr));
    size_t n = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, nullptr, &n));
    std::string ext(n, '\0');
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, n, ext.data(), nullptr));
    if (ext.find("cl_khr_command_buffer ") == std::string::npos && !ext.ends_with("cl_khr_command_buffer")) return;
    auto create = reinterpret_cast<clCreateCommandBufferKHR_fn>(clGetExtensionFunctionAddressForPlatform(plat, "clCreateCommandBufferKHR"));
    auto record = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(clGetExtensionFunctionAddressForPlatform(plat, "clCommandNDRangeKernelKHR"));
    auto finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(clGetExtensionFunctionAddressForPlatform(plat, "clFinalizeCommandBufferKHR"));
    enqueue_cb = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(clGetExtensionFunctionAddressForPlatform(plat, "clEnqueueCommandBufferKHR"));
    if (!create || !record || !finalize || !enqueue_cb) {
      enqueue_cb = nullptr;
      return;
    }
    const cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    for (int i = 0; i < 2; ++i) {
      cb[i] = create(1, &base.q, props, &err);
      CHECK(err);
      CHECK(record(cb[i], nullptr, nullptr, pre[i], 2, nullptr, gws, lws, 0, nullptr, nullptr, nullptr));
      CHECK(finalize(cb[i]));
    }
  }
  void start() {
    std::vector<float> h = stencil_init();
    CHECK(clEnqueueWriteBuffer(base.q, g[0], CL_TRUE, 0, h.size() * sizeof(float), h.data(), 0, nullptr, nullptr));
  }
  // step i of the plain loop: its two arguments set, its launch enqueued (with an event into `ev`)
  void step(int i, cl_event* ev = nullptr) {
    const size_t gws[2] = {kGrid, kGrid}, lws[2] = {16, 16};
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &g[i % 2]));
    CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &g[(i + 1) % 2]));
    CHECK(clEnqueueNDRangeKernel(base.q, k, 2, nullptr, gws, lws, 0, nullptr, ev));
  }
  void run() {
    for (int i = 0; i < kSteps; ++i) step(i);
    CHECK(clFinish(base.q));
  }
  void run_bounded() {
    constexpr int kGroup = 32;
    for (int i = 0; i < kSteps; ++i) {
      const int group = (i / kGroup) % 2;
      if (i % kGroup == 0 && ends[group]) {
        CHECK(clWaitForEvents(1, &ends[group]));
        CHECK(clReleaseEvent(ends[group]));
        ends[group] = nullptr;
      }
      step(i, i % kGroup == kGroup - 1 ? &ends[group] : nullptr);
    }
    CHECK(clFinish(base.q));
    for (cl_event& e : ends)
      if (e) {
        CHECK(clReleaseEvent(e));
        e = nullptr;
      }
  }
  void run_spinning(double spin_ns) {
    for (int i = 0; i < kSteps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() < spin_ns) {
      }
      step(i);
    }
    CHECK(clFinish(base.q));
  }
  void run_prebound() {
    const size_t gws[2] = {kGrid, kGrid}, lws[2] = {16, 16};
    for (int i = 0; i < kSteps; ++i) CHECK(clEnqueueNDRangeKernel(base.q, pre[i % 2], 2, nullptr, gws, lws, 0, nullptr, nullptr));
    CHECK(clFinish(base.q));
  }
  void run_cmdbuf() {
    for (int i = 0; i < kSteps; ++i) CHECK(enqueue_cb(0, nullptr, cb[i % 2], 0, nullptr, nullptr));
    CHECK(clFinish(base.q));
  }
  static StencilHand& get() {
    static StencilHand h;
    return h;
  }
};

void set_step_counter(benchmark::State& state) {
  state.counters["per_step"] =
      benchmark::Counter(static_cast<double>(kSteps), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// range(0): the bound (StencilReplay)
void BM_stencil_replay(benchmark::State& state) {
  StencilReplay& r = StencilReplay::get();
  encore::TinyJit<Stencil>& j = r.jit(state.range(0));
  r.start();
  for (auto _ : state) r.run(j);
  set_step_counter(state);
}

void BM_stencil_hand(benchmark::State& state) {
  StencilHand& h = StencilHand::get();
  h.start();
  for (auto _ : state) h.run();
  set_step_counter(state);
}

// Both in one loop, 2000 steps of each in turn (run_paired).
void BM_stencil_paired(benchmark::State& state) {
  StencilReplay& r = StencilReplay::get();
  StencilHand& h = StencilHand::get();
  encore::TinyJit<Stencil>& j = r.jit(state.range(0));
  r.start();
  h.start();
  auto replay = [&] { r.run(j); };
  auto hand = [&] { h.run(); };
  run_paired(state, replay, hand);
}

// The stencil's TinyJit call on NULL, its two input slots swapping every call: encore's own host cost
// per call of the launch-bound loop above (signature, input binding, the aliasing check, the
// replay), without PoCL's enqueue or the device.
struct StencilNull {
  encore::Device dev = encore::Device::open("NULL");
  Stencil st{dev, dev.compile(kStencilSrc).kernel("stencil")};
  encore::Buffer g[2] = {dev.alloc<float>(kGrid * kGrid), dev.alloc<float>(kGrid * kGrid)};
  encore::TinyJit<Stencil> jit{st, encore::JitOptions{}};
  int i = 0;
  StencilNull() {
    for (int w = 0; w < 4; ++w) call();  // warm-up, capture, replays
  }
  void call() {
    jit(g[i % 2], g[(i + 1) % 2]);
    ++i;
  }
  // ns per call: the median of 21 runs of 2000 calls
  double per_call_ns() {
    std::vector<double> t;
    for (int r = 0; r < 21; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int n = 0; n < kSteps; ++n) call();
      t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kSteps);
    }
    return median_of(t);
  }
  static StencilNull& get() {
    static StencilNull s;
    return s;
  }
};

void BM_stencil_null(benchmark::State& state) {
  StencilNull& s = StencilNull::get();
  for (auto _ : state) s.call();
  s.dev.synchronize();
}

// The same call with range(0) KiB of memory written between two calls, and only the call timed: on
// PoCL the enqueue and the device's workers evict the call's data between two steps, so this is the
// call as a real device's loop pays it (what it reads, in how many cache lines, more than how many
// instructions it runs).
constexpr int kColdKiB[] = {0, 64, 1024};
void BM_stencil_null_cold(benchmark::State& state) {
  StencilNull& s = StencilNull::get();
  std::vector<char> sweep(static_cast<size_t>(state.range(0)) * 1024);
  char n = 0;
  for (auto _ : state) {
    std::memset(sweep.data(), ++n, sweep.size());
    benchmark::ClobberMemory();
    const auto t0 = std::chrono::steady_clock::now();
    s.call();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  s.dev.synchronize();
}

// range(0): the other loop beside the plain hand loop: 0 encore's replay with the default bound
// against the hand loop with the same bound; 1 the prebound hand loop, 2 the command buffers, 3 the
// spinning hand loop (host work per step = the stencil's TinyJit call on NULL, measured first, in
// the counter spin_ns), each against the plain hand loop.
void BM_stencil_forms(benchmark::State& state) {
  StencilHand& h = StencilHand::get();
  h.start();
  auto plain = [&] { h.run(); };
  auto bounded = [&] { h.run_bounded(); };
  switch (state.range(0)) {
    case 0: {
      StencilReplay& r = StencilReplay::get();
      encore::TinyJit<Stencil>& j = r.jit(-1);
      r.start();
      auto replay = [&] { r.run(j); };
      return run_paired(state, replay, bounded);
    }
    case 1: {
      auto pre = [&] { h.run_prebound(); };
      return run_paired(state, pre, plain);
    }
    case 3: {
      const double spin_ns = StencilNull::get().per_call_ns();
      auto spinning = [&] { h.run_spinning(spin_ns); };
      run_paired(state, spinning, plain);
      state.counters["spin_ns"] = spin_ns;
      return;
    }
    default: {
      if (!h.enqueue_cb) return state.SkipWithError("no cl_khr_command_buffer on this device");
      auto cbuf = [&] { h.run_cmdbuf(); };
      return run_paired(state, cbuf, plain);
    }
  }
}

// ---- independent chains: concurrent replay ---------------------------------------------------------
// A step of kWide independent chains of kDeep small kernels (one work group of kLocal items each,
// in place: `reps` times y = y * 1.0001f + 0.5f), chain by chain: replay with concurrent replay
// (the device's lanes: each chain on one, in queue order) and with it off, each against the
// hand-written in-order loop of the same kernels, step by step in one loop (run_paired).
// range(0): 1 concurrent, 0 off; range(1): reps, 1 (a kernel of a few microseconds on PoCL: launch
// cost only) or 128 (tens of microseconds: work a second core can take).
constexpr int kWide = 8, kDeep = 10;
constexpr const char* kWideSrc =
    "__kernel void inplace(__global float* y, int reps) {\n"
    "  size_t i = get_global_id(0); float v = y[i];\n"
    "  for (int r = 0; r < reps; ++r) v = v * 1.0001f + 0.5f;\n"
    "  y[i] = v; }";

struct Wide {
  encore::Device dev;
  encore::Kernel k;
  int reps = 1;
  void operator()(const std::vector<encore::Buffer>& ys) const {
    for (const encore::Buffer& y : ys)
      for (int d = 0; d < kDeep; ++d) dev.launch(k, {kLocal}, {kLocal}, y, reps);
  }
};

struct WideReplay {
  encore::Device dev = encore::Device::open();
  encore::Kernel k = dev.compile(kWideSrc).kernel("inplace");
  std::vector<encore::Buffer> ys;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<encore::TinyJit<Wide>>> jits;
  WideReplay() {
    for (int c = 0; c < kWide; ++c) ys.push_back(dev.alloc<float>(kLocal));
    for (auto& y : ys) y.copyin(std::vector<float>(kLocal, 1.f));
  }
  encore::TinyJit<Wide>& jit(int64_t concurrent, int64_t reps) {
    auto& j = jits[{concurrent, reps}];
    if (!j) {
      encore::JitOptions o;
      o.unit.concurrent = concurrent != 0;
      j = std::make_unique<encore::TinyJit<Wide>>(Wide{dev, k, static_cast<int>(reps)}, o);
      for (int i = 0; i < 4; ++i) (*j)(ys);
      if (j->unit().stats().chains != static_cast<size_t>(kWide)) die("the wide step is not 8 chains");
    }
    return *j;
  }
  static WideReplay& get() {
    static WideReplay r;
    return r;
  }
};

struct WideHand {
  HandChain base{1};  // its context and queue
  cl_kernel k = nullptr;
  std::vector<cl_mem> ys;
  WideHand() {
    cl_int err = CL_SUCCESS;
    k = hand_kernel(base, kWideSrc, "inplace");
    std::vector<float> h(kLocal, 1.f);
    for (int c = 0; c < kWide; ++c) {
      ys.push_back(clCreateBuffer(base.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kLocal * sizeof(float), h.data(), &err));
      CHECK(err);
    }
  }
  // one kernel object, its arguments set before each chain (as a hand-written loop would)
  void run(int reps) {
    const size_t g = kLocal, l = kLocal;
    CHECK(clSetKernelArg(k, 1, sizeof(int), &reps));
    for (cl_mem& y : ys) {
      CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &y));
      for (int d = 0; d < kDeep; ++d) CHECK(clEnqueueNDRangeKernel(base.q, k, 1, nullptr, &g, &l, 0, nullptr, nullptr));
    }
    CHECK(clFinish(base.q));
  }
  static WideHand& get() {
    static WideHand h;
    return h;
  }
};

void BM_wide_paired(benchmark::State& state) {
  WideReplay& r = WideReplay::get();
  WideHand& h = WideHand::get();
  const int reps = static_cast<int>(state.range(1));
  encore::TinyJit<Wide>& j = r.jit(state.range(0), reps);
  auto replay = [&] {
    j(r.ys);
    r.dev.synchronize();
  };
  auto hand = [&] { h.run(reps); };
  run_paired(state, replay, hand);
}

// ---- one unit per input signature: the lookup's cost ---------------------------------------------
// On NULL (encore's own cost only): a one-kernel step called with inputs of S different sizes in
// turn, S = 1, 2, 8 (each its own unit), per call. The difference to S = 1 is the signature lookup.
void BM_signatures(benchmark::State& state) {
  static encore::Device dev = encore::Device::open("NULL");
  static encore::Kernel k = dev.compile(kSrc).kernel("chain");
  const int S = static_cast<int>(state.range(0));
  auto step = [](const encore::Buffer& x) {
    encore::Buffer y = dev.alloc<float>(x.count());
    dev.launch(k, {x.count()}, {}, x, y);
    return y;
  };
  encore::TinyJit jit(step, encore::JitOptions{});
  std::vector<encore::Buffer> xs;
  for (int s = 0; s < S; ++s) xs.push_back(dev.alloc<float>(256 * (s + 1)));
  for (int r = 0; r < 3; ++r)
    for (const encore::Buffer& x : xs) jit(x);  // warm-up, capture, replay: every signature
  if (jit.units().size() != static_cast<size_t>(S)) die("unexpected number of units");
  int i = 0;
  for (auto _ : state) {
    const encore::Buffer& y = jit(xs[static_cast<size_t>(i)]);
    benchmark::DoNotOptimize(&y);
    i = i + 1 == S ? 0 : i + 1;
  }
}

// ---- the summary table ---------------------------------------------------------------------------

// Collects every iteration run (one per repetition) and prints medians with ratios at the end.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.error_occurred && r.iterations > 0)
      {
        const std::string key = r.run_name.function_name + (r.run_name.args.empty() ? "" : "/" + r.run_name.args);
        per_iter_s_[key].push_back(r.real_accumulated_time / static_cast<double>(r.iterations));
        cpu_iter_s_[key].push_back(r.cpu_accumulated_time / static_cast<double>(r.iterations));
        if (auto c = r.counters.find("ratio"); c != r.counters.end()) ratios_[key].push_back(c->second.value);
        if (auto c = r.counters.find("host_ratio"); c != r.counters.end()) host_ratios_[key].push_back(c->second.value);
      } else if (r.run_type == Run::RT_Aggregate) {
        aggregates_seen_ = true;
      }
  }
  // median seconds per iteration (wall, or the calling thread's CPU time), or -1
  double median(const std::string& name, bool cpu = false) const {
    const auto& m = cpu ? cpu_iter_s_ : per_iter_s_;
    auto it = m.find(name);
    if (it == m.end() || it->second.empty()) return -1;
    std::vector<double> v = it->second;
    return median_of(v);
  }
  void summary() const {
    // the summary is built from every repetition's run, which the aggregates-only flags withhold
    if (aggregates_seen_ && per_iter_s_.empty()) {
      std::printf("\nno summary: it needs each repetition's run, and --benchmark_report_aggregates_only (or "
                  "--benchmark_display_aggregates_only) passes only their aggregates\n");
      return;
    }
    std::printf("\nmedians per kernel (over %zu repetition(s))\n", reps());
    std::printf("wall time per kernel; host = CPU time of the enqueuing thread (what encore adds shows here: the\n"
                "device's own time and other processes' load do not)\n");
    if (double sh = median("stencil_hand"); sh > 0)
      for (auto [arg, what] : {std::pair{"-1", "default bound"}, {"3", "exactly 3 replays in flight"}, {"0", "unbounded"}})
        if (double sr = median(std::string("stencil_replay/") + arg); sr > 0) {
          const double cr = median(std::string("stencil_replay/") + arg, true), ch = median("stencil_hand", true);
          std::printf("launch-bound stencil %dx%d, one kernel per step: replay (%s) %s, hand %s per step, replay/hand %s (host %s)\n",
                      int(kGrid), int(kGrid), what, fmt(sr * 1e6 / kSteps, " us").c_str(), fmt(sh * 1e6 / kSteps, " us").c_str(),
                      fmt(sr / sh, "x").c_str(), cr > 0 && ch > 0 ? fmt(cr / ch, "x").c_str() : "-");
        }
    if (double sn = median("stencil_null"); sn > 0)
      std::printf("NULL, the stencil's TinyJit call (two input slots swapping each call): %s per call (host %s)\n", fmt(sn * 1e9, " ns").c_str(),
                  fmt(median("stencil_null", true) * 1e9, " ns").c_str());
    for (int kib : kColdKiB)
      if (double sc = median("stencil_null_cold/" + std::to_string(kib)); sc > 0)
        std::printf("NULL, the same call after %d KiB of memory written, the call alone timed: %s\n", kib, fmt(sc * 1e9, " ns").c_str());
    if (double one = median("signatures/1"); one > 0)
      for (const char* s : {"2", "8"})
        if (double many = median(std::string("signatures/") + s); many > 0)
          std::printf("NULL, one-kernel step over %s input signatures in turn: %s per call, %s more than one signature\n", s,
                      fmt(many * 1e9, " ns").c_str(), fmt((many - one) * 1e9, " ns").c_str());
    auto range = [&](std::vector<double> v) {
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      const std::string span = " (" + fmt(*lo, "x") + " to " + fmt(*hi, "x") + ")";
      return fmt(median_of(v), "x") + span;
    };
    for (auto [arg, what] : {std::pair{"-1", "default bound"}, {"0", "unbounded"}})
      if (auto it = ratios_.find(std::string("stencil_paired/") + arg); it != ratios_.end())
        std::printf("launch-bound stencil (%s), replay and hand in one loop, replay/hand of the median runs: %s, host %s\n", what,
                    range(it->second).c_str(), range(host_ratios_.at(it->first)).c_str());
    for (auto [arg, what] : {std::pair{"0", "encore's replay (default bound) against the hand loop with the same bound"},
                             {"1", "the hand loop with prebound kernels (no clSetKernelArg) against the plain hand loop"},
                             {"2", "the hand loop with command buffers (cl_khr_command_buffer) against the plain hand loop"},
                             {"3", "the hand loop plus the TinyJit call's NULL time of host work per step against the plain hand loop"}})
      if (auto it = ratios_.find(std::string("stencil_forms/") + arg); it != ratios_.end())
        std::printf("launch-bound stencil, %s: %s, host %s\n", what, range(it->second).c_str(), range(host_ratios_.at(it->first)).c_str());
    for (const char* reps : {"1", "128"})
      for (auto [arg, what] : {std::pair{"1", "concurrent replay"}, {"0", "in-order replay"}})
        if (auto it = ratios_.find(std::string("wide_paired/") + arg + "/" + reps); it != ratios_.end())
          std::printf("CL, %d independent chains of %d one-group kernels (%s multiply-adds per item), %s and hand in one loop, replay/hand of "
                      "the median steps: %s, host %s\n",
                      kWide, kDeep, reps, what, range(it->second).c_str(), range(host_ratios_.at(it->first)).c_str());
    for (int K : kChains)
      if (auto it = ratios_.find(name("paired", "CL", K)); it != ratios_.end())
        std::printf("CL, K = %d, replay and hand step by step in one loop, replay/hand of the median steps: %s, host %s\n", K,
                    range(it->second).c_str(), range(host_ratios_.at(it->first)).c_str());
    std::printf("%-6s %6s %12s %12s %12s %12s %12s %12s %12s %12s %12s\n", "device", "K", "eager", "replay", "hand", "hand_sub", "replay/hand",
                "eager/replay", "host replay", "host hand", "host r/h");
    for (const char* dev : {"CL", "NULL"})
      for (int K : kChains) {
        double e = median(name("eager", dev, K)), r = median(name("replay", dev, K)), h = median(name("hand", dev, K)),
               hs = median(name("hand_sub", dev, K));
        double rc = median(name("replay", dev, K), true), hc = median(name("hand", dev, K), true);
        if (e < 0 && r < 0 && h < 0) continue;
        bool null = std::string(dev) == "NULL";
        double scale = (null ? 1e9 : 1e6) / K;
        auto cell = [&](double s) { return s < 0 ? std::string("-") : fmt(s * scale, null ? " ns" : " us"); };
        std::printf("%-6s %6d %12s %12s %12s %12s %12s %12s %12s %12s %12s\n", dev, K, cell(e).c_str(), cell(r).c_str(), cell(h).c_str(),
                    cell(hs).c_str(), r > 0 && h > 0 ? fmt(r / h, "x").c_str() : "-", e > 0 && r > 0 ? fmt(e / r, "x").c_str() : "-",
                    cell(rc).c_str(), cell(hc).c_str(), rc > 0 && hc > 0 ? fmt(rc / hc, "x").c_str() : "-");
      }
  }
  static std::string name(const char* mode, const char* dev, int K) {
    return std::string(mode) + "/" + dev + "/K:" + std::to_string(K);
  }

 private:
  size_t reps() const {
    size_t n = 0;
    for (auto& [k, v] : per_iter_s_) n = std::max(n, v.size());
    return n;
  }
  static std::string fmt(double v, const char* unit) {
    char b[64];
    std::snprintf(b, sizeof b, v < 10 ? "%.3f%s" : "%.1f%s", v, unit);
    return b;
  }
  std::map<std::string, std::vector<double>> per_iter_s_, cpu_iter_s_, ratios_, host_ratios_;
  bool aggregates_seen_ = false;  // some benchmark reported aggregates (its repetitions' runs may be withheld)
};

}  // namespace

int main(int argc, char** argv) {
  bool have_cl = !encore::Device::list().empty();
  for (const char* dev : {"CL", "NULL"}) {
    if (std::string(dev) == "CL" && !have_cl) continue;
    for (int K : kChains) {
      std::string d = dev;
      benchmark::RegisterBenchmark(SummaryReporter::name("eager", dev, K).c_str(), BM_eager, d, K)->UseRealTime();
      benchmark::RegisterBenchmark(SummaryReporter::name("replay", dev, K).c_str(), BM_replay, d, K)->UseRealTime();
      if (d == "CL") {
        benchmark::RegisterBenchmark(SummaryReporter::name("hand", dev, K).c_str(), BM_hand, K, false)->UseRealTime();
        benchmark::RegisterBenchmark(SummaryReporter::name("hand_sub", dev, K).c_str(), BM_hand, K, true)->UseRealTime();
        if (K > 1) benchmark::RegisterBenchmark(SummaryReporter::name("paired", dev, K).c_str(), BM_paired, K)->UseRealTime();
      }
    }
  }
  benchmark::RegisterBenchmark("signatures", BM_signatures)->Arg(1)->Arg(2)->Arg(8);
  benchmark::RegisterBenchmark("stencil_null", BM_stencil_null)->UseRealTime();
  for (int kib : kColdKiB) benchmark::RegisterBenchmark("stencil_null_cold", BM_stencil_null_cold)->Arg(kib)->UseManualTime();
  if (have_cl) {
    benchmark::RegisterBenchmark("stencil_replay", BM_stencil_replay)->Arg(-1)->Arg(3)->Arg(0)->UseRealTime();
    benchmark::RegisterBenchmark("stencil_hand", BM_stencil_hand)->UseRealTime();
    benchmark::RegisterBenchmark("stencil_paired", BM_stencil_paired)->Arg(-1)->Arg(0)->UseRealTime();
    benchmark::RegisterBenchmark("stencil_forms", BM_stencil_forms)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->UseRealTime();
    benchmark::RegisterBenchmark("wide_paired", BM_wide_paired)->Args({1, 1})->Args({0, 1})->Args({1, 128})->Args({0, 128})->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  rep.summary();
  benchmark::Shutdown();
  return 0;
}
