#pragma once
// A multi-layer perceptron (ReLU hidden layers, softmax cross-entropy, Adam) written eagerly against
// encore's API, so one training step can be wrapped in a TinyJit:
//   mlp::Model model(dev, {.sizes = {784, 256, 128, 10}, .batch = 128});
//   model.init(seed);
//   auto step = encore::TinyJit([&](const encore::Buffer& x, const encore::Buffer& y, encore::BoundVar,
//                                   encore::BoundVar, encore::BoundVar) { return model.train_step(x, y); });
//   encore::Buffer loss = step(x, y, model.lr.bind(1e-3f), model.bc1.bind(b1), model.bc2.bind(b2));
// Parameters, gradients and Adam's moments each live in one buffer (layer tensors are views at
// 128-byte aligned offsets), so one Adam launch updates everything. The class count is padded to a
// multiple of 4 (padded logits are ignored by the loss and their weights stay zero).
#include <cstdint>
#include <functional>
#include <vector>

#include <encore/encore.hpp>

#include "kernels.hpp"

namespace mlp {

struct Config {
  std::vector<int> sizes{784, 256, 128, 10};  // input, hidden..., classes; all but classes multiples of 4
  int batch = 128;                            // a multiple of 4
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // Examples the loss gradient is averaged over (0: batch). Data-parallel training sets the global
  // batch here, so that summing every rank's gradient gives the mean over the global batch.
  int grad_batch = 0;
  // Gradient accumulation: the batch's gradient is computed over `grad_shards` equal contiguous
  // shards, summed in shard order (shard 0 + shard 1, then + shard 2, ...). That is bit for bit what
  // data-parallel training over that many ranks computes with encore::Communicator's sum, so a
  // single process can reproduce an N-rank run exactly. batch / grad_shards must be a multiple of 4
  // and a shard's images a multiple of the device's view alignment in bytes.
  int grad_shards = 1;
};

struct Layer {
  int in = 0, out = 0, out_pad = 0;  // out_pad: out rounded up to a multiple of 4
  size_t w_offset = 0, b_offset = 0; // element offsets into the parameter buffer
  encore::Buffer W, b, dW, db;       // views: W [in, out_pad], b [out_pad]
};

// Adam's per-step host values: bias corrections 1/(1-beta^t).
struct AdamFactors {
  double bc1 = 1, bc2 = 1;
};
AdamFactors adam_factors(const Config& c, int64_t t);

// Deterministic uniform in [lo, hi) from (seed, index): portable across standard libraries.
float hash_uniform(uint64_t seed, uint64_t index, float lo, float hi);
uint64_t hash64(uint64_t seed, uint64_t index);

class Model {
 public:
  Model(const encore::Device& dev, Config cfg);

  const Config& config() const { return cfg_; }
  const Kernels& kernels() const { return k_; }
  const std::vector<Layer>& layers() const { return layers_; }
  int classes() const { return cfg_.sizes.back(); }
  int stride() const { return layers_.back().out_pad; }
  size_t num_params() const { return total_; }  // including alignment padding
  double flops_per_step() const;                // GEMM multiply-adds x2 of one training step

  // Kaiming-uniform weights, zero biases, zero Adam moments (deterministic for a seed).
  void init(uint64_t seed);
  std::vector<float> get_params() const { return params_.copyout<float>(); }
  // Zero gradients and Adam's moments (a fresh optimizer; the parameters stay).
  void reset_optimizer() const;
  void set_params(const std::vector<float>& p) const { params_.copyin(p); }

  // One training step on x f32 [rows, in] and labels i32 [rows]: forward, loss, backward, Adam
  // (using the current values of lr, bc1, bc2). Returns the per-example loss f32 [rows]. rows is
  // the batch or a smaller last batch (a multiple of 4 x grad_shards), averaged over its own
  // examples (over all ranks' shares of it: grad_batch x rows / batch); each size is a TinyJit
  // signature of its own.
  // `reduce_grads`, when given, runs between the backward pass and Adam on the gradient buffer
  // (data-parallel: an all-reduce over the ranks), inside the same capture.
  encore::Buffer train_step(const encore::Buffer& x, const encore::Buffer& y,
                            const std::function<void(const encore::Buffer&)>& reduce_grads = {}) const;
  // Forward only, for `rows` examples: logits f32 [rows, stride()].
  encore::Buffer forward(const encore::Buffer& x, int rows) const;
  // Forward, loss and gradients (into the gradient buffer) without the update; returns the loss.
  encore::Buffer loss_and_grad(const encore::Buffer& x, const encore::Buffer& y) const;
  // The same for `rows` examples x, labels y from row `row0` on, writing the loss into `loss` from
  // row0 on and the gradients, scaled by `scale`, into `g` (laid out like the gradient buffer).
  void loss_and_grad_into(const encore::Buffer& x, const encore::Buffer& y, int row0, int rows, const encore::Buffer& loss,
                          const encore::Buffer& g, float scale) const;
  // Per-example 0/1 correctness i32 [rows] of the argmax prediction.
  encore::Buffer eval_step(const encore::Buffer& x, const encore::Buffer& y, int rows) const;
  std::vector<float> get_grads() const { return grads_.copyout<float>(); }
  // The whole parameter and gradient buffers (every layer's tensors are views into them).
  const encore::Buffer& params() const { return params_; }
  const encore::Buffer& grads() const { return grads_; }

  encore::Variable lr = encore::Variable::f32("lr", 0, 1);
  encore::Variable bc1 = encore::Variable::f32("adam_bc1", 1, 1e7);
  encore::Variable bc2 = encore::Variable::f32("adam_bc2", 1, 1e7);

 private:
  int rows_of(const encore::Buffer& x, const encore::Buffer& y) const;  // checked
  float grad_scale(int rows) const;
  void check_shard_rows(int rows) const;

  encore::Device dev_;
  Config cfg_;
  Kernels k_;
  std::vector<Layer> layers_;
  size_t total_ = 0;
  encore::Buffer params_, grads_, m_, v_;
  encore::Buffer shard_grads_;  // grad_shards > 1: one shard's gradient before it is added
};

}  // namespace mlp
