#pragma once
// The MLP's OpenCL C kernels (one program). Row-major float matrices; every M, N, K a multiple of 4.
//   mlp_gemm_nn   C[M,N] = A[M,K]·B[K,N] + bias[N], then ReLU when relu != 0    (forward layer)
//   mlp_gemm_nt   C[M,N] = (A[M,K]·B[N,K]ᵀ) * (H[M,N] > 0)                        (dX = dY·Wᵀ through ReLU)
//   mlp_gemm_tn   C[M,N] = A[K,M]ᵀ·B[K,N]                                          (dW = Xᵀ·dY)
//   mlp_colsum    s[N] = Σ_m A[m,n]                                                  (db)
//   mlp_softmax_xent  per row: loss = logsumexp(z) - z[label]; dz = (softmax(z) - onehot) * scale
//   mlp_count_correct per row: correct = argmax(z) == label
//   mlp_adam      one Adam update over a whole parameter buffer (float4 per work item)
//   mlp_add       A[i] += B[i] (float4 per work item; summing gradient shards)
// Each GEMM work item computes a 4x4 tile of C with float4 loads; the launch is
// global {N/4, M/4} with the local size from gemm_local().
#include <cstddef>

namespace mlp {

extern const char* const kKernelSource;

}  // namespace mlp

#include <encore/encore.hpp>

namespace mlp {

// The compiled kernels with launch helpers (explicit local sizes, so PoCL compiles each
// work-group function once per shape). Buffers are row-major f32 unless stated.
class Kernels {
 public:
  explicit Kernels(const encore::Device& dev);
  const encore::Device& device() const { return dev_; }

  void gemm_nn(const encore::Buffer& A, const encore::Buffer& B, const encore::Buffer& bias, const encore::Buffer& C, int M, int N,
               int K, bool relu, const char* name = "gemm_nn") const;
  void gemm_nt(const encore::Buffer& A, const encore::Buffer& B, const encore::Buffer& H, const encore::Buffer& C, int M, int N,
               int K, const char* name = "gemm_nt") const;
  void gemm_tn(const encore::Buffer& A, const encore::Buffer& B, const encore::Buffer& C, int M, int N, int K,
               const char* name = "gemm_tn") const;
  void colsum(const encore::Buffer& A, const encore::Buffer& S, int M, int N, const char* name = "colsum") const;
  // Z [rows, stride] (the first `classes` columns are real); labels i32 and loss f32 from row
  // `row0` on (a shard of a batch reads its rows in place: a view there would need an aligned offset).
  void softmax_xent(const encore::Buffer& Z, const encore::Buffer& labels, const encore::Buffer& dZ, const encore::Buffer& loss,
                    int row0, int rows, int classes, int stride, float scale) const;
  void count_correct(const encore::Buffer& Z, const encore::Buffer& labels, const encore::Buffer& correct, int rows, int classes,
                     int stride) const;
  // n a multiple of 4; lr, bc1, bc2 are float Variables (per-call values).
  void adam(const encore::Buffer& P, const encore::Buffer& G, const encore::Buffer& M, const encore::Buffer& V, size_t n,
            const encore::Variable& lr, const encore::Variable& bc1, const encore::Variable& bc2, float beta1, float beta2,
            float eps) const;
  // A[i] += B[i] for i < n (n a multiple of 4): one float add per element, as a host reduction does.
  void add(const encore::Buffer& A, const encore::Buffer& B, size_t n, const char* name = "add") const;

 private:
  encore::Device dev_;
  encore::Program prog_;
  encore::Kernel nn_, nt_, tn_, colsum_, xent_, correct_, adam_, add_;
};

// The largest divisor of n that is at most cap (a local size that divides the global size).
size_t divisor_at_most(size_t n, size_t cap);

}  // namespace mlp
