// IDX reading through Boost.Iostreams (gzip_decompressor for .gz files).
#include "idx.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <fstream>

namespace mlp {

namespace io = boost::iostreams;

namespace {

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// Reads the whole (decompressed) file.
std::vector<uint8_t> read_all(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) throw DataError(file.string() + ": no such file (install dataset-fashion-mnist or pass --data DIR)");
  std::ifstream raw(file, std::ios::binary);
  if (!raw) throw DataError(file.string() + ": cannot open");
  std::vector<uint8_t> out;
  try {
    io::filtering_istream in;
    if (file.extension() == ".gz") in.push(io::gzip_decompressor());
    in.push(raw);
    char buf[1 << 16];
    while (in) {
      in.read(buf, sizeof buf);
      out.insert(out.end(), buf, buf + in.gcount());
    }
    if (in.bad())
      throw DataError(file.string() + (file.extension() == ".gz" ? ": not a valid gzip file (or truncated compressed data)" : ": read error"));
  } catch (const io::gzip_error& e) {
    throw DataError(file.string() + ": not a valid gzip file (" + e.what() + ")");
  }
  return out;
}

uint32_t be32(const std::vector<uint8_t>& d, size_t at) {
  return uint32_t(d[at]) << 24 | uint32_t(d[at + 1]) << 16 | uint32_t(d[at + 2]) << 8 | uint32_t(d[at + 3]);
}

// Checks the header (magic, dimension count) and the payload size; returns the dimensions.
std::vector<uint32_t> header(const std::vector<uint8_t>& d, const std::filesystem::path& file, uint32_t magic, size_t ndim) {
  const size_t hdr = 4 + 4 * ndim;
  if (d.size() < hdr)
    throw DataError(file.string() + ": truncated IDX header: expected " + std::to_string(hdr) + " bytes, found " + std::to_string(d.size()));
  if (be32(d, 0) != magic)
    throw DataError(file.string() + ": bad IDX magic: expected " + hex(magic) + ", found " + hex(be32(d, 0)));
  std::vector<uint32_t> dims;
  size_t payload = 1;
  for (size_t i = 0; i < ndim; ++i) {
    dims.push_back(be32(d, 4 + 4 * i));
    payload *= dims.back();
  }
  if (d.size() != hdr + payload)
    throw DataError(file.string() + ": " + (d.size() < hdr + payload ? "truncated" : "trailing bytes in") + " IDX data: expected " +
                    std::to_string(hdr + payload) + " bytes, found " + std::to_string(d.size()));
  return dims;
}

}  // namespace

Images load_idx_images(const std::filesystem::path& file) {
  std::vector<uint8_t> d = read_all(file);
  std::vector<uint32_t> dims = header(d, file, 0x803, 3);
  Images im;
  im.count = dims[0];
  im.rows = dims[1];
  im.cols = dims[2];
  im.pixels.assign(d.begin() + 16, d.end());
  return im;
}

Labels load_idx_labels(const std::filesystem::path& file) {
  std::vector<uint8_t> d = read_all(file);
  std::vector<uint32_t> dims = header(d, file, 0x801, 1);
  Labels lb;
  lb.count = dims[0];
  lb.values.assign(d.begin() + 8, d.end());
  return lb;
}

namespace {

void check_pair(const Images& im, const Labels& lb, const std::filesystem::path& images, const std::filesystem::path& labels) {
  if (im.rows != 28 || im.cols != 28)
    throw DataError(images.string() + ": expected 28x28 images, found " + std::to_string(im.rows) + "x" + std::to_string(im.cols));
  if (im.count != lb.count)
    throw DataError(labels.string() + ": expected " + std::to_string(im.count) + " labels (as many as " + images.filename().string() +
                    " has images), found " + std::to_string(lb.count));
  for (size_t i = 0; i < lb.count; ++i)
    if (lb.values[i] > 9)
      throw DataError(labels.string() + ": label " + std::to_string(i) + " is " + std::to_string(lb.values[i]) + ", expected 0..9");
}

}  // namespace

Dataset load_fashion_mnist(const std::filesystem::path& dir) {
  Dataset ds;
  const auto ti = dir / "train-images-idx3-ubyte.gz", tl = dir / "train-labels-idx1-ubyte.gz";
  const auto vi = dir / "t10k-images-idx3-ubyte.gz", vl = dir / "t10k-labels-idx1-ubyte.gz";
  ds.train_images = load_idx_images(ti);
  ds.train_labels = load_idx_labels(tl);
  ds.test_images = load_idx_images(vi);
  ds.test_labels = load_idx_labels(vl);
  check_pair(ds.train_images, ds.train_labels, ti, tl);
  check_pair(ds.test_images, ds.test_labels, vi, vl);
  return ds;
}

}  // namespace mlp
