#pragma once
// Reading MNIST-style IDX files (optionally gzip-compressed, as Debian's dataset-fashion-mnist ships
// them): big-endian header (magic 0x00000803 for u8 images, 0x00000801 for u8 labels, then the
// dimensions), then the raw bytes.
//   mlp::Images im = mlp::load_idx_images("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
//   mlp::Labels lb = mlp::load_idx_labels(".../train-labels-idx1-ubyte.gz");
// Every problem (missing file, bad gzip, wrong magic, truncated data) is a DataError naming the
// file, what was expected and what was found.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlp {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Images {
  size_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
  size_t size() const { return rows * cols; }
};

struct Labels {
  size_t count = 0;
  std::vector<uint8_t> values;
};

// A ".gz" file is decompressed on the fly; any other name is read as plain IDX.
Images load_idx_images(const std::filesystem::path& file);
Labels load_idx_labels(const std::filesystem::path& file);

// The four Fashion-MNIST files in `dir`, checked against each other (equal counts, 28x28, labels < 10).
struct Dataset {
  Images train_images, test_images;
  Labels train_labels, test_labels;
};
Dataset load_fashion_mnist(const std::filesystem::path& dir);
inline const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

}  // namespace mlp
