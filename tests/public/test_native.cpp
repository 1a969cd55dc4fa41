// Native work inside a captured step (encore::opencl::enqueue_native): an OpenCL library or an
// engine's own enqueues run eagerly, are recorded with their declared access, and replay with the
// buffers bound then (swapped inputs, planned temporaries). With CLBlast present, an SGEMM between
// two kernels replays equal to eager with rotating inputs.
#include <gtest/gtest.h>

#include <vector>

#include "encore/encore.hpp"
#include "encore/opencl.hpp"
#include "jit_env.hpp"
#ifdef ENCORE_HAVE_CLBLAST
#include <clblast_c.h>
#endif

using namespace encore_test;

namespace {

// A native copy: what a library call looks like to encore (its own enqueue on the queue).
void native_copy(const encore::Device& dev, const Buffer& src, const Buffer& dst) {
  size_t n = src.nbytes();
  encore::opencl::enqueue_native(
      dev,
      [n](cl_command_queue q, std::span<const cl_mem> m) {
        cl_int st = clEnqueueCopyBuffer(q, m[0], m[1], 0, 0, n, 0, nullptr, nullptr);
        if (st != CL_SUCCESS) throw encore::DeviceError("native copy failed: " + std::to_string(st));
      },
      {encore::in(src), encore::out(dst)}, "native_copy");
}

}  // namespace

TEST(Native, ReplaysWithSwappedInputsAndPlannedTemps) {
  NEED_CL();
  Env& e = cl();
  auto step = [&](const Buffer& x) {
    Buffer t = e.dev.alloc<float>(64), u = e.dev.alloc<float>(64);  // temps: planned, passed to native code
    e.dev.launch(e.axpb, {64}, {}, x, t, 2.f, 1.f);
    native_copy(e.dev, t, u);
    Buffer y = e.dev.alloc<float>(64);
    e.dev.launch(e.axpb, {64}, {}, u, y, 1.f, 0.5f);
    return y;
  };
  TinyJit jit(step, encore::JitOptions{});
  std::vector<Buffer> xs{make(e.dev, seq(64, 0.f)), make(e.dev, seq(64, 3.f, 0.5f)), make(e.dev, seq(64, -1.f, 2.f))};
  for (int i = 0; i < 9; ++i) {
    std::vector<float> got = get(jit(xs[i % 3]));
    std::vector<float> want = get(step(xs[i % 3]));
    ASSERT_EQ(got, want) << "call " << i;
  }
  const encore::UnitStats& st = jit.unit().stats();
  EXPECT_EQ(st.items, 3u);
  EXPECT_EQ(st.items_pruned, 0u);
  EXPECT_GE(st.planned_temps, 2u);
  EXPECT_NE(jit.unit().items()[1].describe().find("native native_copy"), std::string::npos) << jit.unit().items()[1].describe();
}

// Native work that reads only constant state is still kept: encore cannot see inside it.
TEST(Native, IsNeverPruned) {
  NEED_CL();
  Env& e = cl();
  Buffer table = make(e.dev, seq(64, 7.f)), copy = e.dev.alloc<float>(64);
  encore::Capture cap;
  native_copy(e.dev, table, copy);
  encore::ExecutionUnit unit = cap.end();
  EXPECT_EQ(unit.stats().items_pruned, 0u);
  table.copyin(seq(64, 1.f));
  unit();
  EXPECT_EQ(get(copy), seq(64, 1.f));
}

TEST(Native, StatedAccessIsRequired) {
  NEED_CL();
  Env& e = cl();
  Buffer a = e.dev.alloc<float>(8), b = e.dev.alloc<float>(8);
  auto fn = [](cl_command_queue, std::span<const cl_mem>) {};
  try {
    encore::opencl::enqueue_native(e.dev, fn, {encore::BufferArg{a}, encore::out(b)}, "nothing");
    ADD_FAILURE() << "a buffer without stated access was accepted";
  } catch (const encore::ArgumentError& err) {
    EXPECT_TRUE(contains(err.what(), "buffer 0")) << err.what();
    EXPECT_TRUE(contains(err.what(), "encore::in")) << err.what();
  }
  Buffer on_null = null_env().dev.alloc<float>(8);
  EXPECT_THROW(encore::opencl::enqueue_native(e.dev, fn, {encore::in(on_null)}, "x"), encore::ArgumentError);
  EXPECT_THROW(encore::opencl::enqueue_native(null_env().dev, fn, {encore::in(on_null)}, "x"), encore::DeviceError);  // not OpenCL
}

// A native call's own code runs at every replay: a Variable it reads with value() there has the
// value this call was passed, not the thread's last bind() (the call's binding stays open during a
// replay that runs host code; a replay of a step without any opens none).
TEST(Native, ReadsTheCallsVariableValueOnReplay) {
  NEED_CL();
  Env& e = cl();
  encore::Variable k{"k", 0, 100};
  std::vector<int64_t> seen;
  Buffer a = make(e.dev, seq(8, 0.f)), b = e.dev.alloc<float>(8);
  auto step = [&](const Buffer& x, encore::BoundVar) {
    size_t bytes = x.nbytes();
    encore::opencl::enqueue_native(
        e.dev,
        [&seen, k, bytes](cl_command_queue q, std::span<const cl_mem> m) {
          seen.push_back(k.value());
          cl_int st = clEnqueueCopyBuffer(q, m[0], m[1], 0, 0, bytes, 0, nullptr, nullptr);
          if (st != CL_SUCCESS) throw encore::DeviceError("native copy failed: " + std::to_string(st));
        },
        {encore::in(x), encore::out(b)}, "reads_k");
  };
  TinyJit jit(step, encore::JitOptions{});
  std::vector<encore::BoundVar> bound;
  for (int i = 0; i < 6; ++i) bound.push_back(k.bind(10 + i));  // this thread's last bind() is 15 from here
  for (size_t i = 0; i < 2; ++i) jit(a, bound[i]);  // warm-up, capture
  ASSERT_TRUE(jit.next_call_replays(a, bound[2]));
  seen.clear();
  for (size_t i = 2; i < 6; ++i) jit(a, bound[i]);
  EXPECT_EQ(seen, (std::vector<int64_t>{12, 13, 14, 15}));
  EXPECT_EQ(get(b), seq(8, 0.f));
}

#ifdef ENCORE_HAVE_CLBLAST
// A step with a CLBlast SGEMM between two kernels: C = A·B with A from the rotating input.
TEST(Native, ClblastSgemmBetweenKernelsReplaysAsEager) {
  NEED_CL();
  Env& e = cl();
  static constexpr size_t M = 32, N = 16, K = 24;
  Buffer w = make(e.dev, seq(K * N, -1.f, 1.f / 64));
  auto step = [&](const Buffer& x) {
    Buffer a = e.dev.alloc<float>(M * K), c = e.dev.alloc<float>(M * N), y = e.dev.alloc<float>(M * N);
    e.dev.launch(e.axpb, {M * K}, {}, x, a, 0.5f, 0.25f);
    encore::opencl::enqueue_native(
        e.dev,
        [](cl_command_queue q, std::span<const cl_mem> m) {
          cl_command_queue queue = q;
          CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K, 1.0f, m[0], 0, K, m[1], 0,
                                              N, 0.0f, m[2], 0, N, &queue, nullptr);
          if (st != CLBlastSuccess) throw encore::DeviceError("CLBlastSgemm: status " + std::to_string(st));
        },
        {encore::in(a), encore::in(w), encore::out(c)}, "sgemm");
    e.dev.launch(e.axpb, {M * N}, {}, c, y, 1.f, 1.f);
    return y;
  };
  TinyJit jit(step, encore::JitOptions{});
  std::vector<Buffer> xs{make(e.dev, seq(M * K, 0.f, 0.01f)), make(e.dev, seq(M * K, 1.f, -0.02f)), make(e.dev, seq(M * K, -3.f, 0.05f))};
  for (int i = 0; i < 8; ++i) {
    std::vector<float> got = get(jit(xs[i % 3]));
    std::vector<float> want = get(step(xs[i % 3]));
    ASSERT_EQ(got, want) << "call " << i;
    if (i == 0) {  // and against the host (CLBlast's summation order may differ: a tolerance)
      std::vector<float> x = get(xs[0]), wv = get(w);
      for (size_t r = 0; r < M; r += 7)
        for (size_t col = 0; col < N; col += 5) {
          double acc = 0;
          for (size_t k = 0; k < K; ++k) acc += (0.5 * x[r * K + k] + 0.25) * wv[k * N + col];
          EXPECT_NEAR(got[r * N + col], acc + 1.0, 1e-3) << r << "," << col;
        }
    }
  }
  EXPECT_EQ(jit.unit().stats().items, 3u);
}
#endif
