#pragma once
// The final state train_mlp --save-weights writes and --compare-weights reads: a small binary file,
//   8 bytes "ENCMLPW1", u64 n (little-endian host order), f32 params[n], f32 grads[n]
// (grads: the gradient of the last training step, after the data-parallel all-reduce).
#include <string>
#include <vector>

namespace mlp {

struct SavedWeights {
  std::vector<float> params, grads;
};

void save_weights(const std::string& path, const SavedWeights& w);  // throws std::runtime_error
SavedWeights load_weights(const std::string& path);                 // throws std::runtime_error

// Relative differences of b from the reference a (equal sizes): max|a-b| / max|a| and
// ||a-b||_2 / ||a||_2 (0 when both are all zero; infinite when a is zero and b is not, or on NaN).
struct RelativeError {
  double max_rel = 0, l2_rel = 0, max_abs = 0;
};
RelativeError relative_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace mlp
