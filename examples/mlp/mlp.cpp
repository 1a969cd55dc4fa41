#include "mlp.hpp"

#include <cmath>
#include <string>

namespace mlp {

using encore::Buffer;

namespace {

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t hash64(uint64_t seed, uint64_t index) { return splitmix(splitmix(seed) ^ index); }

float hash_uniform(uint64_t seed, uint64_t index, float lo, float hi) {
  const double u = double(hash64(seed, index) >> 11) * 0x1.0p-53;
  return float(lo + (hi - lo) * u);
}

AdamFactors adam_factors(const Config& c, int64_t t) {
  return {1.0 / (1.0 - std::pow(double(c.beta1), double(t))), 1.0 / (1.0 - std::pow(double(c.beta2), double(t)))};
}

Model::Model(const encore::Device& dev, Config cfg) : dev_(dev), cfg_(std::move(cfg)), k_(dev) {
  if (cfg_.sizes.size() < 2) throw encore::ArgumentError("mlp::Model: need at least input and output sizes");
  if (cfg_.batch <= 0 || cfg_.batch % 4) throw encore::ArgumentError("mlp::Model: batch " + std::to_string(cfg_.batch) + " is not a positive multiple of 4");
  if (cfg_.grad_batch < 0) throw encore::ArgumentError("mlp::Model: grad_batch " + std::to_string(cfg_.grad_batch) + " is negative");
  if (cfg_.grad_batch == 0) cfg_.grad_batch = cfg_.batch;
  if (cfg_.grad_shards < 1 || cfg_.batch % (4 * cfg_.grad_shards))
    throw encore::ArgumentError("mlp::Model: batch " + std::to_string(cfg_.batch) + " does not split into " + std::to_string(cfg_.grad_shards) +
                                " shards of a multiple of 4");
  // a shard's images are a view of the batch's (its labels and loss are read in place)
  if (cfg_.grad_shards > 1) check_shard_rows(cfg_.batch / cfg_.grad_shards);
  for (size_t i = 0; i + 1 < cfg_.sizes.size(); ++i)
    if (cfg_.sizes[i] <= 0 || cfg_.sizes[i] % 4)
      throw encore::ArgumentError("mlp::Model: layer size " + std::to_string(cfg_.sizes[i]) + " is not a positive multiple of 4");
  // Offsets are multiples of 32 floats (128 bytes, the view alignment); the total a multiple of 256
  // so Adam's float4 launch has a 64-wide local size.
  size_t at = 0;
  for (size_t i = 0; i + 1 < cfg_.sizes.size(); ++i) {
    Layer l;
    l.in = cfg_.sizes[i];
    l.out = cfg_.sizes[i + 1];
    l.out_pad = int(round_up(size_t(l.out), 4));
    l.w_offset = at;
    at = round_up(at + size_t(l.in) * l.out_pad, 32);
    l.b_offset = at;
    at = round_up(at + size_t(l.out_pad), 32);
    layers_.push_back(l);
  }
  total_ = round_up(at, 256);
  params_ = dev.alloc<float>(total_).set_name("params");
  grads_ = dev.alloc<float>(total_).set_name("grads");
  m_ = dev.alloc<float>(total_).set_name("adam_m");
  v_ = dev.alloc<float>(total_).set_name("adam_v");
  if (cfg_.grad_shards > 1) shard_grads_ = dev.alloc<float>(total_).set_name("shard_grads");
  for (Layer& l : layers_) {
    l.W = params_.view(l.w_offset, size_t(l.in) * l.out_pad);
    l.b = params_.view(l.b_offset, size_t(l.out_pad));
    l.dW = grads_.view(l.w_offset, size_t(l.in) * l.out_pad);
    l.db = grads_.view(l.b_offset, size_t(l.out_pad));
  }
}

double Model::flops_per_step() const {
  double f = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const double mnk = double(cfg_.batch) * layers_[i].in * layers_[i].out_pad;
    f += 2 * mnk * (i == 0 ? 2 : 3);  // forward, dW, and dX except for the first layer
  }
  return f;
}

void Model::init(uint64_t seed) {
  std::vector<float> p(total_, 0.0f);
  uint64_t idx = 0;
  for (const Layer& l : layers_) {
    const float bound = std::sqrt(6.0f / float(l.in));
    for (int r = 0; r < l.in; ++r)
      for (int c = 0; c < l.out; ++c) p[l.w_offset + size_t(r) * l.out_pad + c] = hash_uniform(seed, idx++, -bound, bound);
  }
  params_.copyin(p);
  reset_optimizer();
}

void Model::reset_optimizer() const {
  const std::vector<float> zeros(total_, 0.0f);
  grads_.copyin(zeros);  // gaps between tensors stay zero: Adam leaves their parameters at zero
  if (shard_grads_) shard_grads_.copyin(zeros);
  m_.copyin(zeros);
  v_.copyin(zeros);
}

Buffer Model::forward(const Buffer& x, int rows) const {
  Buffer a = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    Buffer next = dev_.alloc<float>(size_t(rows) * l.out_pad);
    const bool last = i + 1 == layers_.size();
    k_.gemm_nn(a, l.W, l.b, next, rows, l.out_pad, l.in, !last, last ? "fc_out.fwd" : "fc.fwd_relu");
    a = next;
  }
  return a;
}

void Model::check_shard_rows(int rows) const {
  const size_t bytes = size_t(rows) * size_t(cfg_.sizes.front()) * sizeof(float), align = dev_.info().base_align_bytes;
  if (bytes % align)
    throw encore::ArgumentError("mlp::Model: a shard of " + std::to_string(rows) + " images is " + std::to_string(bytes) +
                                " bytes, not a multiple of " + std::to_string(align) + " (the device's view alignment)");
}

int Model::rows_of(const Buffer& x, const Buffer& y) const {
  const int rows = int(y.count()), S = cfg_.grad_shards;
  if (rows <= 0 || rows > cfg_.batch || rows % (4 * S))
    throw encore::ArgumentError("mlp::Model: a batch of " + std::to_string(y.count()) + " labels; expected 4 to " + std::to_string(cfg_.batch) +
                                " in a multiple of " + std::to_string(4 * S));
  if (x.count() != size_t(rows) * size_t(cfg_.sizes.front()))
    throw encore::ArgumentError("mlp::Model: " + std::to_string(x.count()) + " input values for " + std::to_string(rows) + " labels; expected " +
                                std::to_string(size_t(rows) * size_t(cfg_.sizes.front())));
  if (size_t(cfg_.grad_batch) * size_t(rows) % size_t(cfg_.batch))
    throw encore::ArgumentError("mlp::Model: a batch of " + std::to_string(rows) + " is not a whole share of grad_batch " + std::to_string(cfg_.grad_batch) +
                                " over batch " + std::to_string(cfg_.batch));
  return rows;
}

float Model::grad_scale(int rows) const {
  // a smaller (last) batch is averaged over its own examples: over every rank's share of it
  return 1.0f / float(size_t(cfg_.grad_batch) * size_t(rows) / size_t(cfg_.batch));
}

Buffer Model::loss_and_grad(const Buffer& x, const Buffer& y) const {
  const int rows = rows_of(x, y);
  Buffer loss = dev_.alloc<float>(size_t(rows));
  loss_and_grad_into(x, y, 0, rows, loss, grads_, grad_scale(rows));
  return loss;
}

void Model::loss_and_grad_into(const Buffer& x, const Buffer& y, int row0, int rows, const Buffer& loss, const Buffer& g, float scale) const {
  const int B = rows;
  std::vector<Buffer> acts{x};
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    acts.push_back(dev_.alloc<float>(size_t(B) * l.out_pad));
    const bool last = i + 1 == layers_.size();
    k_.gemm_nn(acts[i], l.W, l.b, acts[i + 1], B, l.out_pad, l.in, !last, last ? "fc_out.fwd" : "fc.fwd_relu");
  }
  Buffer dz = dev_.alloc<float>(size_t(B) * stride());
  k_.softmax_xent(acts.back(), y, dz, loss, row0, B, classes(), stride(), scale);
  for (size_t i = layers_.size(); i-- > 0;) {
    const Layer& l = layers_[i];
    const Buffer dW = g.view(l.w_offset, size_t(l.in) * l.out_pad), db = g.view(l.b_offset, size_t(l.out_pad));
    k_.gemm_tn(acts[i], dz, dW, l.in, l.out_pad, B, "fc.dW");
    k_.colsum(dz, db, B, l.out_pad, "fc.db");
    if (i == 0) break;
    Buffer dprev = dev_.alloc<float>(size_t(B) * l.in);
    k_.gemm_nt(dz, l.W, acts[i], dprev, B, l.in, l.out_pad, "fc.dX_relu");
    dz = dprev;
  }
}

Buffer Model::train_step(const Buffer& x, const Buffer& y, const std::function<void(const Buffer&)>& reduce_grads) const {
  Buffer loss;
  if (cfg_.grad_shards == 1) {
    loss = loss_and_grad(x, y);
  } else {  // shard 0 into the gradient buffer, then each further shard's gradient added to it
    const int all = rows_of(x, y), S = cfg_.grad_shards, rows = all / S, in = cfg_.sizes.front();
    check_shard_rows(rows);
    loss = dev_.alloc<float>(size_t(all));
    for (int s = 0; s < S; ++s) {
      const size_t r0 = size_t(s) * rows;
      loss_and_grad_into(x.view(r0 * in, size_t(rows) * in), y, int(r0), rows, loss, s == 0 ? grads_ : shard_grads_, grad_scale(all));
      if (s > 0) k_.add(grads_, shard_grads_, total_, "grad_shard_add");
    }
  }
  if (reduce_grads) reduce_grads(grads_);
  k_.adam(params_, grads_, m_, v_, total_, lr, bc1, bc2, cfg_.beta1, cfg_.beta2, cfg_.eps);
  return loss;
}

Buffer Model::eval_step(const Buffer& x, const Buffer& y, int rows) const {
  Buffer logits = forward(x, rows);
  Buffer correct = dev_.alloc<int32_t>(size_t(rows));
  k_.count_correct(logits, y, correct, rows, classes(), stride());
  return correct;
}

}  // namespace mlp
