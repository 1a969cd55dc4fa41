// The training demo's pieces (examples/mlp): every kernel against a host reference, gradients by
// finite differences, the IDX loader's errors, and a small training run eagerly and through
// TinyJit (the loss falls; replay gives bitwise the eager parameters).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <unistd.h>

#include "encore/encore.hpp"
#include "mlp/data.hpp"
#include "mlp/idx.hpp"
#include "mlp/kernels.hpp"
#include "mlp/mlp.hpp"

namespace {

using encore::Buffer;
using encore::Device;

std::vector<float> randv(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = mlp::hash_uniform(seed, i, lo, hi);
  return v;
}

Buffer upload(const Device& dev, const std::vector<float>& v) {
  Buffer b = dev.alloc<float>(v.size());
  b.copyin(v);
  return b;
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i]))) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  EXPECT_EQ(bad, 0u) << what;
}

class TrainKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
    dev = Device::open("CL:0");
    k = std::make_unique<mlp::Kernels>(dev);
  }
  Device dev;
  std::unique_ptr<mlp::Kernels> k;
};

TEST_F(TrainKernels, GemmNnBiasReluMatchesHost) {
  const int M = 8, N = 12, K = 20;
  auto A = randv(M * K, 1), B = randv(K * N, 2), bias = randv(N, 3);
  for (int relu = 0; relu < 2; ++relu) {
    Buffer C = dev.alloc<float>(M * N);
    k->gemm_nn(upload(dev, A), upload(dev, B), upload(dev, bias), C, M, N, K, relu);
    std::vector<double> want(M * N);
    size_t negatives = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = bias[j];
        for (int q = 0; q < K; ++q) s += double(A[i * K + q]) * B[q * N + j];
        negatives += s < 0;
        want[i * N + j] = relu ? std::max(s, 0.0) : s;
      }
    EXPECT_GT(negatives, 0u);  // the ReLU really cuts something
    expect_near_all(C.copyout<float>(), want, 1e-5, relu ? "relu(A·B+b)" : "A·B+b");
  }
}

TEST_F(TrainKernels, GemmNtMaskedMatchesHost) {
  const int M = 8, N = 16, K = 12;  // C[M,N] = (A[M,K]·B[N,K]ᵀ) * (H > 0)
  auto A = randv(M * K, 4), B = randv(N * K, 5), H = randv(M * N, 6);
  Buffer C = dev.alloc<float>(M * N);
  k->gemm_nt(upload(dev, A), upload(dev, B), upload(dev, H), C, M, N, K);
  std::vector<double> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int q = 0; q < K; ++q) s += double(A[i * K + q]) * B[j * K + q];
      want[i * N + j] = H[i * N + j] > 0 ? s : 0.0;
    }
  expect_near_all(C.copyout<float>(), want, 1e-5, "dY·Wᵀ masked");
}

TEST_F(TrainKernels, GemmTnAndColsumMatchHost) {
  const int M = 12, N = 8, K = 20;  // C[M,N] = A[K,M]ᵀ·B[K,N]; s[N] = Σ_k B[k,:]
  auto A = randv(K * M, 7), B = randv(K * N, 8);
  Buffer C = dev.alloc<float>(M * N), S = dev.alloc<float>(N), Bb = upload(dev, B);
  k->gemm_tn(upload(dev, A), Bb, C, M, N, K);
  k->colsum(Bb, S, K, N);
  std::vector<double> want(M * N), wsum(N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int q = 0; q < K; ++q) want[i * N + j] += double(A[q * M + i]) * B[q * N + j];
  for (int q = 0; q < K; ++q)
    for (int j = 0; j < N; ++j) wsum[j] += B[q * N + j];
  expect_near_all(C.copyout<float>(), want, 1e-5, "Xᵀ·dY");
  expect_near_all(S.copyout<float>(), wsum, 1e-5, "colsum");
}

TEST_F(TrainKernels, GemmRejectsSizesNotMultiplesOf4) {
  Buffer A = dev.alloc<float>(64), B = dev.alloc<float>(64), C = dev.alloc<float>(64);
  EXPECT_THROW(k->gemm_tn(A, B, C, 6, 4, 4), encore::ArgumentError);
}

TEST_F(TrainKernels, SoftmaxXentLossAndGradientMatchHost) {
  const int rows = 8, classes = 6, stride = 8;
  const float scale = 1.0f / rows;
  auto Z = randv(rows * stride, 9, -3, 3);
  std::vector<int32_t> y{0, 5, 2, 3, 1, 4, 5, 0};
  Buffer labels = dev.alloc<int32_t>(rows), dZ = dev.alloc<float>(rows * stride), loss = dev.alloc<float>(rows);
  labels.copyin(y);
  k->softmax_xent(upload(dev, Z), labels, dZ, loss, 0, rows, classes, stride, scale);
  std::vector<double> wl(rows), wg(rows * stride, 0.0);
  for (int r = 0; r < rows; ++r) {
    double mx = -1e30, sum = 0;
    for (int c = 0; c < classes; ++c) mx = std::max(mx, double(Z[r * stride + c]));
    for (int c = 0; c < classes; ++c) sum += std::exp(Z[r * stride + c] - mx);
    wl[r] = std::log(sum) + mx - Z[r * stride + y[r]];
    for (int c = 0; c < classes; ++c) wg[r * stride + c] = (std::exp(Z[r * stride + c] - mx) / sum - (c == y[r])) * scale;
  }
  expect_near_all(loss.copyout<float>(), wl, 1e-5, "loss");
  expect_near_all(dZ.copyout<float>(), wg, 1e-5, "dZ (padded columns zero)");
}

TEST_F(TrainKernels, CountCorrectIsArgmaxAgainstLabels) {
  const int rows = 4, classes = 3, stride = 4;
  std::vector<float> Z{0, 5, 1, 9,  /**/ 2, 1, 0, 9,  /**/ 0, 0, 3, 9,  /**/ 1, 4, 2, 9};  // column 3 is padding
  std::vector<int32_t> y{1, 1, 2, 0};
  Buffer labels = dev.alloc<int32_t>(rows), correct = dev.alloc<int32_t>(rows);
  labels.copyin(y);
  k->count_correct(upload(dev, Z), labels, correct, rows, classes, stride);
  EXPECT_EQ(correct.copyout<int32_t>(), (std::vector<int32_t>{1, 0, 1, 0}));
}

TEST_F(TrainKernels, AdamMatchesHost) {
  const size_t n = 256;
  auto p = randv(n, 10), g = randv(n, 11), m = randv(n, 12, -0.1f, 0.1f), v = randv(n, 13, 0, 0.01f);
  Buffer P = upload(dev, p), G = upload(dev, g), Mb = upload(dev, m), V = upload(dev, v);
  encore::Variable lr = encore::Variable::f32("lr", 0, 1), bc1 = encore::Variable::f32("bc1", 1, 1e7), bc2 = encore::Variable::f32("bc2", 1, 1e7);
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  lr.bind(0.01);
  bc1.bind(1 / (1 - 0.9 * 0.9));  // t = 2
  bc2.bind(1 / (1 - 0.999 * 0.999));
  k->adam(P, G, Mb, V, n, lr, bc1, bc2, b1, b2, eps);
  std::vector<double> wp(n), wm(n), wv(n);
  for (size_t i = 0; i < n; ++i) {
    wm[i] = b1 * m[i] + (1 - b1) * g[i];
    wv[i] = b2 * v[i] + (1 - b2) * double(g[i]) * g[i];
    wp[i] = p[i] - 0.01 * (wm[i] / (1 - 0.81)) / (std::sqrt(wv[i] / (1 - 0.999 * 0.999)) + eps);
  }
  expect_near_all(Mb.copyout<float>(), wm, 1e-5, "m");
  expect_near_all(V.copyout<float>(), wv, 1e-5, "v");
  expect_near_all(P.copyout<float>(), wp, 1e-5, "p");
}

// d(mean loss)/d(param) from the model's backward pass vs central differences, on a tiny model
// with a padded class count (6 -> 8).
TEST_F(TrainKernels, GradientsMatchFiniteDifferences) {
  mlp::Model model(dev, {.sizes = {8, 12, 8, 6}, .batch = 8});
  model.init(3);
  Buffer x = upload(dev, randv(8 * 8, 14, 0, 1)), y = dev.alloc<int32_t>(8);
  y.copyin(std::vector<int32_t>{0, 5, 3, 2, 1, 4, 0, 5});
  const std::vector<float> p0 = model.get_params();
  auto mean_loss = [&](const std::vector<float>& p) {
    model.set_params(p);
    std::vector<float> l = model.loss_and_grad(x, y).copyout<float>();
    return std::accumulate(l.begin(), l.end(), 0.0) / double(l.size());
  };
  mean_loss(p0);
  const std::vector<float> g = model.get_grads();
  size_t checked = 0, nonzero = 0;
  for (const mlp::Layer& l : model.layers()) {
    std::vector<size_t> idx{l.b_offset, l.b_offset + size_t(l.out) - 1};
    for (int s = 0; s < 6; ++s) idx.push_back(l.w_offset + size_t(mlp::hash64(99, checked + s) % size_t(l.in)) * l.out_pad + size_t(s % l.out));
    for (size_t i : idx) {
      const float h = 3e-3f;
      std::vector<float> p = p0;
      p[i] = p0[i] + h;
      const double up = mean_loss(p);
      p[i] = p0[i] - h;
      const double down = mean_loss(p);
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[i], fd, 2e-3 + 0.03 * std::abs(fd)) << "parameter " << i;
      nonzero += std::abs(fd) > 1e-4;
      ++checked;
    }
    // padded class columns of the last layer get no gradient
    if (l.out != l.out_pad) {
      EXPECT_EQ(g[l.b_offset + size_t(l.out)], 0.0f);
    }
  }
  EXPECT_GE(nonzero, checked / 3);  // ReLU leaves some at exactly zero; most must carry a gradient
}

// ---- IDX loader errors ----

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("encore_idx_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  static std::vector<uint8_t> idx(uint32_t magic, std::vector<uint32_t> dims, size_t payload) {
    std::vector<uint8_t> d;
    auto be = [&](uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) d.push_back(uint8_t(v >> s));
    };
    be(magic);
    for (uint32_t v : dims) be(v);
    for (size_t i = 0; i < payload; ++i) d.push_back(uint8_t(i % 10));
    return d;
  }
  std::filesystem::path write(const std::string& name, const std::vector<uint8_t>& bytes, bool gz = false) {
    std::filesystem::path p = dir / name;
    std::ofstream f(p, std::ios::binary);
    boost::iostreams::filtering_ostream out;
    if (gz) out.push(boost::iostreams::gzip_compressor());
    out.push(f);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return p;
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const mlp::DataError& e) {
      return e.what();
    }
    return "(no error)";
  }
  std::filesystem::path dir;
};

TEST_F(IdxFiles, ReadsGzipAndPlainFiles) {
  auto gz = write("im.gz", idx(0x803, {3, 2, 2}, 12), true);
  mlp::Images im = mlp::load_idx_images(gz);
  EXPECT_EQ(im.count, 3u);
  EXPECT_EQ(im.size(), 4u);
  EXPECT_EQ(im.pixels[11], 1);
  mlp::Labels lb = mlp::load_idx_labels(write("lb.idx", idx(0x801, {5}, 5)));
  EXPECT_EQ(lb.values, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
}

TEST_F(IdxFiles, ErrorsNameFileExpectedAndFound) {
  std::string e = error_of([&] { mlp::load_idx_images(dir / "missing.gz"); });
  EXPECT_NE(e.find("missing.gz: no such file"), std::string::npos) << e;
  e = error_of([&] { mlp::load_idx_images(write("magic.gz", idx(0x801, {3, 2, 2}, 12), true)); });
  EXPECT_NE(e.find("magic.gz: bad IDX magic: expected 0x00000803, found 0x00000801"), std::string::npos) << e;
  e = error_of([&] { mlp::load_idx_images(write("short.gz", idx(0x803, {3, 2, 2}, 7), true)); });
  EXPECT_NE(e.find("short.gz: truncated IDX data: expected 28 bytes, found 23"), std::string::npos) << e;
  e = error_of([&] { mlp::load_idx_labels(write("hdr.idx", {0, 0, 8})); });
  EXPECT_NE(e.find("hdr.idx: truncated IDX header: expected 8 bytes, found 3"), std::string::npos) << e;
  e = error_of([&] { mlp::load_idx_labels(write("junk.gz", idx(0x801, {4}, 4))); });  // not gzip
  EXPECT_NE(e.find("junk.gz: not a valid gzip file"), std::string::npos) << e;
}

TEST_F(IdxFiles, DatasetChecksCountsAndShapes) {
  write("train-images-idx3-ubyte.gz", idx(0x803, {3, 28, 28}, 3 * 784), true);
  write("train-labels-idx1-ubyte.gz", idx(0x801, {2}, 2), true);
  write("t10k-images-idx3-ubyte.gz", idx(0x803, {1, 28, 28}, 784), true);
  write("t10k-labels-idx1-ubyte.gz", idx(0x801, {1}, 1), true);
  std::string e = error_of([&] { mlp::load_fashion_mnist(dir); });
  EXPECT_NE(e.find("train-labels-idx1-ubyte.gz: expected 3 labels"), std::string::npos) << e;
  write("train-labels-idx1-ubyte.gz", idx(0x801, {3}, 3), true);
  EXPECT_EQ(mlp::load_fashion_mnist(dir).train_images.count, 3u);
}

// ---- a small training run ----

// 512 Fashion-MNIST training images when the package is installed, else 10 noisy prototypes.
void training_data(mlp::Images& im, mlp::Labels& lb) {
  const std::filesystem::path f = std::filesystem::path(mlp::kDefaultDataDir) / "train-images-idx3-ubyte.gz";
  const size_t n = 512;
  if (std::filesystem::exists(f)) {
    im = mlp::load_idx_images(f);
    lb = mlp::load_idx_labels(std::filesystem::path(mlp::kDefaultDataDir) / "train-labels-idx1-ubyte.gz");
    im.count = lb.count = n;
    im.pixels.resize(n * im.size());
    lb.values.resize(n);
    return;
  }
  im.count = lb.count = n;
  im.rows = im.cols = 28;
  im.pixels.resize(n * 784);
  lb.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    lb.values[i] = uint8_t(i % 10);
    for (size_t c = 0; c < 784; ++c)
      im.pixels[i * 784 + c] = uint8_t(std::clamp(((c * 7 + lb.values[i] * 131) % 256) * 0.7 + mlp::hash_uniform(5, i * 784 + c, 0, 76), 0.0, 255.0));
  }
}

// Gradient accumulation over shards (what train_mlp --grad-shards does, and bit for bit what
// --data-parallel over that many ranks computes): the batch's gradient is shard 0's plus shard 1's,
// each scaled by 1/batch, added in float in shard order; the loss is the shards' losses in order.
// Replayed with new inputs (the shard views are rebased), it equals eager.
TEST_F(TrainKernels, GradShardsSumTheShardGradientsInOrder) {
  const int B = 64, S = 2, b = B / S, in = 8;
  if (size_t(b) * in * sizeof(float) % dev.info().base_align_bytes) GTEST_SKIP() << "the device's view alignment exceeds a shard's images";
  const mlp::Config whole{.sizes = {in, 12, 8, 6}, .batch = B, .grad_shards = S};
  const mlp::Config shard{.sizes = {in, 12, 8, 6}, .batch = b, .grad_batch = B};
  mlp::Model sharded(dev, whole), jitted(dev, whole), part(dev, shard);
  sharded.init(5);
  jitted.init(5);
  part.init(5);
  // the step's variables are passed to each call (a TinyJit call sees only those)
  auto step = encore::TinyJit(
      [&](const Buffer& x, const Buffer& y, encore::BoundVar, encore::BoundVar, encore::BoundVar) { return jitted.train_step(x, y); });
  jitted.lr.bind(0.0);  // no update: every call sees the same parameters
  sharded.lr.bind(0.0);
  const double bc1 = jitted.bc1.fvalue(), bc2 = jitted.bc2.fvalue();  // what eager work sees: their initial values
  for (int call = 0; call < 4; ++call) {
    const std::vector<float> hx = randv(size_t(B) * in, 40 + uint64_t(call), 0, 1);
    std::vector<int32_t> hy(B);
    for (int i = 0; i < B; ++i) hy[size_t(i)] = int32_t(mlp::hash64(50 + uint64_t(call), uint64_t(i)) % 6);
    Buffer x = upload(dev, hx), y = dev.alloc<int32_t>(B);
    y.copyin(hy);
    // reference: each shard by a model of the shard's size, summed on the host in shard order
    std::vector<float> want_loss, want_grad;
    for (int s = 0; s < S; ++s) {
      Buffer xs = upload(dev, std::vector<float>(hx.begin() + ptrdiff_t(s) * b * in, hx.begin() + ptrdiff_t(s + 1) * b * in));
      Buffer ys = dev.alloc<int32_t>(b);
      ys.copyin(std::vector<int32_t>(hy.begin() + ptrdiff_t(s) * b, hy.begin() + ptrdiff_t(s + 1) * b));
      const std::vector<float> l = part.loss_and_grad(xs, ys).copyout<float>(), g = part.get_grads();
      want_loss.insert(want_loss.end(), l.begin(), l.end());
      if (s == 0) want_grad = g;
      else
        for (size_t i = 0; i < g.size(); ++i) want_grad[i] = want_grad[i] + g[i];
    }
    EXPECT_EQ(sharded.train_step(x, y).copyout<float>(), want_loss) << "call " << call;
    EXPECT_EQ(sharded.get_grads(), want_grad) << "call " << call << ": eager";
    EXPECT_EQ(step(x, y, jitted.lr.bind(0.0), jitted.bc1.bind(bc1), jitted.bc2.bind(bc2)).copyout<float>(), want_loss) << "call " << call;
    EXPECT_EQ(jitted.get_grads(), want_grad) << "call " << call << ": TinyJit";
  }
  EXPECT_THROW(mlp::Model(dev, {.sizes = {in, 12, 8, 6}, .batch = 64, .grad_shards = 3}), encore::ArgumentError);
}

TEST(TrainRun, LossFallsAndReplayEqualsEager) {
  if (Device::list().empty()) GTEST_SKIP() << "no OpenCL device";
  Device dev = Device::open("CL:0");
  mlp::Images im;
  mlp::Labels lb;
  training_data(im, lb);
  // 512 examples in batches of 48: ten whole ones and a last one of 32 (a second signature)
  const int B = 48;
  const mlp::Config cfg{.sizes = {784, 32, 16, 10}, .batch = B};
  mlp::Model eager(dev, cfg), jitted(dev, cfg);
  eager.init(7);
  jitted.init(7);
  auto step = encore::TinyJit([&](const Buffer& x, const Buffer& y, encore::BoundVar, encore::BoundVar, encore::BoundVar) {
    return jitted.train_step(x, y);
  });
  std::vector<mlp::Batch> up{mlp::Batch(dev, B, 784), mlp::Batch(dev, B, 784), mlp::Batch(dev, B, 784)};
  const int tail = int(im.count % B);
  ASSERT_EQ(tail, 32);
  const mlp::Batch last(dev, tail, 784);
  std::vector<float> hx;
  std::vector<int32_t> hy;
  std::vector<double> epoch_loss;
  int64_t t = 0;
  for (int e = 0; e < 4; ++e) {
    const std::vector<uint32_t> order = mlp::shuffled(im.count, 1, uint64_t(e));
    double sum = 0;
    for (size_t s = 0; s < im.count; s += B) {
      const size_t rows = std::min(size_t(B), im.count - s);
      mlp::gather(im, lb, std::span(order).subspan(s, rows), hx, hy);
      const mlp::Batch& b = rows == size_t(B) ? up[size_t(t) % 3] : last;
      b.upload(hx, hy);
      const mlp::AdamFactors f = mlp::adam_factors(cfg, ++t);
      const double lr = 2e-3 * (t % 2 ? 1.0 : 0.5);  // varies per step: must reach the replay
      // eager: the model's variables are bound directly
      eager.lr.bind(lr);
      eager.bc1.bind(f.bc1);
      eager.bc2.bind(f.bc2);
      const std::vector<float> le = eager.train_step(b.x, b.y).copyout<float>();
      const std::vector<float> lj = step(b.x, b.y, jitted.lr.bind(lr), jitted.bc1.bind(f.bc1), jitted.bc2.bind(f.bc2)).copyout<float>();
      ASSERT_EQ(le.size(), rows);
      ASSERT_EQ(le, lj) << "step " << t << " (" << rows << " rows): the jitted loss differs from the eager one";
      sum += std::accumulate(le.begin(), le.end(), 0.0);
    }
    epoch_loss.push_back(sum / double(im.count));
  }
  // the last batch was called once an epoch: warmed up, captured, then replayed twice
  EXPECT_EQ(step.calls(), 4u) << "calls() counts the last call's signature";
  ASSERT_EQ(step.units().size(), 2u);
  uint64_t calls = 0;
  for (const auto& u : step.units()) {
    EXPECT_TRUE(*u.unit) << u.signature;
    calls += u.calls;
  }
  EXPECT_EQ(calls, 4u * 11);
  const encore::UnitStats& st = step.unit().stats();  // the last call's: the short batch
  EXPECT_EQ(st.items_replayed, st.items);
  EXPECT_GT(st.planned_temps, 0u);
  EXPECT_LT(st.temp_bytes_planned, st.temp_bytes_naive);
  EXPECT_EQ(eager.get_params(), jitted.get_params());
  EXPECT_LT(epoch_loss[3], 0.7 * epoch_loss[0]) << "epoch losses " << epoch_loss[0] << ", " << epoch_loss[1] << ", " << epoch_loss[3];
}

}  // namespace
