#include "data.hpp"

#include "mlp.hpp"

namespace mlp {

std::vector<uint32_t> shuffled(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<uint32_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = uint32_t(i);
  for (size_t i = n; i > 1; --i) {
    const size_t j = size_t(hash64(seed ^ 0x5eedULL, epoch * n + i) % i);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

void gather(const Images& im, const Labels& lb, std::span<const uint32_t> idx, std::vector<float>& x, std::vector<int32_t>& y) {
  const size_t f = im.size();
  x.resize(idx.size() * f);
  y.resize(idx.size());
  for (size_t r = 0; r < idx.size(); ++r) {
    const uint8_t* px = im.pixels.data() + size_t(idx[r]) * f;
    float* dst = x.data() + r * f;
    for (size_t c = 0; c < f; ++c) dst[c] = float(px[c]) * (1.0f / 255.0f);
    y[r] = lb.values[idx[r]];
  }
}

}  // namespace mlp
