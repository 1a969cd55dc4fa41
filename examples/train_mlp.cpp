// Trains a 784-256-128-10 MLP on Fashion-MNIST; the whole training step (forward, loss, backward,
// Adam) is one TinyJit, evaluation another. Prints progress, test accuracy, eager vs replay step
// time and what the capture pruned and planned. Exits 1 when test accuracy < --min-accuracy.
//   ./build/examples/train_mlp [--epochs 2] [--batch 128] [--lr 2e-3] [--seed 1] [--data DIR]
//                              [--limit N] [--min-accuracy 0.85] [--save-step step.json] [--bench-gemm]
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <encore/encore.hpp>
#include <encore/workload.hpp>

#include "mlp/data.hpp"
#include "mlp/gemm_bench.hpp"
#include "mlp/mlp.hpp"

namespace po = boost::program_options;
using encore::Buffer;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  int epochs = 2, batch = 128;
  double lr = 2e-3, min_accuracy = 0.85;
  uint64_t seed = 1;
  size_t limit = 0;
  std::string data = mlp::kDefaultDataDir, save_step;
  bool bench_gemm = false;
};

bool parse(int argc, char** argv, Options& o) {
  po::options_description d("train_mlp options");
  d.add_options()("help,h", "show this help")
      ("epochs", po::value(&o.epochs)->default_value(o.epochs), "passes over the training set")
      ("batch", po::value(&o.batch)->default_value(o.batch), "examples per step (a multiple of 4)")
      ("lr", po::value(&o.lr)->default_value(o.lr), "peak learning rate (cosine decay to 5% of it)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "weights and shuffling seed")
      ("data", po::value(&o.data)->default_value(o.data), "folder with the Fashion-MNIST .gz files")
      ("limit", po::value(&o.limit)->default_value(0), "use only the first N training images (0: all)")
      ("min-accuracy", po::value(&o.min_accuracy)->default_value(o.min_accuracy), "exit 1 below this test accuracy")
      ("save-step", po::value(&o.save_step), "write the captured training step as a workload file (with a fresh optimizer state)")
      ("bench-gemm", po::bool_switch(&o.bench_gemm), "measure GFLOP/s of each GEMM shape and exit");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << d;
    return false;
  }
  if (o.epochs < 1 || o.batch < 4 || o.batch % 4) throw po::error("--epochs must be >= 1 and --batch a positive multiple of 4");
  return true;
}

// Median of per-step wall times, each step waiting for the device.
template <class F> double median_step_ms(int n, F&& one_step) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    one_step(i);
    t.push_back(seconds_since(t0) * 1e3);
  }
  std::nth_element(t.begin(), t.begin() + n / 2, t.end());
  return t[n / 2];
}

int run(const Options& o) {
  encore::Device dev = encore::Device::open();
  if (o.bench_gemm) {
    mlp::bench_gemms(dev, o.batch, std::cout);
    return 0;
  }
  auto t_load = Clock::now();
  mlp::Dataset ds = mlp::load_fashion_mnist(o.data);
  const size_t n_train = o.limit ? std::min(o.limit, ds.train_images.count) : ds.train_images.count;
  std::printf("loaded %zu training and %zu test images in %.2f s; device %s (%s)\n", n_train, ds.test_images.count,
              seconds_since(t_load), dev.id().c_str(), dev.info().name.c_str());

  mlp::Model model(dev, {.sizes = {784, 256, 128, 10}, .batch = o.batch});
  model.init(o.seed);
  auto step_fn = [&model](const Buffer& x, const Buffer& y, encore::BoundVar, encore::BoundVar, encore::BoundVar) {
    return model.train_step(x, y);
  };
  encore::TinyJit step(step_fn);
  const int B = o.batch, steps_per_epoch = int(n_train / size_t(B)), total_steps = steps_per_epoch * o.epochs;
  if (steps_per_epoch == 0) throw encore::ArgumentError("--limit " + std::to_string(n_train) + " is smaller than one batch");
  std::vector<mlp::Batch> uploads;
  for (int i = 0; i < 3; ++i) uploads.emplace_back(dev, B, 784);
  std::vector<float> hx;
  std::vector<int32_t> hy;
  int64_t t = 0;  // Adam step count
  auto lr_at = [&](int64_t s) {  // cosine decay from lr to 5% of it
    const double f = double(s) / double(std::max(1, total_steps - 1));
    return o.lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * f)));
  };
  // One step on examples idx: upload into the next buffer set, bind this step's values, run.
  auto train_on = [&](auto& jit, std::span<const uint32_t> idx) {
    mlp::gather(ds.train_images, ds.train_labels, idx, hx, hy);
    const mlp::Batch& up = uploads[size_t(t) % uploads.size()];
    up.upload(hx, hy);
    const mlp::AdamFactors f = mlp::adam_factors(model.config(), ++t);
    return jit(up.x, up.y, model.lr.bind(lr_at(t - 1)), model.bc1.bind(f.bc1), model.bc2.bind(f.bc2));
  };

  auto t_train = Clock::now();
  auto t_print = t_train;
  int64_t examples = 0;
  for (int e = 0; e < o.epochs; ++e) {
    const std::vector<uint32_t> order = mlp::shuffled(n_train, o.seed, uint64_t(e));
    for (int s = 0; s < steps_per_epoch; ++s) {
      Buffer loss = train_on(step, std::span(order).subspan(size_t(s) * B, size_t(B)));
      examples += B;
      const bool last = e + 1 == o.epochs && s + 1 == steps_per_epoch;
      if (seconds_since(t_print) > 2.0 || last) {
        const std::vector<float> l = loss.copyout<float>();
        std::printf("step %5lld  epoch %d  loss %.4f  %.0f examples/s\n", (long long)t, e, std::accumulate(l.begin(), l.end(), 0.0) / B,
                    double(examples) / seconds_since(t_train));
        std::fflush(stdout);
        t_print = Clock::now();
      }
    }
  }
  dev.synchronize();
  const double train_s = seconds_since(t_train);
  std::printf("trained %lld steps (%d epochs) in %.2f s: %.2f ms per step\n", (long long)t, o.epochs, train_s, train_s * 1e3 / double(t));

  // Evaluation: batches of 1000 (divides the 10,000 test images), its own TinyJit.
  const int EB = 1000;
  auto eval = encore::TinyJit([&model](const Buffer& x, const Buffer& y) { return model.eval_step(x, y, 1000); });
  std::vector<mlp::Batch> eval_up{mlp::Batch(dev, EB, 784), mlp::Batch(dev, EB, 784)};
  size_t correct = 0, seen = 0;
  std::vector<uint32_t> idx(EB);
  for (size_t b = 0; b + EB <= ds.test_images.count; b += EB) {
    std::iota(idx.begin(), idx.end(), uint32_t(b));
    mlp::gather(ds.test_images, ds.test_labels, idx, hx, hy);
    const mlp::Batch& up = eval_up[(b / EB) % 2];
    up.upload(hx, hy);
    const std::vector<int32_t> c = eval(up.x, up.y).copyout<int32_t>();
    correct += size_t(std::count(c.begin(), c.end(), 1));
    seen += EB;
  }
  const double acc = double(correct) / double(seen);
  std::printf("test accuracy: %.4f\n", acc);

  // Eager vs replay, measured now in the same process (these steps keep training the model).
  encore::TinyJit eager_step(step_fn, encore::JitOptions{.enabled = false});
  const std::vector<uint32_t> order = mlp::shuffled(n_train, o.seed, 1000);
  auto timed = [&](auto& jit) {
    return median_step_ms(20, [&](int i) {
      train_on(jit, std::span(order).subspan(size_t(i % steps_per_epoch) * B, size_t(B)));
      dev.synchronize();
    });
  };
  double eager_ms = 1e9, replay_ms = 1e9;
  for (int round = 0; round < 3; ++round) {  // interleaved rounds, best of each
    eager_ms = std::min(eager_ms, timed(eager_step));
    replay_ms = std::min(replay_ms, timed(step));
  }
  const encore::UnitStats& st = step.unit().stats();
  std::printf("step time (upload + step, waiting for the device): eager %.2f ms, replay %.2f ms (%.2fx); %.1f GFLOP/s in replay\n",
              eager_ms, replay_ms, eager_ms / replay_ms, model.flops_per_step() / (replay_ms * 1e6));
  std::printf("captured step: %zu items, %zu pruned, %zu replayed; temporaries %.1f KiB naive -> %.1f KiB planned (%zu buffers)\n",
              st.items, st.items_pruned, st.items_replayed, double(st.temp_bytes_naive) / 1024, double(st.temp_bytes_planned) / 1024,
              st.planned_temps);
  if (!o.save_step.empty()) {
    model.reset_optimizer();  // zero moments and gradients: saved as "zeros", keeping the file small
    encore::workload::save_workload(step.unit(), o.save_step, {.name = "fmnist_step"});
    std::printf("saved the training step to %s\n", o.save_step.c_str());
  }
  if (acc < o.min_accuracy) {
    std::fprintf(stderr, "train_mlp: test accuracy %.4f is below --min-accuracy %.2f\n", acc, o.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o;
    if (!parse(argc, argv, o)) return 0;
    return run(o);
  } catch (const po::error& e) {
    std::fprintf(stderr, "train_mlp: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: %s\n", e.what());
    return 2;
  }
}
