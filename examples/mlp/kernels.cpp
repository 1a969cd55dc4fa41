#include "kernels.hpp"

namespace mlp {

const char* const kKernelSource = R"CLC(
#define FMA4(c, s, b) c = mad((float4)(s), b, c)

__kernel void mlp_gemm_nn(__global const float* A, __global const float* B, __global const float* bias,
                          __global float* C, int M, int N, int K, int relu) {
  const int j = get_global_id(0) * 4, i = get_global_id(1) * 4;
  const __global float* a0 = A + i * K;
  const __global float* a1 = a0 + K;
  const __global float* a2 = a1 + K;
  const __global float* a3 = a2 + K;
  float4 c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (int k = 0; k < K; k += 4) {
    const float4 x0 = vload4(0, a0 + k), x1 = vload4(0, a1 + k), x2 = vload4(0, a2 + k), x3 = vload4(0, a3 + k);
    const __global float* bk = B + k * N + j;
    const float4 b0 = vload4(0, bk), b1 = vload4(0, bk + N), b2 = vload4(0, bk + 2 * N), b3 = vload4(0, bk + 3 * N);
    FMA4(c0, x0.x, b0); FMA4(c0, x0.y, b1); FMA4(c0, x0.z, b2); FMA4(c0, x0.w, b3);
    FMA4(c1, x1.x, b0); FMA4(c1, x1.y, b1); FMA4(c1, x1.z, b2); FMA4(c1, x1.w, b3);
    FMA4(c2, x2.x, b0); FMA4(c2, x2.y, b1); FMA4(c2, x2.z, b2); FMA4(c2, x2.w, b3);
    FMA4(c3, x3.x, b0); FMA4(c3, x3.y, b1); FMA4(c3, x3.z, b2); FMA4(c3, x3.w, b3);
  }
  const float4 bb = vload4(0, bias + j);
  c0 += bb; c1 += bb; c2 += bb; c3 += bb;
  if (relu) { c0 = fmax(c0, 0.0f); c1 = fmax(c1, 0.0f); c2 = fmax(c2, 0.0f); c3 = fmax(c3, 0.0f); }
  vstore4(c0, 0, C + i * N + j);
  vstore4(c1, 0, C + (i + 1) * N + j);
  vstore4(c2, 0, C + (i + 2) * N + j);
  vstore4(c3, 0, C + (i + 3) * N + j);
}

#define HSUM(v) ((v).x + (v).y + (v).z + (v).w)
__kernel void mlp_gemm_nt(__global const float* A, __global const float* B, __global const float* H,
                          __global float* C, int M, int N, int K) {
  const int j = get_global_id(0) * 4, i = get_global_id(1) * 4;
  float4 s[4][4];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) s[r][c] = 0;
  for (int k = 0; k < K; k += 4) {
    float4 a[4], b[4];
    for (int r = 0; r < 4; ++r) a[r] = vload4(0, A + (i + r) * K + k);
    for (int c = 0; c < 4; ++c) b[c] = vload4(0, B + (j + c) * K + k);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) s[r][c] = mad(a[r], b[c], s[r][c]);
  }
  for (int r = 0; r < 4; ++r) {
    const float4 h = vload4(0, H + (i + r) * N + j);
    const float4 v = (float4)(HSUM(s[r][0]), HSUM(s[r][1]), HSUM(s[r][2]), HSUM(s[r][3]));
    vstore4(select((float4)0.0f, v, h > 0.0f), 0, C + (i + r) * N + j);
  }
}

__kernel void mlp_gemm_tn(__global const float* A, __global const float* B, __global float* C, int M, int N, int K) {
  const int j = get_global_id(0) * 4, i = get_global_id(1) * 4;
  float4 c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (int k = 0; k < K; ++k) {
    const float4 a = vload4(0, A + k * M + i), b = vload4(0, B + k * N + j);
    FMA4(c0, a.x, b); FMA4(c1, a.y, b); FMA4(c2, a.z, b); FMA4(c3, a.w, b);
  }
  vstore4(c0, 0, C + i * N + j);
  vstore4(c1, 0, C + (i + 1) * N + j);
  vstore4(c2, 0, C + (i + 2) * N + j);
  vstore4(c3, 0, C + (i + 3) * N + j);
}

__kernel void mlp_colsum(__global const float* A, __global float* S, int M, int N) {
  const int n = get_global_id(0);
  float s = 0;
  for (int m = 0; m < M; ++m) s += A[m * N + n];
  S[n] = s;
}

__kernel void mlp_softmax_xent(__global const float* Z, __global const int* labels, __global float* dZ,
                               __global float* loss, int row0, int classes, int stride, float scale) {
  const int r = get_global_id(0);
  const __global float* z = Z + r * stride;
  float mx = z[0];
  for (int c = 1; c < classes; ++c) mx = fmax(mx, z[c]);
  float sum = 0;
  for (int c = 0; c < classes; ++c) sum += exp(z[c] - mx);
  const int y = labels[row0 + r];
  loss[row0 + r] = log(sum) - (z[y] - mx);
  const float inv = 1.0f / sum;
  for (int c = 0; c < stride; ++c)
    dZ[r * stride + c] = c < classes ? (exp(z[c] - mx) * inv - (c == y ? 1.0f : 0.0f)) * scale : 0.0f;
}

__kernel void mlp_count_correct(__global const float* Z, __global const int* labels, __global int* correct,
                                int classes, int stride) {
  const int r = get_global_id(0);
  const __global float* z = Z + r * stride;
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (z[c] > z[best]) best = c;
  correct[r] = best == labels[r];
}

// p -= lr * (m * bc1) / (sqrt(v * bc2) + eps), with m, v the moving averages; bc1 = 1/(1-b1^t),
// bc2 = 1/(1-b2^t) from the host each step.
__kernel void mlp_adam(__global float* P, __global const float* G, __global float* Mo, __global float* V,
                       float lr, float bc1, float bc2, float b1, float b2, float eps) {
  const int i = get_global_id(0);
  const float4 g = vload4(i, G);
  const float4 m = mad((float4)b1, vload4(i, Mo), (1.0f - b1) * g);
  const float4 v = mad((float4)b2, vload4(i, V), (1.0f - b2) * g * g);
  vstore4(m, i, Mo);
  vstore4(v, i, V);
  vstore4(vload4(i, P) - lr * (m * bc1) / (sqrt(v * bc2) + eps), i, P);
}

__kernel void mlp_add(__global float* A, __global const float* B) {
  const int i = get_global_id(0);
  vstore4(vload4(i, A) + vload4(i, B), i, A);
}
)CLC";

}  // namespace mlp

#include <string>

namespace mlp {

using encore::Buffer;
using encore::Sizes;

size_t divisor_at_most(size_t n, size_t cap) {
  for (size_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

namespace {

void check4(int v, const char* what, const char* kernel) {
  if (v <= 0 || v % 4 != 0)
    throw encore::ArgumentError(std::string(kernel) + ": " + what + " = " + std::to_string(v) + ", expected a positive multiple of 4");
}

// global {N/4, M/4}: up to 16 tiles across, up to 64 work items per group.
std::pair<Sizes, Sizes> tile_grid(int M, int N) {
  const size_t gx = size_t(N) / 4, gy = size_t(M) / 4;
  const size_t lx = divisor_at_most(gx, 16), ly = divisor_at_most(gy, 64 / lx);
  return {Sizes{gx, gy}, Sizes{lx, ly}};
}

}  // namespace

Kernels::Kernels(const encore::Device& dev) : dev_(dev), prog_(dev.compile(kKernelSource)) {
  nn_ = prog_.kernel("mlp_gemm_nn");
  nt_ = prog_.kernel("mlp_gemm_nt");
  tn_ = prog_.kernel("mlp_gemm_tn");
  colsum_ = prog_.kernel("mlp_colsum");
  xent_ = prog_.kernel("mlp_softmax_xent");
  correct_ = prog_.kernel("mlp_count_correct");
  adam_ = prog_.kernel("mlp_adam");
  add_ = prog_.kernel("mlp_add");
}

void Kernels::gemm_nn(const Buffer& A, const Buffer& B, const Buffer& bias, const Buffer& C, int M, int N, int K, bool relu,
                      const char* name) const {
  check4(M, "M", name), check4(N, "N", name), check4(K, "K", name);
  auto [g, l] = tile_grid(M, N);
  dev_.launch_args(nn_, g, l, {A, B, bias, encore::out(C), M, N, K, int(relu)}, name, {2.0 * M * N * K, 4.0 * (M * K + K * N + M * N)});
}

void Kernels::gemm_nt(const Buffer& A, const Buffer& B, const Buffer& H, const Buffer& C, int M, int N, int K, const char* name) const {
  check4(M, "M", name), check4(N, "N", name), check4(K, "K", name);
  auto [g, l] = tile_grid(M, N);
  dev_.launch_args(nt_, g, l, {A, B, H, encore::out(C), M, N, K}, name, {2.0 * M * N * K, 4.0 * (M * K + K * N + 2 * M * N)});
}

void Kernels::gemm_tn(const Buffer& A, const Buffer& B, const Buffer& C, int M, int N, int K, const char* name) const {
  check4(M, "M", name), check4(N, "N", name), check4(K, "K", name);
  auto [g, l] = tile_grid(M, N);
  dev_.launch_args(tn_, g, l, {A, B, encore::out(C), M, N, K}, name, {2.0 * M * N * K, 4.0 * (M * K + K * N + M * N)});
}

void Kernels::colsum(const Buffer& A, const Buffer& S, int M, int N, const char* name) const {
  dev_.launch_args(colsum_, Sizes{size_t(N)}, Sizes{divisor_at_most(size_t(N), 64)}, {A, encore::out(S), M, N}, name);
}

void Kernels::softmax_xent(const Buffer& Z, const Buffer& labels, const Buffer& dZ, const Buffer& loss, int row0, int rows,
                           int classes, int stride, float scale) const {
  dev_.launch_args(xent_, Sizes{size_t(rows)}, Sizes{divisor_at_most(size_t(rows), 64)},
                   {Z, labels, encore::out(dZ), encore::out(loss), row0, classes, stride, scale}, "softmax_xent");
}

void Kernels::count_correct(const Buffer& Z, const Buffer& labels, const Buffer& correct, int rows, int classes, int stride) const {
  dev_.launch_args(correct_, Sizes{size_t(rows)}, Sizes{divisor_at_most(size_t(rows), 64)},
                   {Z, labels, encore::out(correct), classes, stride}, "count_correct");
}

void Kernels::adam(const Buffer& P, const Buffer& G, const Buffer& M, const Buffer& V, size_t n, const encore::Variable& lr,
                   const encore::Variable& bc1, const encore::Variable& bc2, float beta1, float beta2, float eps) const {
  if (n % 4) throw encore::ArgumentError("adam: n = " + std::to_string(n) + ", expected a multiple of 4");
  dev_.launch_args(adam_, Sizes{n / 4}, Sizes{divisor_at_most(n / 4, 64)},
                   {encore::inout(P), G, encore::inout(M), encore::inout(V), lr, bc1, bc2, beta1, beta2, eps}, "adam");
}

void Kernels::add(const Buffer& A, const Buffer& B, size_t n, const char* name) const {
  if (n % 4) throw encore::ArgumentError(std::string(name) + ": n = " + std::to_string(n) + ", expected a multiple of 4");
  dev_.launch_args(add_, Sizes{n / 4}, Sizes{divisor_at_most(n / 4, 64)}, {encore::inout(A), B}, name);
}

}  // namespace mlp
