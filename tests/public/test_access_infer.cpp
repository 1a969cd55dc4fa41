// Issue 31 item 1: access of pointer parameters inferred from the kernel's source
// (KernelParam::inferred_access, src/core/access_infer.cpp). Every store form, every way a pointer
// can escape and every body the reader cannot follow must stay inout; plain reads are in; a name the
// body never uses is none. Real-style kernels written without const are compared with what clang
// proves (recorded below; clang is not run here): never in or none where clang says written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>

#include <string>
#include <vector>

#include "encore/encore.hpp"
#include "test_util.hpp"

using namespace encore;

namespace {

constexpr Access I = Access::in, O = Access::inout, N = Access::none;

// The default access of each parameter of kernel `k` in `src`, compiled on the NULL device.
std::vector<Access> access_of(const std::string& src, const std::string& k) {
  Program p = Device::open("NULL").compile(src);
  std::vector<Access> r;
  for (const KernelParam& q : p.kernel(k).params()) r.push_back(q.default_access());
  return r;
}

struct Case {
  const char* what;
  const char* src;
  std::vector<Access> want;
};

// each kernel is named k; its body shows one form
const Case kCases[] = {
    {"store", "__kernel void k(__global float* p) { p[get_global_id(0)] = 1; }", {O}},
    {"compound store", "__kernel void k(__global float* p) { p[0] += 1; }", {O}},
    {"shift store", "__kernel void k(__global int* p) { p[0] <<= 1; }", {O}},
    {"pre-increment", "__kernel void k(__global int* p) { ++p[0]; }", {O}},
    {"post-decrement", "__kernel void k(__global int* p) { p[0]--; }", {O}},
    {"store through *", "__kernel void k(__global float* p) { *p = 1; }", {O}},
    {"(*p)++", "__kernel void k(__global int* p) { (*p)++; }", {O}},
    {"parenthesised store", "__kernel void k(__global float* p) { (p[1]) = 2; }", {O}},
    {"member store ->", "typedef struct { float a; int b; } S;\n__kernel void k(__global S* p) { p->b = 1; }", {O}},
    {"member store .", "typedef struct { float a; int b; } S;\n__kernel void k(__global S* p) { p[3].a = 1; }", {O}},
    {"swizzle store", "__kernel void k(__global float4* p) { p[0].xy = (float2)(1, 2); }", {O}},
    {"read", "__kernel void k(__global float* p, __global float* q) { q[0] = p[0] * 2 + p[1]; }", {I, O}},
    {"read through *", "__kernel void k(__global float* p, __global float* q) { q[0] = *p; }", {I, O}},
    {"member read", "typedef struct { float a; int b; } S;\n__kernel void k(__global S* p, __global int* q) { q[0] = p->b + p[1].b; }", {I, O}},
    {"index of a store", "__kernel void k(__global int* idx, __global float* q) { q[idx[get_global_id(0)]] = 1; }", {I, O}},
    {"unreferenced", "__kernel void k(__global float* p, __global float* q) { q[0] = 1; }", {N, O}},
    {"a member of that name", "typedef struct { int p; } T;\n__kernel void k(__global float* p, __global int* q) { T t; t.p = 1; q[0] = t.p; }", {N, O}},
    {"passed to a helper", "void h(__global float* x) { x[0] = 1; }\n__kernel void k(__global float* p) { h(p); }", {O}},
    {"read-only helper", "float h(__global float* x) { return x[0]; }\n__kernel void k(__global float* p, __global float* q) { q[0] = h(p); }", {O, O}},
    {"element passed to a helper", "float h(float x) { return x * 2; }\n__kernel void k(__global float* p, __global float* q) { q[0] = h(p[0]); }", {I, O}},
    {"aliased", "__kernel void k(__global float* p) { __global float* q = p; q[0] = 1; }", {O}},
    {"aliased, assigned later", "__kernel void k(__global float* p) { __global float* q; q = p + 1; q[0] = 1; }", {O}},
    {"pointer arithmetic", "__kernel void k(__global float* p) { p += 4; }", {O}},
    {"offset store", "__kernel void k(__global float* p) { *(p + 4) = 1; }", {O}},
    {"address taken", "__kernel void k(__global float* p, __global float* q) { __global float* r = &p[2]; q[0] = r[0]; }", {O, O}},
    {"cast", "__kernel void k(__global float* p) { ((__global float4*)p)[0] = (float4)(0); }", {O}},
    {"cast of a read", "__kernel void k(__global float* p, __global float* q) { q[0] = ((__global float4*)p)[0].x; }", {O, O}},
    {"compared", "__kernel void k(__global float* p, __global float* q) { if (p != 0) q[0] = 1; }", {O, O}},
    {"atomic_add", "__kernel void k(__global int* p) { atomic_add(&p[0], 1); }", {O}},
    {"atomic_inc", "__kernel void k(__global int* p) { atomic_inc(p); }", {O}},
    {"atom_add", "#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable\n__kernel void k(__global int* p) { atom_add(p + 1, 1); }", {O}},
    {"atomic_xchg", "__kernel void k(__global int* p, __global int* q) { q[0] = atomic_xchg(p + get_global_id(0), 0); }", {O, O}},
    {"vstore4", "__kernel void k(__global float* p) { vstore4((float4)(1), 0, p); }", {O}},
    {"vstore_half", "__kernel void k(__global half* p) { vstore_half(1.0f, 0, p); }", {O}},
    {"vload4", "__kernel void k(__global float* p, __global float4* q) { q[0] = vload4(get_global_id(0), p); }", {I, O}},
    {"vload4 at an offset", "__kernel void k(__global float* p, __global float4* q, int n) { q[0] = vload4(0, p + 4 * n + 1); }", {I, O, N}},
    {"vload_half", "__kernel void k(__global half* p, __global float* q) { q[0] = vload_half(0, p); }", {I, O}},
    {"vload with an assignment in it", "__kernel void k(__global float* p, __global float4* q) { __global float* r; q[0] = vload4(0, r = p); r[0] = 1; }", {O, O}},
    {"function-like macro", "#define SET(a, i) a[i] = 0\n__kernel void k(__global float* p, __global float* q) { SET(p, 0); q[0] = 1; }", {O, O}},
    {"macro naming the parameter", "#define TOUCH() p[0] = 0\n__kernel void k(__global float* p) { TOUCH(); }", {O}},
    // a function-like macro's call affects only the names it may reach and its own statement
    {"beside a macro call", "#define SET(a, i) a[i] = 0\n__kernel void k(__global float* p, __global float* q, __global float* r) { SET(p, 0); q[0] = r[0]; }", {O, O, I}},
    {"macro reaching through a macro", "#define W(i) C[i] = 0\n#define OUT(i) W(i)\n__kernel void k(__global float* C, __global float* r, __global float* q) { OUT(1); q[0] = r[0]; }", {O, I, O}},
    {"macro body naming an alias", "#define TARGET C\n#define Z(i) TARGET[i] = 0\n__kernel void k(__global float* C, __global float* r, __global float* q) { Z(0); q[0] = r[0]; }", {O, I, O}},
    {"argument expanding to the name", "#define PTR C\n#define Z(a) a[0] = 0\n__kernel void k(__global float* C, __global float* r, __global float* q) { Z(PTR); q[0] = r[0]; }", {O, I, O}},
    {"macro making a store", "#define ASSIGN(op) op\n__kernel void k(__global float* p, __global float* r) { p[0] ASSIGN(=) r[0]; }", {O, O}},
    {"macro making a subscript", "#define IDX(i) [i]\n__kernel void k(__global float* p, __global float* r) { p IDX(0) = 1; r[1] = 2; }", {O, O}},
    {"macro making an increment", "#define INC(x) ++\n__kernel void k(__global int* p, __global int* r) { INC(0) p[0]; r[0] = 1; }", {O, O}},
    {"macro name from an object-like macro", "#define SET(a) a[0] = 0\n#define S SET\n__kernel void k(__global float* p, __global float* r, __global float* q) { S(p); q[0] = r[0]; }", {O, I, O}},
    {"macro pasting names", "#define CAT(a, b) a##b\n__kernel void k(__global float* par, __global float* q) { CAT(pa, r)[0] = 1; q[0] = 2; }", {O, O}},
    {"macro reaching a pasting macro", "#define CAT(a, b) a##b\n#define Z(i) CAT(pa, r)[i] = 0\n__kernel void k(__global float* par, __global float* q, __global float* r2) { Z(0); q[0] = r2[0]; }", {O, O, O}},
    {"macro in the condition", "#define POS(x) (x > 0)\n__kernel void k(__global float* p, __global float* r, __global float* q) { if (POS(1)) q[0] = r[0]; q[1] = p[0]; }", {I, O, O}},
    {"object-like macro", "#define OUT q[0]\n__kernel void k(__global float* p, __global float* q) { OUT = p[0]; }", {I, O}},
    {"inline asm", "__kernel void k(__global float* p, __global float* q) { __asm__(\"\"); q[0] = p[0]; }", {O, O}},
    {"pointer from an integer", "__kernel void k(__global float* p, __global ulong* a, __global float* q) { *((__global float*)a[0]) = 1; q[0] = p[0]; }", {O, O, O}},
    {"shadowed by a local", "__kernel void k(__global float* p, __global float* q) { { float p = 2; q[0] = p; } }", {O, O}},
    {"const stays in", "__kernel void k(__global const float* p, __global float* q) { q[0] = p[0]; }", {I, O}},
    {"unused const is none", "__kernel void k(__global const float* p, __global float* q) { q[0] = 1; }", {N, O}},
    {"__constant", "__kernel void k(__constant float* p, __global float* q) { q[0] = p[0]; }", {I, O}},
    {"__local and scalars", "__kernel void k(__local float* l, __global float* p, int n) { l[0] = p[n]; }", {N, I, N}},
    {"sizeof", "__kernel void k(__global float* p, __global int* q) { q[0] = sizeof(p[0]); }", {I, O}},
    {"ternary read", "__kernel void k(__global float* p, __global float* q, int c) { q[0] = c ? p[0] : p[1]; }", {I, O, N}},
};

TEST(AccessInfer, EachFormOfUse) {
  for (const Case& c : kCases) EXPECT_EQ(access_of(c.src, "k"), c.want) << c.what << ": " << c.src;
}

// KernelParam::inferred_store_only: every use stores a whole element with a plain = and none reads
// through the pointer. It proves an encore::out claim (no trial run at capture), so a wrong true
// would let a kernel that reads its out buffer through; every form that reads, or that the reader
// does not take apart, is false.
TEST(AccessInfer, StoreOnlyIsEveryUseAPlainStore) {
  struct StoreCase {
    const char* what;
    const char* body;  // of k(__global float* p, __global float* q, int n)
    bool want;
  };
  const StoreCase cases[] = {
      {"plain store", "p[get_global_id(0)] = q[0] * 2;", true},
      {"stores at two places", "p[0] = 1; if (n > 2) p[n] = q[n];", true},
      {"chained assignment", "float x; x = p[n] = q[0]; q[1] = x;", true},
      {"in part", "if (n % 2 == 0) p[n] = 7;", true},
      {"compound", "p[n] += q[n];", false},
      {"read after its store", "p[n] = q[n]; q[0] = p[n];", false},
      {"store of itself", "p[n] = p[n] * 2;", false},
      {"subscript reads it", "p[(int)p[0]] = 1;", false},
      {"increment", "p[n]++;", false},
      {"pre-increment", "++p[n];", false},
      {"through *", "*p = 1;", false},
      {"address taken", "__global float* r = &p[n]; r[0] = 1;", false},
      {"vstore4", "vstore4((float4)(1), 0, p);", true},
      {"vstore4 at an offset", "vstore4((float4)(q[0]), 0, p + 4 * n + 1); p[0] = 2;", true},
      {"vstore4 of a vload of it", "vstore4(vload4(0, p), 1, p);", false},
      {"vstore4 as the offset", "vstore4((float4)(1), (int)p, q);", false},
      {"vstore4 with an assignment", "__global float* r; vstore4((float4)(1), 0, r = p);", false},
      {"passed to a function", "q[0] = length(p);", false},
      {"parenthesised", "(p[n]) = 1;", false},
      {"equality is a read", "if (p[n] == 1) q[0] = 1;", false},
      {"shadowed by a local array", "{ float p[2]; p[0] = q[0]; q[1] = p[0]; }", false},
      {"only read", "q[0] = p[n];", false},
      {"never named", "q[0] = 1;", false},
  };
  for (const StoreCase& c : cases) {
    const std::string src = std::string("__kernel void k(__global float* p, __global float* q, int n) { ") + c.body + " }";
    const Program prog = Device::open("NULL").compile(src);  // owns the parameter list read below
    const KernelParam p = prog.kernel("k").params()[0];
    EXPECT_EQ(p.inferred_store_only, c.want) << c.what << ": " << c.body;
    if (p.inferred_store_only) {
      EXPECT_EQ(p.inferred_access, Access::inout) << "a store-only parameter is still written: " << c.what;
    }
  }
  // a function-like macro that may name it, or shares its statement, hides what it does
  EXPECT_TRUE(Device::open("NULL")
                  .compile("__kernel void k(__global half* p, __global float* q, int n) { vstore_half_rte(q[0], n, p); vstore_half4((float4)(1), n, p + 8); }")
                  .kernel("k")
                  .params()[0]
                  .inferred_store_only)
      << "vstore_half_rte and vstore_half4";
  const char* macros[] = {"#define SET(a, i) a[i] = 0\n__kernel void k(__global float* p, __global float* q, int n) { SET(p, n); }",
                          "#define ID(x) x\n__kernel void k(__global float* p, __global float* q, int n) { p[n] = ID(q[0]); }",
                          "#define ASSIGN(op) op\n__kernel void k(__global float* p, __global float* q, int n) { p[n] ASSIGN(+=) 1; }"};
  for (const char* src : macros) EXPECT_FALSE(Device::open("NULL").compile(src).kernel("k").params()[0].inferred_store_only) << src;
}

TEST(AccessInfer, ExposedOnKernelParam) {
  Program p = Device::open("NULL").compile("__kernel void k(__global float* a, __global float* b, __global float* c, __global const float* d) "
                                           "{ c[0] = a[0] + d[0]; }");
  const auto& ps = p.kernel("k").params();
  EXPECT_EQ(ps[0].inferred_access, Access::in);
  EXPECT_EQ(ps[1].inferred_access, Access::none);
  EXPECT_EQ(ps[2].inferred_access, Access::inout);
  EXPECT_EQ(ps[3].inferred_access, Access::in);
  EXPECT_FALSE(ps[0].read_only());
  EXPECT_TRUE(ps[3].read_only());
}

// A program whose preprocessing rests on an assumption or cannot be decided infers nothing.
TEST(AccessInfer, NothingWhenTheReaderIsUnsure) {
  const std::string src = "#if __OPENCL_C_VERSION__ >= 200\n#define W(x) x\n#endif\n__kernel void k(__global float* p, __global float* q) { q[0] = p[0]; }";
  Program pr = Device::open("NULL").compile(src);
  for (const KernelParam& q : pr.kernel("k").params()) {
    if (q.inferred_access) {
      EXPECT_EQ(*q.inferred_access, Access::inout) << q.name;
    }
    EXPECT_NE(q.default_access(), Access::none) << q.name;
  }
}

// The names a macro call may reach are looked up within the reader's budget (2^20 tokens for the
// program): past it, a call may name anything, and the kernel's pointers are all inout.
TEST(AccessInfer, MacroCallsPastTheBudgetMakeTheBodyUnclear) {
  auto src = [](int calls) {
    std::string body;
    for (int i = 0; i < 2000; ++i) body += i ? " + 1" : "1";
    std::string s = "#define BIG(x) (" + body + ")\n__kernel void k(__global float* p, __global float* q) {\n  float s = 0;\n";
    for (int i = 0; i < calls; ++i) s += "  s += BIG(0);\n";
    return s + "  q[0] = p[0] + s;\n}\n";
  };
  EXPECT_EQ(access_of(src(10), "k"), (std::vector<Access>{I, O}));
  EXPECT_EQ(access_of(src(600), "k"), (std::vector<Access>{O, O}));
}

// ENCORE_DEBUG=1 says per kernel what was inferred and why a pointer is inout.
TEST(AccessInfer, ReportedPerKernel) {
  encore_test::LogCapture log;
  Device::open("NULL").compile("__kernel void rep_k(__global float* src, __global float* unused, __global float* dst) { dst[1] += src[0]; }");
  encore_test::expect_has(log.text(), {"kernel rep_k: pointer access from the source: src in, unused none (never referenced), dst inout (stored through: "});
}

// Explicit annotations still win: encore::inout on an inferred-in pointer is accepted (only real
// const data refuses out/inout), encore::in on an inferred-inout one too.
TEST(AccessInfer, AnnotationsWin) {
  Device dev = Device::open("NULL");
  Kernel k = dev.compile("__kernel void k(__global float* a, __global float* b, __global const float* c) { b[0] = a[0] + c[0]; }").kernel("k");
  Buffer a = dev.alloc<float>(4), b = dev.alloc<float>(4), c = dev.alloc<float>(4);
  Capture cap;
  dev.launch(k, {4}, {}, encore::inout(a), encore::in(b), c);
  dev.launch(k, {4}, {}, a, b, c);
  ExecutionUnit u = cap.end();
  EXPECT_EQ(u.items()[0].args[0].access, Access::inout);
  EXPECT_EQ(u.items()[0].args[1].access, Access::in);
  EXPECT_EQ(u.items()[1].args[0].access, Access::in);
  EXPECT_EQ(u.items()[1].args[1].access, Access::inout);
  EXPECT_THROW(dev.launch(k, {4}, {}, a, b, encore::inout(c)), ArgumentError) << "const data cannot be written";
}

// Real-style kernels without const (stencil, reduction, histogram, n-body, SpMV, transpose,
// k-means, back-propagation, scan, tiled matmul, BFS, ...). clang's answers come from
//   clang-15 -x cl -cl-std=CL1.2 -O2 -emit-llvm -S -Xclang -finclude-default-header real.cl -o -
// (the attributes on each global pointer of the kernel's define line): R readonly, W writeonly,
// 0 readnone, X neither (read and written), ? neither because the body calls a built-in clang
// sees only as a declaration (vload4/vstore4), so it proves nothing there.
const char* const kReal = R"CL(
__kernel void stencil5(__global float* in, __global float* out, int w, int h) {
  int x = get_global_id(0), y = get_global_id(1);
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  int c = y * w + x;
  out[c] = 0.2f * (in[c] + in[c - 1] + in[c + 1] + in[c - w] + in[c + w]);
}
__kernel void reduce_partial(__global float* in, __global float* partial, __local float* scratch, int n) {
  int g = get_global_id(0), l = get_local_id(0);
  scratch[l] = g < n ? in[g] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = scratch[0];
}
__kernel void histogram256(__global uchar* data, __global uint* bins, int n) {
  int i = get_global_id(0);
  if (i < n) atomic_inc(&bins[data[i]]);
}
__kernel void saxpy(__global float* x, __global float* y, float a) {
  int i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}
__kernel void nbody_step(__global float4* pos, __global float4* vel, __global float4* newpos, int n, float dt, float eps) {
  int i = get_global_id(0);
  float4 p = pos[i];
  float4 acc = (float4)(0.0f);
  for (int j = 0; j < n; ++j) {
    float4 d = pos[j] - p;
    float r2 = d.x * d.x + d.y * d.y + d.z * d.z + eps;
    float inv = rsqrt(r2);
    acc += d * (pos[j].w * inv * inv * inv);
  }
  vel[i] += acc * dt;
  newpos[i] = p + vel[i] * dt;
}
__kernel void spmv_csr(__global int* rowptr, __global int* cols, __global float* vals, __global float* x, __global float* y, int rows) {
  int r = get_global_id(0);
  if (r >= rows) return;
  float s = 0.0f;
  for (int k = rowptr[r]; k < rowptr[r + 1]; ++k) s += vals[k] * x[cols[k]];
  y[r] = s;
}
__kernel void transpose_tiled(__global float* in, __global float* out, __local float* tile, int w, int h) {
  int gx = get_global_id(0), gy = get_global_id(1), lx = get_local_id(0), ly = get_local_id(1);
  int ts = get_local_size(0);
  if (gx < w && gy < h) tile[ly * (ts + 1) + lx] = in[gy * w + gx];
  barrier(CLK_LOCAL_MEM_FENCE);
  int ox = get_group_id(1) * ts + lx, oy = get_group_id(0) * ts + ly;
  if (ox < h && oy < w) out[oy * h + ox] = tile[lx * (ts + 1) + ly];
}
__kernel void kmeans_assign(__global float* points, __global float* centers, __global int* membership, int n, int k, int dims) {
  int i = get_global_id(0);
  if (i >= n) return;
  int best = 0;
  float bestd = INFINITY;
  for (int c = 0; c < k; ++c) {
    float d = 0.0f;
    for (int f = 0; f < dims; ++f) {
      float t = points[i * dims + f] - centers[c * dims + f];
      d += t * t;
    }
    if (d < bestd) { bestd = d; best = c; }
  }
  membership[i] = best;
}
__kernel void weight_adjust(__global float* delta, __global float* ly, __global float* w, __global float* oldw, int hid, float eta, float momentum) {
  int j = get_global_id(0), k = get_global_id(1);
  int idx = k * (hid + 1) + j;
  float change = eta * delta[j] * ly[k] + momentum * oldw[idx];
  w[idx] += change;
  oldw[idx] = change;
}
__kernel void scan_inplace(__global int* data, __local int* tmp, int n) {
  int l = get_local_id(0);
  tmp[l] = l < n ? data[l] : 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = 1; off < n; off <<= 1) {
    int v = l >= off ? tmp[l - off] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[l] += v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l < n) data[l] = tmp[l];
}
__kernel void matmul_tiled(__global float* A, __global float* B, __global float* C, __local float* As, __local float* Bs, int n) {
  int r = get_global_id(1), c = get_global_id(0), lr = get_local_id(1), lc = get_local_id(0), t = get_local_size(0);
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += t) {
    As[lr * t + lc] = A[r * n + k0 + lc];
    Bs[lr * t + lc] = B[(k0 + lr) * n + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < t; ++k) acc += As[lr * t + k] * Bs[k * t + c % t];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  C[r * n + c] = acc;
}
__kernel void vec4_scale(__global float* src, __global float* dst, float s) {
  int i = get_global_id(0);
  float4 v = vload4(i, src);
  vstore4(v * s, i, dst);
}
__kernel void bfs_level(__global int* edges_start, __global int* edges, __global int* frontier, __global int* next, __global int* visited, __global int* cost, int n) {
  int v = get_global_id(0);
  if (v >= n || !frontier[v]) return;
  frontier[v] = 0;
  for (int e = edges_start[v]; e < edges_start[v + 1]; ++e) {
    int u = edges[e];
    if (!visited[u]) {
      cost[u] = cost[v] + 1;
      next[u] = 1;
    }
  }
}
__kernel void unused_param(__global float* a, __global float* b, __global float* out) {
  int i = get_global_id(0);
  out[i] = a[i] * 2.0f;
}
__kernel void gather_max(__global float* src, __global int* idx, __global float* dst, int m) {
  int i = get_global_id(0);
  float best = -INFINITY;
  for (int k = 0; k < m; ++k) best = fmax(best, src[idx[i * m + k]]);
  dst[i] = best;
}
)CL";

struct RealKernel {
  const char* name;
  const char* clang;  // one letter per global pointer parameter, in order
  std::vector<Access> want;  // encore's answer, every parameter
};

const RealKernel kReal_[] = {
    {"stencil5", "RW", {I, O, N, N}},
    {"reduce_partial", "RW", {I, O, N, N}},
    {"histogram256", "RX", {I, O, N}},
    {"saxpy", "RX", {I, O, N}},
    {"nbody_step", "RXW", {I, O, O, N, N, N}},
    {"spmv_csr", "RRRRW", {I, I, I, I, O, N}},
    {"transpose_tiled", "RW", {I, O, N, N, N}},
    {"kmeans_assign", "RRW", {I, I, O, N, N, N}},
    {"weight_adjust", "RRXX", {I, I, O, O, N, N, N}},
    {"scan_inplace", "X", {O, N, N}},
    {"matmul_tiled", "RRW", {I, I, O, N, N, N}},
    {"vec4_scale", "??", {I, O, N}},
    {"bfs_level", "RRXWRX", {I, I, O, O, I, O, N}},
    {"unused_param", "R0W", {I, N, O}},
    {"gather_max", "RRW", {I, I, O, N}},
};

TEST(AccessInfer, RealKernelsAgainstClang) {
  Program p = Device::open("NULL").compile(kReal);
  size_t sure = 0, same = 0, write_only = 0, store_only = 0;
  for (const RealKernel& rk : kReal_) {
    const auto& ps = p.kernel(rk.name).params();
    std::vector<Access> got;
    size_t g = 0;
    for (const KernelParam& q : ps) {
      got.push_back(q.default_access());
      if (!q.is_pointer || q.space != AddressSpace::global) continue;
      ASSERT_LT(g, std::string(rk.clang).size()) << rk.name;
      const char c = rk.clang[g++];
      const Access a = q.default_access();
      if (c == 'W' || c == 'X') {
        EXPECT_EQ(a, Access::inout) << rk.name << " " << q.name << ": clang says it is written";
      }
      // store-only proves an encore::out claim: never where clang sees a read
      if (q.inferred_store_only) {
        EXPECT_TRUE(c == 'W' || c == '?') << rk.name << " " << q.name << ": store-only, but clang sees a read (" << c << ")";
      }
      write_only += c == 'W';
      store_only += c == 'W' && q.inferred_store_only;
      if (c == 'R' || c == '0') {
        ++sure;
        same += a == (c == 'R' ? Access::in : Access::none);
      }
    }
    EXPECT_EQ(g, std::string(rk.clang).size()) << rk.name;
    EXPECT_EQ(got, rk.want) << rk.name;
  }
  // every parameter clang proves read-only or unused is inferred so
  EXPECT_EQ(same, sure);
  EXPECT_EQ(sure, 23u);
  // every one of clang's write-only parameters the reader proves too (others, where clang is unsure
  // through a vstore, may be proven as well)
  EXPECT_EQ(store_only, write_only);
  EXPECT_EQ(write_only, 10u);
  std::printf("store-only %zu of clang's %zu write-only parameters\n", store_only, write_only);
}

}  // namespace

// ---- generated kernels: never less access than the body has ----------------------------------
// Kernels made from the forms below, each statement of known effect (the X and Y it reads and
// writes; X and Y may be the same parameter), some wrapped in a branch, a loop, #if 1, #if 0,
// #ifdef of an undefined name, or an object-like macro standing for X (#define, then #undef). What
// the reader infers must never be less than what the body does: in never where the body writes, none
// never where it reads or writes, store-only never where it reads. And it must find most of what
// there is to find, so a reader that answers inout for everything fails too. On an OpenCL device the
// programs are also built, so every generated kernel is real OpenCL C.
namespace gen {

struct Form {
  const char* text;     // X, Y: float pointers; Q: the int pointer; i the work item, n an int
  const char* effects;  // "rX wY": X read, Y written ("w0": p0 written)
};

const Form kForms[] = {
    {"X[i] = 1.0f;", "wX"},
    {"X[i] = Y[i] * 2.0f;", "wX rY"},
    {"X[i] += Y[i];", "rX wX rY"},
    {"{ float t = X[i]; Y[i + 1] = t; }", "rX wY"},
    {"if (i < n) X[i] = 0.5f;", "wX"},
    {"vstore4((float4)(1.0f), i, X);", "wX"},
    {"vstore4(vload4(i, Y), i, X);", "rY wX"},
    {"{ __global float* r = X; r[i] = 2.0f; }", "wX"},
    {"{ __global float* r = X + 1; Y[i] = r[i]; }", "rX wY"},
    {"*(X + i) = 3.0f;", "wX"},
    {"X[i]++;", "rX wX"},
    {"{ float u = X[i] = Y[i]; X[i + 1] = u; }", "wX rY"},
    {"SET(X, Y[i]);", "wX rY"},
    {"put(X, i);", "wX"},
    {"Y[i] = get(X, i);", "rX wY"},
    {"atomic_add(&Q[i], 1);", "rQ wQ"},
    {"Q[i] = (int)Y[i];", "wQ rY"},
    {"for (int k = 0; k < n; ++k) X[i] = Y[k];", "wX rY"},
    {"X[(int)Y[i] & 3] = 1.0f;", "wX rY"},
    {"Y[i] = X[X[i] > 0.0f ? i : 0];", "rX wY"},
    {"(X)[i] = 1.0f;", "wX"},
    {"X [ i ] = Y [ i ];", "wX rY"},
    {"X[i] = X[i];", "rX wX"},
    {"Y[i] = *X;", "rX wY"},
    {"X[i] = (Y[i] = 2.0f);", "wX wY"},
    {"{ float4 v = vload4(0, X + 4 * i); vstore4(v, i, Y); }", "rX wY"},
    {"Y[i] = X[i] == 1.0f ? 1.0f : 0.0f;", "rX wY"},
    {"Q[0] = Q[1];", "rQ wQ"},
    {"{ __global float* arr[2] = {X, Y}; arr[1][i] = arr[0][i]; }", "rX wY"},
    {"X[i] = 0.0f; X[i] -= Y[i];", "wX rX rY"},
    {"/* X[i] = 1.0f; */ Y[i] = 2.0f;", "wY"},
    {"if (X[i] > 0.0f) return;", "rX"},
    {"{ int j = i; X[j] = Y[j]; }", "wX rY"},
    {"X[i] = vload4(0, Y).x;", "wX rY"},
    {"Y[i] = X[i] + Q[i];", "rX rQ wY"},
    {"Q[i] = X[i] < Y[i];", "wQ rX rY"},
    {"barrier(CLK_GLOBAL_MEM_FENCE);", ""},
    {"X[i] = sizeof(Y[0]);", "wX"},
    // macros (defined in kHead): object-like ones the reader expands, function-like ones it does not
    {"STORE_X;", "wX"},
    {"Y[i] = READ_X;", "rX wY"},
    {"X AT_I = Y[i];", "wX rY"},
    {"X[i] BECOMES Y[i];", "wX rY"},
    {"ASSIGN(X[i]);", "wX"},
    {"CAT(p, 0)[i] = Y[i];", "w0 rY"},  // a name made by pasting: the body cannot be followed
};

// The top of every program: the macro and helpers the forms use.
constexpr const char* kHead =
    "#define ENC_ON\n"
    "#define ENC_LEVEL 3\n"
    "#define SET(p, v) p[i] = (v)\n"
    "#define STORE_p0 p0[i] = 1.0f\n#define STORE_p1 p1[i] = 1.0f\n#define STORE_p2 p2[i] = 1.0f\n"
    "#define READ_p0 p0[i]\n#define READ_p1 p1[i]\n#define READ_p2 p2[i]\n"
    "#define AT_I [i]\n#define BECOMES =\n#define ASSIGN(a) a = 1.0f\n#define CAT(a, b) a##b\n"
    "void put(__global float* p, int k) { p[k] = 1.0f; }\n"
    "float get(__global float* p, int k) { return p[k]; }\n";

struct Effect {
  bool read = false, write = false;
};

// A statement in its wrapper, and whether its effects hold (false: #if 0, #ifndef of the name the
// program defines, #ifdef of a name it never defines). `assume`: the program may take the wrapper
// that tests a name it never defines (the build options could define it, so the reader, which
// assumes it undefined, then infers nothing for the whole program: every pointer stays inout).
std::string wrap(std::mt19937& rng, std::string s, const std::string& x, int id, bool assume, bool& holds) {
  holds = true;
  switch (rng() % 11) {
    case 0: return "  if (n > 1) { " + s + " }\n";
    case 1: return "#if 1\n  " + s + "\n#endif\n";
    case 2: holds = false; return "#if 0\n  " + s + "\n#endif\n";
    case 3: return "#ifdef ENC_ON\n  " + s + "\n#endif\n";
    case 4: holds = false; return "#ifndef ENC_ON\n  " + s + "\n#else\n  barrier(CLK_LOCAL_MEM_FENCE);\n#endif\n";
    case 5: return "#if defined(ENC_ON) && ENC_LEVEL > 2\n  " + s + "\n#endif\n";
    case 6:
      if (!assume) return "  " + s + "\n";
      holds = false;
      return "#ifdef ENC_UNDEFINED\n  " + s + "\n#endif\n";
    case 7: return "  for (int r = 0; r < 2; ++r) { " + s + " }\n";
    case 8: {  // an object-like macro standing for X, undefined after the statement
      const std::string alias = "ALIAS" + std::to_string(id);
      for (size_t at = 0; (at = s.find(x, at)) != std::string::npos;) {
        auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        const bool word = (at == 0 || !ident(s[at - 1])) && (at + x.size() >= s.size() || !ident(s[at + x.size()]));
        if (word) {
          s.replace(at, x.size(), alias);
          at += alias.size();
        } else {
          at += x.size();
        }
      }
      return "#define " + alias + " " + x + "\n  " + s + "\n#undef " + alias + "\n";
    }
    default: return "  " + s + "\n";
  }
}

// One kernel named `name` over p0, p1, p2 (float) and q (int), with its true effects per parameter.
std::string kernel(std::mt19937& rng, const std::string& name, int& ids, bool assume, std::vector<Effect>& truth) {
  static const char* floats[] = {"p0", "p1", "p2"};
  truth.assign(4, {});
  std::string body;
  const int statements = 1 + static_cast<int>(rng() % 4);
  for (int s = 0; s < statements; ++s) {
    const Form& f = kForms[rng() % std::size(kForms)];
    const std::string x = floats[rng() % 3], y = floats[rng() % 3];
    std::string text = f.text;
    auto put_name = [&](char placeholder, const std::string& n) {
      for (size_t at; (at = text.find(placeholder)) != std::string::npos;) text.replace(at, 1, n);
    };
    put_name('X', x);
    put_name('Y', y);
    put_name('Q', "q");
    bool holds = true;
    body += wrap(rng, text, x, ids++, assume, holds);
    if (!holds) continue;
    for (const char* e = f.effects; *e; ++e) {
      if (*e != 'r' && *e != 'w') continue;
      const char who = e[1];
      const size_t p = who == 'Q' ? 3 : std::isdigit(static_cast<unsigned char>(who)) ? static_cast<size_t>(who - '0')
                                                                                       : static_cast<size_t>((who == 'X' ? x : y)[1] - '0');
      (*e == 'r' ? truth[p].read : truth[p].write) = true;
    }
  }
  return "__kernel void " + name + "(__global float* p0, __global float* p1, __global float* p2, __global int* q, int n) {\n"
         "  int i = get_global_id(0);\n" + body + "}\n";
}

}  // namespace gen

TEST(AccessInfer, GeneratedKernelsNeverClaimLessThanTheBodyDoes) {
  // a longer run: ENCORE_TEST_GEN_PROGRAMS=N programs (the first 24 are always the same)
  const char* more = std::getenv("ENCORE_TEST_GEN_PROGRAMS");
  const int programs = more ? std::max(24, std::atoi(more)) : 24;
  std::mt19937 rng(20261206);
  Device null_dev = Device::open("NULL");
  const bool cl = encore_test::have_cl();
  size_t params = 0, read_only = 0, read_only_in = 0, unused = 0, unused_none = 0, stored = 0, stored_proven = 0;
  // programs built on OpenCL as well (all of them: ENCORE_TEST_BUILD_ALL=1; each takes ~1 s on PoCL)
  const int kBuilt = std::getenv("ENCORE_TEST_BUILD_ALL") ? programs : 4;
  for (int prog = 0; prog < programs; ++prog) {
    std::string src = gen::kHead;
    std::vector<std::vector<gen::Effect>> truth(16);
    int ids = 0;
    const bool assume = prog % 6 == 5;  // a few programs test a name they never define
    for (int k = 0; k < 16; ++k) src += gen::kernel(rng, "k" + std::to_string(k), ids, assume, truth[static_cast<size_t>(k)]);
    Program p = null_dev.compile(src);
    if (cl && prog < kBuilt) {
      EXPECT_NO_THROW((void)Device::open().compile(src)) << src;  // real OpenCL C
    }
    for (int k = 0; k < 16; ++k) {
      const auto& ps = p.kernel("k" + std::to_string(k)).params();
      ASSERT_EQ(ps.size(), 5u);
      for (size_t j = 0; j < 4; ++j) {
        const gen::Effect& t = truth[static_cast<size_t>(k)][j];
        const Access a = ps[j].default_access();
        const std::string where = "kernel k" + std::to_string(k) + " parameter " + ps[j].name + " of program " + std::to_string(prog) + ":\n" + src;
        ++params;
        if (a == Access::in) {
          EXPECT_FALSE(t.write) << "in, but the body writes it: " << where;
        }
        if (a == Access::none) {
          EXPECT_FALSE(t.read || t.write) << "none, but the body uses it: " << where;
        }
        if (ps[j].inferred_store_only) {
          EXPECT_FALSE(t.read) << "store-only, but the body reads it: " << where;
        }
        if (t.read && !t.write) {
          ++read_only;
          read_only_in += a == Access::in;
        }
        if (!t.read && !t.write) {
          ++unused;
          unused_none += a == Access::none || a == Access::in;
        }
        if (t.write && !t.read) {
          ++stored;
          stored_proven += ps[j].inferred_store_only;
        }
      }
    }
  }
  std::printf("generated: %zu parameters; read-only %zu (inferred in %zu), untouched %zu (none or in %zu), only stored %zu (proven %zu)\n", params,
              read_only, read_only_in, unused, unused_none, stored, stored_proven);
  // the reader is conservative, not blind: most of what a body plainly does is found
  EXPECT_GT(read_only_in * 2, read_only);
  EXPECT_GT(unused_none * 2, unused);
  EXPECT_GT(stored_proven * 4, stored);
}
