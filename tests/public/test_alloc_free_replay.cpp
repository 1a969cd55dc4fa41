// Replay is allocation-free (DESIGN rule 4): after warm-up, replays that swap among rotating
// inputs and change an int variable (a scalar argument and a launch size) and a float variable
// every call make no heap allocation, through TinyJit and through ExecutionUnit's slot API, on
// the NULL device and on OpenCL. Global operator new/delete are replaced in this file by counting
// versions that count only on a thread inside an AllocCounter scope, and only allocations encore
// (or this test) makes: a driver written in C++ (Oclgrind, Intel's, ROCm's) allocates inside its
// own enqueue calls, which is not encore's replay allocating.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "encore/encore.hpp"
#include "device_pair.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"

namespace {
thread_local bool tl_counting = false;
std::atomic<long> g_allocs{0};

// Which code an address belongs to: encore's library or this executable (ours), the C/C++ runtime,
// or anything else (the ICD loader, the driver, LLVM).
enum class Mod { ours, runtime, other };
const void* base_of(const void* addr) {
  Dl_info i;
  return dladdr(addr, &i) ? i.dli_fbase : nullptr;
}
Mod module_kind(const void* addr) {
  static const void* exe = base_of(reinterpret_cast<const void*>(&base_of));
  static const void* lib = base_of(reinterpret_cast<const void*>(&encore::Device::list));
  Dl_info i;
  if (!dladdr(addr, &i)) return Mod::other;
  if (i.dli_fbase == exe || i.dli_fbase == lib) return Mod::ours;
  const char* f = i.dli_fname ? i.dli_fname : "";
  for (const char* rt : {"libstdc++", "libc.so", "libc-", "libgcc_s", "libm.so"})
    if (std::strstr(f, rt)) return Mod::runtime;
  return Mod::other;
}
// Whether the code that called operator new (return address `caller`) is ours. Through the C++
// runtime (std::string, std::function, ... not inlined) the frame that called the runtime decides;
// when the stack cannot tell, the allocation counts.
bool ours(const void* caller) {
  Mod m = module_kind(caller);
  if (m != Mod::runtime) return m == Mod::ours;
  void* frames[64];
  int n = backtrace(frames, 64), i = 0;
  while (i < n && frames[i] != caller) ++i;
  for (++i; i < n; ++i)
    if ((m = module_kind(frames[i])) != Mod::runtime) return m == Mod::ours;
  return true;
}

[[gnu::noinline]] void* counted_alloc(std::size_t n, std::size_t align, const void* caller) {
  if (tl_counting) {
    tl_counting = false;  // (dladdr and backtrace make no operator new call; this is a guard only)
    if (ours(caller)) g_allocs.fetch_add(1, std::memory_order_relaxed);
    tl_counting = true;
  }
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}

// Counts the operator new calls made on this thread while alive.
struct AllocCounter {
  long start;
  AllocCounter() : start(g_allocs.load()) {
    void* f[1];
    backtrace(f, 1);  // its first call loads the unwinder (malloc, not operator new): not inside the scope
    tl_counting = true;
  }
  ~AllocCounter() { tl_counting = false; }
  long count() const { return g_allocs.load() - start; }
};
}  // namespace

// (noinline: __builtin_return_address(0) is then the caller's code. GCC then sees a delete that
// frees what an opaque new returned and warns; they are this file's malloc/free pair.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#define CALLER __builtin_return_address(0)
[[gnu::noinline]] void* operator new(std::size_t n) { return counted_alloc(n, 0, CALLER); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return counted_alloc(n, 0, CALLER); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a), CALLER); }
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a), CALLER); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, 0, CALLER);
  } catch (...) {
    return nullptr;
  }
}
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, 0, CALLER);
  } catch (...) {
    return nullptr;
  }
}
#undef CALLER
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using encore::BoundVar;
using namespace encore_test;

namespace {

constexpr size_t kN = 64;
constexpr int kPos[] = {8, 16, 24, 32, 40, 64};  // every local size encore picks for them is warmed up

// The step: a view of the input, a float variable as a scalar, an int variable as a scalar and as
// a launch size, a copy, temporaries (planned) and closure state.
struct Step {
  Env* e;
  Variable pos, lr;
  Buffer bias;
  Buffer operator()(const Buffer& x, const BoundVar&, const BoundVar&) const {
    Buffer hi = x.view(kN / 2, kN / 2);  // rebased onto each new input on replay
    Buffer t = e->dev.alloc<float>(kN / 2);
    e->dev.launch(e->axpb, {kN / 2}, {}, hi, t, lr, 1.f);
    Buffer y = e->dev.alloc<float>(kN);
    e->dev.copy(y, x);
    e->dev.launch(e->fillpos, {pos}, {}, y, pos);
    Buffer lo = y.view(0, kN / 2);
    e->dev.launch(e->add, {kN / 2}, {}, t, bias, lo);
    return y;
  }
};

void run_tinyjit(Env& e) {
  Variable pos{"pos", 1, static_cast<int64_t>(kN)};
  Variable lr = Variable::f32("lr", -100, 100);
  Step step{&e, pos, lr, make(e.dev, seq(kN / 2, 0.25f))};
  TinyJit jit(step, encore::JitOptions{});
  std::vector<Buffer> xs{make(e.dev, seq(kN, 1.f)), make(e.dev, seq(kN, -2.f, 0.5f)), make(e.dev, seq(kN, 7.f, 3.f))};
  // warm-up: calls 0 and 1, then replays through every input and every launch size
  for (int i = 0; i < 12; ++i) jit(xs[i % 3], pos.bind(kPos[i % 6]), lr.bind(0.5 + i));
  e.dev.synchronize();
  long allocs = 0;
  {
    AllocCounter c;
    for (int i = 0; i < 200; ++i) {
      const Buffer& y = jit(xs[i % 3], pos.bind(kPos[(i * 5) % 6]), lr.bind(static_cast<double>(i % 7) - 2.5));
      (void)y;
    }
    allocs = c.count();
  }
  EXPECT_EQ(allocs, 0) << "heap allocations in 200 TinyJit replays on " << e.dev.id();
  // and the results are right: last replay against an eager run
  const int i = 199;
  std::vector<float> got = jit(xs[i % 3], pos.bind(kPos[(i * 5) % 6]), lr.bind(static_cast<double>(i % 7) - 2.5)).copyout<float>();
  std::vector<float> want = step(xs[i % 3], pos.bind(kPos[(i * 5) % 6]), lr.bind(static_cast<double>(i % 7) - 2.5)).copyout<float>();
  if (!e.dev.is_null()) {
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(jit.unit().stats().variables, 2u);
}

void run_unit(Env& e) {
  Variable pos{"pos", 1, static_cast<int64_t>(kN)};
  Variable lr = Variable::f32("lr", -100, 100);
  Step step{&e, pos, lr, make(e.dev, seq(kN / 2, 0.25f))};
  std::vector<Buffer> xs{make(e.dev, seq(kN, 1.f)), make(e.dev, seq(kN, -2.f, 0.5f)), make(e.dev, seq(kN, 7.f, 3.f))};
  encore::ExecutionUnit unit;
  Buffer out;
  {
    encore::Capture cap;
    cap.add_input(xs[0]);
    out = step(xs[0], pos.bind(8), lr.bind(1.0));
    cap.add_output(out);
    unit = cap.end();
  }
  size_t ps = unit.variable_slot(pos), ls = unit.variable_slot(lr);
  for (int i = 0; i < 12; ++i) unit.bind_input(0, xs[i % 3]).bind_var(ps, kPos[i % 6]).bind_var_f(ls, 0.5 + i)();
  e.dev.synchronize();
  long allocs = 0;
  {
    AllocCounter c;
    for (int i = 0; i < 200; ++i) unit.bind_input(0, xs[i % 3]).bind_var(ps, kPos[(i * 5) % 6]).bind_var_f(ls, static_cast<double>(i % 7) - 2.5)();
    allocs = c.count();
  }
  EXPECT_EQ(allocs, 0) << "heap allocations in 200 ExecutionUnit replays on " << e.dev.id();
  if (!e.dev.is_null()) {
    std::vector<float> got = out.copyout<float>();
    const int i = 199;
    std::vector<float> want = step(xs[i % 3], pos.bind(kPos[(i * 5) % 6]), lr.bind(static_cast<double>(i % 7) - 2.5)).copyout<float>();
    EXPECT_EQ(got, want);
  }
}

}  // namespace

TEST(AllocFreeReplay, CounterCounts) {
  AllocCounter c;
  int* volatile p = new int(3);  // (volatile: escapes, so the pair is not elided)
  delete p;
  std::vector<int> v(10);
  EXPECT_EQ(c.count(), 2);
}

// What the replay tests rely on: allocations inside encore's library count, through the C++
// runtime too (a std::string longer than its inline buffer, built in encore).
TEST(AllocFreeReplay, CounterCountsEncoresAllocations) {
  encore::Device dev = encore::Device::open("NULL");
  long made = 0;
  {
    AllocCounter c;
    (void)dev.alloc<float>(4);  // a BufferImpl, made in libencore
    made = c.count();
  }
  EXPECT_GE(made, 1);
  {
    AllocCounter c;
    try {
      (void)dev.alloc<float>(0);  // an ArgumentError whose long message libencore builds
    } catch (const encore::ArgumentError&) {
    }
    made = c.count();
  }
  EXPECT_GE(made, 1);
}

TEST(AllocFreeReplay, TinyJitNull) { run_tinyjit(null_env()); }
TEST(AllocFreeReplay, UnitNull) { run_unit(null_env()); }
TEST(AllocFreeReplay, TinyJitCL) {
  NEED_CL();
  run_tinyjit(cl());
}
TEST(AllocFreeReplay, UnitCL) {
  NEED_CL();
  run_unit(cl());
}

// More rotating view inputs than a small cache would hold: a ring of 16 slices of one buffer, each
// passed in turn (the step also makes a view of its input, rebased onto every new slice). Once every
// slice was seen, replays allocate nothing (DESIGN rule 4; issue: more than 4 allocated).
TEST(AllocFreeReplay, RingOfSixteenViewInputs) {
  for (Env* e : {&null_env(), have_cl() ? &cl() : nullptr}) {
    if (!e) continue;
    constexpr size_t kSlots = 16;
    Buffer ring = make(e->dev, seq(kN * kSlots, 0.f));
    std::vector<Buffer> slices;
    for (size_t s = 0; s < kSlots; ++s) slices.push_back(ring.view(s * kN, kN));
    Buffer acc = make(e->dev, std::vector<float>(kN / 2, 0.f));
    TinyJit jit(
        [&](const Buffer& x) {
          Buffer hi = x.view(kN / 2, kN / 2);
          e->dev.launch(e->accum, {kN / 2}, {}, acc, hi);
        },
        encore::JitOptions{});
    for (size_t i = 0; i < 2 + kSlots; ++i) jit(slices[i % kSlots]);  // capture, then every slice once
    e->dev.synchronize();
    long allocs = 0;
    {
      AllocCounter c;
      for (size_t i = 0; i < 5 * kSlots; ++i) jit(slices[(i * 7) % kSlots]);
      allocs = c.count();
    }
    EXPECT_EQ(allocs, 0) << "heap allocations replaying a ring of " << kSlots << " view inputs on " << e->dev.id();
    if (!e->dev.is_null()) {
      // acc summed the upper half of every slice: 2 + 16 + 80 calls
      std::vector<double> want(kN / 2, 0.0);
      auto add = [&](size_t s) {
        for (size_t j = 0; j < kN / 2; ++j) want[j] += static_cast<double>(s * kN + kN / 2 + j);
      };
      for (size_t i = 0; i < 2 + kSlots; ++i) add(i % kSlots);
      for (size_t i = 0; i < 5 * kSlots; ++i) add((i * 7) % kSlots);
      std::vector<float> got = acc.copyout<float>();
      for (size_t j = 0; j < kN / 2; ++j) ASSERT_EQ(got[j], static_cast<float>(want[j])) << "element " << j;
    }
  }
}

// Native work (encore::opencl::enqueue_native) replays allocation-free too, inputs rotating.
TEST(AllocFreeReplay, NativeItems) {
  NEED_CL();
  Env& e = cl();
  auto step = [&](const Buffer& x) {
    Buffer t = e.dev.alloc<float>(kN);
    encore::opencl::enqueue_native(
        e.dev, [](cl_command_queue q, std::span<const cl_mem> m) { clEnqueueCopyBuffer(q, m[0], m[1], 0, 0, kN * sizeof(float), 0, nullptr, nullptr); },
        {encore::in(x), encore::out(t)}, "copy");
    Buffer y = e.dev.alloc<float>(kN);
    e.dev.launch(e.axpb, {kN}, {}, t, y, 2.f, 0.f);
    return y;
  };
  TinyJit jit(step, encore::JitOptions{});
  std::vector<Buffer> xs{make(e.dev, seq(kN, 1.f)), make(e.dev, seq(kN, 2.f)), make(e.dev, seq(kN, 3.f))};
  for (int i = 0; i < 6; ++i) jit(xs[i % 3]);
  e.dev.synchronize();
  long allocs = 0;
  {
    AllocCounter c;
    for (int i = 0; i < 100; ++i) jit(xs[i % 3]);
    allocs = c.count();
  }
  EXPECT_EQ(allocs, 0) << "heap allocations in 100 replays with a native item";
  EXPECT_EQ(get(jit(xs[1])), seq(kN, 4.f, 2.f));
}

// Two devices of one context (tests/support/device_pair.hpp): replay orders the cross-device copies with
// markers, barriers and the copies' own events (src/unit/sync.cpp), still allocation-free.
TEST(AllocFreeReplay, CrossDeviceCopies) {
  NEED_CL();
  const DevicePair& pair = device_pair();
  if (pair.devs.size() != 2 || encore::opencl::context(pair.devs[0]) != encore::opencl::context(pair.devs[1]))
    GTEST_SKIP() << "needs two OpenCL devices of one context " << pair.skip;
  const encore::Device &a = pair.devs[0], &b = pair.devs[1];
  const char* src = "__kernel void bump(__global float* x, float v) { x[get_global_id(0)] += v; }";
  encore::Kernel bump_a = a.compile(src).kernel("bump"), bump_b = b.compile(src).kernel("bump");
  auto step = [&](const Buffer& x) {  // x on a: copied to b, then overwritten on a; b's result copied back
    Buffer y = b.alloc<float>(kN), z = a.alloc<float>(kN);
    b.copy(y, x);
    a.launch(bump_a, {kN}, {}, x, 1.f);
    b.launch(bump_b, {kN}, {}, y, 2.f);
    a.copy(z, y);
    return z;
  };
  TinyJit jit(step, encore::JitOptions{});
  std::vector<Buffer> xs{make(a, seq(kN, 1.f)), make(a, seq(kN, 2.f)), make(a, seq(kN, 3.f))};
  for (int i = 0; i < 6; ++i) jit(xs[i % 3]);
  a.synchronize();
  b.synchronize();
  long allocs = 0;
  {
    AllocCounter c;
    for (int i = 0; i < 100; ++i) jit(xs[i % 3]);
    allocs = c.count();
  }
  EXPECT_EQ(allocs, 0) << "heap allocations in 100 replays over " << pair.how;
  std::vector<float> before = get(xs[1]);
  std::vector<float> want(kN);
  for (size_t i = 0; i < kN; ++i) want[i] = before[i] + 2.f;
  EXPECT_EQ(get(jit(xs[1])), want);
}
