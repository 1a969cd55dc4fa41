#include "weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace mlp {

namespace {
constexpr char kMagic[8] = {'E', 'N', 'C', 'M', 'L', 'P', 'W', '1'};
}

void save_weights(const std::string& path, const SavedWeights& w) {
  if (w.params.size() != w.grads.size()) throw std::runtime_error("save_weights: params and grads differ in size");
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const uint64_t n = w.params.size();
  f.write(kMagic, sizeof kMagic);
  f.write(reinterpret_cast<const char*>(&n), sizeof n);
  f.write(reinterpret_cast<const char*>(w.params.data()), std::streamsize(n * sizeof(float)));
  f.write(reinterpret_cast<const char*>(w.grads.data()), std::streamsize(n * sizeof(float)));
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path);
}

SavedWeights load_weights(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  char magic[sizeof kMagic];
  uint64_t n = 0;
  f.read(magic, sizeof magic);
  f.read(reinterpret_cast<char*>(&n), sizeof n);
  if (!f || std::memcmp(magic, kMagic, sizeof kMagic) != 0 || n > (uint64_t(1) << 32))
    throw std::runtime_error(path + " is not a train_mlp weights file");
  SavedWeights w;
  w.params.resize(n);
  w.grads.resize(n);
  f.read(reinterpret_cast<char*>(w.params.data()), std::streamsize(n * sizeof(float)));
  f.read(reinterpret_cast<char*>(w.grads.data()), std::streamsize(n * sizeof(float)));
  if (!f) throw std::runtime_error(path + " is truncated");
  return w;
}

RelativeError relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) throw std::runtime_error("relative_error: sizes differ");
  double max_a = 0, max_d = 0, ss_a = 0, ss_d = 0;
  bool nan = false;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], d = double(a[i]) - double(b[i]);
    if (std::isnan(d)) nan = true;
    max_a = std::max(max_a, std::fabs(x));
    max_d = std::max(max_d, std::fabs(d));
    ss_a += x * x;
    ss_d += d * d;
  }
  const double inf = std::numeric_limits<double>::infinity();
  RelativeError e;
  e.max_abs = nan ? inf : max_d;
  auto ratio = [&](double num, double den) { return nan ? inf : num == 0 ? 0.0 : den == 0 ? inf : num / den; };
  e.max_rel = ratio(max_d, max_a);
  e.l2_rel = ratio(std::sqrt(ss_d), std::sqrt(ss_a));
  return e;
}

}  // namespace mlp
