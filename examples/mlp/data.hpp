#pragma once
// Host side of training: seeded shuffling and minibatch gathering into upload buffers.
#include <cstdint>
#include <span>
#include <vector>

#include <encore/encore.hpp>

#include "idx.hpp"

namespace mlp {

// A permutation of 0..n-1, deterministic for (seed, epoch) (own Fisher-Yates: portable).
std::vector<uint32_t> shuffled(size_t n, uint64_t seed, uint64_t epoch);

// Pixels scaled to [0, 1] and labels as i32 for the examples `idx`.
void gather(const Images& im, const Labels& lb, std::span<const uint32_t> idx, std::vector<float>& x, std::vector<int32_t>& y);

// Device upload buffers for one batch, filled with copyin before a step.
struct Batch {
  encore::Buffer x, y;
  Batch() = default;
  Batch(const encore::Device& dev, int rows, int features)
      : x(dev.alloc<float>(size_t(rows) * features)), y(dev.alloc<int32_t>(size_t(rows))) {
    x.set_name("images");
    y.set_name("labels");
  }
  void upload(const std::vector<float>& hx, const std::vector<int32_t>& hy) const {
    x.copyin(hx);
    y.copyin(hy);
  }
};

}  // namespace mlp
