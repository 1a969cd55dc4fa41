// Trains a 784-256-128-10 MLP on Fashion-MNIST; the whole training step (forward, loss, backward,
// Adam) is one TinyJit, evaluation another. Every --eval-every steps the training step also
// evaluates a fixed monitoring batch: that step takes an encore::key, so it replays a unit of its own. Prints progress, test accuracy, eager vs replay step
// time and what the capture pruned and planned. Exits 1 when test accuracy < --min-accuracy.
//   ./build/examples/train_mlp [--epochs 2] [--batch 128] [--lr 2e-3] [--seed 1] [--data DIR]
//                              [--limit N] [--min-accuracy 0.85] [--save-step step.json] [--bench-gemm]
//                              [--save-weights FILE] [--device CL:N] [--grad-shards N] [--eval-every 100]
// Data-parallel over MPI ranks (each rank trains on its contiguous 1/N of every global batch; the
// gradients are summed over the ranks by an all-reduce inside the jitted step; rank 0 prints):
//   mpirun -np 2 ./build/examples/train_mlp --data-parallel [the options above]
// Comparing two saved states (exit 1 when the parameters differ by more than --rtol):
//   ./build/examples/train_mlp --compare-weights REFERENCE OTHER [--rtol 1e-4]
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>

#include <encore/encore.hpp>
#include <encore/workload.hpp>

#include "mlp/data.hpp"
#include "mlp/gemm_bench.hpp"
#include "mlp/mlp.hpp"
#include "mlp/parallel.hpp"
#include "mlp/weights.hpp"

namespace po = boost::program_options;
using encore::Buffer;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  int epochs = 2, batch = 128, grad_shards = 1, eval_every = 100;
  double lr = 2e-3, min_accuracy = 0.85;
  uint64_t seed = 1;
  size_t limit = 0;
  std::string data = mlp::kDefaultDataDir, save_step, save_weights, device, grad_reduce = "sum";
  bool bench_gemm = false, data_parallel = false, l2 = false;
  std::vector<std::string> compare;  // --compare-weights REFERENCE OTHER
  double rtol = 1e-4, grad_rtol = 1e-2;
};

int g_rank = 0, g_size = 1;  // for error messages (set once the ranks are known)

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
      ("bench-gemm", po::bool_switch(&o.bench_gemm), "measure GFLOP/s of each GEMM shape and exit")
      ("device", po::value(&o.device), "OpenCL device (CL, CL:N; default: ENCORE_DEVICE, else the first GPU, else the first "
                                       "device; with --data-parallel, GPU number local rank % GPU count)")
      ("data-parallel", po::bool_switch(&o.data_parallel), "train over the ranks of an MPI job (mpirun -np N): each rank takes "
                                                           "--batch / N examples of every global batch; needs --batch % (4 N) == 0")
      ("grad-shards", po::value(&o.grad_shards)->default_value(o.grad_shards),
       "single process: sum the gradient of each batch over N equal shards in order, bit for bit what --data-parallel "
       "over N ranks computes")
      ("eval-every", po::value(&o.eval_every)->default_value(o.eval_every),
       "every N steps the step also evaluates 512 test images (monitoring only; 0: never)")
      ("save-weights", po::value(&o.save_weights), "write the trained parameters and last gradient to FILE (rank 0)")
      ("compare-weights", po::value(&o.compare)->multitoken(), "REFERENCE OTHER: compare two --save-weights files and exit "
                                                                 "(1 when max|a-b|/max|a| of the parameters exceeds --rtol, "
                                                                 "or that of the last gradients exceeds --grad-rtol)")
      ("rtol", po::value(&o.rtol)->default_value(o.rtol), "--compare-weights: tolerance on the parameters")
      ("grad-rtol", po::value(&o.grad_rtol)->default_value(o.grad_rtol), "--compare-weights: tolerance on the last gradients")
      ("l2", po::bool_switch(&o.l2), "--compare-weights: the tolerances bound ||a-b||/||a|| instead of max|a-b|/max|a|")
      ("test-grad-reduce", po::value(&o.grad_reduce)->default_value(o.grad_reduce),
       "(tests only) the gradient all-reduce of --data-parallel: sum (right), mean (N times too small) or none (left out)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << d;
    return false;
  }
  if (o.epochs < 1 || o.batch < 4 || o.batch % 4) throw po::error("--epochs must be >= 1 and --batch a positive multiple of 4");
  if (o.grad_shards < 1) throw po::error("--grad-shards must be >= 1");
  if (o.eval_every < 0) throw po::error("--eval-every must be >= 0");
  if (o.grad_shards > 1 && o.data_parallel) throw po::error("--grad-shards is for a single process (--data-parallel shards over the ranks)");
  if (!o.compare.empty() && o.compare.size() != 2) throw po::error("--compare-weights takes two files: REFERENCE OTHER");
  if (o.grad_reduce != "sum" && o.grad_reduce != "mean" && o.grad_reduce != "none")
    throw po::error("--test-grad-reduce must be sum, mean or none");
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

// --compare-weights REFERENCE OTHER
int compare_weights(const Options& o) {
  const mlp::SavedWeights a = mlp::load_weights(o.compare[0]), b = mlp::load_weights(o.compare[1]);
  if (a.params.size() != b.params.size())
    throw encore::ArgumentError(o.compare[0] + " and " + o.compare[1] + " hold different models (" + std::to_string(a.params.size()) +
                                " vs " + std::to_string(b.params.size()) + " parameters)");
  const mlp::RelativeError p = mlp::relative_error(a.params, b.params), g = mlp::relative_error(a.grads, b.grads);
  const char* on = o.l2 ? "on ||a-b||/||a||" : "on max|a-b|/max|a|";
  std::printf("parameters: max|a-b|/max|a| %.3e, ||a-b||/||a|| %.3e, max|a-b| %.3e (rtol %.1e %s)\n", p.max_rel, p.l2_rel, p.max_abs, o.rtol, on);
  std::printf("last gradient: max|a-b|/max|a| %.3e, ||a-b||/||a|| %.3e, max|a-b| %.3e (grad-rtol %.1e %s)\n", g.max_rel, g.l2_rel, g.max_abs,
              o.grad_rtol, on);
  auto differing = [](const std::vector<float>& x, const std::vector<float>& y) {
    size_t n = 0;
    for (size_t i = 0; i < x.size(); ++i) n += std::memcmp(&x[i], &y[i], sizeof(float)) != 0;
    return n;
  };
  const size_t dp = differing(a.params, b.params), dg = differing(a.grads, b.grads);
  if (dp + dg == 0) std::printf("bit-identical (parameters and last gradient)\n");
  else std::printf("%zu of %zu parameters and %zu of %zu gradient values differ in their bits\n", dp, a.params.size(), dg, a.grads.size());
  const bool ok = o.l2 ? p.l2_rel <= o.rtol && g.l2_rel <= o.grad_rtol : p.max_rel <= o.rtol && g.max_rel <= o.grad_rtol;
  std::printf("%s\n", ok ? "weights match" : "WEIGHTS DIFFER");
  return ok ? 0 : 1;
}

// Every rank's parameters against rank 0's (broadcast): the number of elements whose bits differ
// and the largest |w - w_rank0|, each the maximum over the ranks (the same on every rank).
struct RankAgreement {
  int differing = 0;
  float max_abs = 0;
};
RankAgreement compare_with_rank0(const encore::Device& dev, const mlp::Group& grp, const mlp::Model& model) {
  const std::vector<float> w = model.get_params();
  Buffer ref = dev.alloc<float>(w.size());
  ref.copyin(w);
  grp.broadcast(ref, 0);
  const std::vector<float> w0 = ref.copyout<float>();
  size_t differing = 0;
  float max_abs = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::memcmp(&w[i], &w0[i], sizeof(float)) == 0) continue;
    ++differing;
    const float d = std::fabs(w[i] - w0[i]);
    max_abs = std::isnan(d) ? INFINITY : std::max(max_abs, d);
  }
  Buffer n = dev.alloc<int32_t>(1), m = dev.alloc<float>(1);
  n.copyin(std::vector<int32_t>{int32_t(std::min<size_t>(differing, INT_MAX))});
  m.copyin(std::vector<float>{max_abs});
  grp.allreduce(n, encore::ReduceOp::max);
  grp.allreduce(m, encore::ReduceOp::max);
  return {n.copyout<int32_t>()[0], m.copyout<float>()[0]};
}

// One line per input signature of a jit (a signature called once has only warmed up: no unit),
// and the arena its units share: the largest unit's, where separate arenas would take the sum.
template <class Jit>
void print_units(const char* name, const Jit& jit) {
  size_t largest = 0, sum = 0;
  std::printf("%s jit: %zu input signature%s:", name, jit.units().size(), jit.units().size() == 1 ? "" : "s");
  for (const auto& u : jit.units()) {
    const size_t bytes = *u.unit ? u.unit->stats().temp_bytes_planned : 0;
    largest = std::max(largest, bytes), sum += bytes;
    std::printf("  [%s] %llu call%s%s", u.signature.c_str(), (unsigned long long)u.calls, u.calls == 1 ? "" : "s",
                *u.unit ? (", unit of " + std::to_string(bytes / 1024) + " KiB").c_str() : ", eager only");
  }
  std::printf("; one shared arena of %zu KiB (separate arenas: %zu KiB)\n", largest / 1024, sum / 1024);
}

int run(const Options& o) {
  if (!o.compare.empty()) return compare_weights(o);
  const mlp::Group grp = mlp::Group::open(o.data_parallel);
  g_rank = grp.rank(), g_size = grp.size();
  const bool root = grp.rank() == 0;
  const int N = grp.size();
  if (o.batch % (4 * N))
    throw encore::ArgumentError("--data-parallel over " + std::to_string(N) + " ranks: --batch " + std::to_string(o.batch) +
                                " must be a multiple of 4 x " + std::to_string(N) + " = " + std::to_string(4 * N) +
                                " (every rank takes an equal shard that is a multiple of 4)");
  const encore::Device dev = o.data_parallel ? mlp::device_for_rank(o.device, mlp::local_rank(grp.rank()))
                                             : o.device.empty() ? encore::Device::open() : encore::Device::open(o.device);
  if (o.bench_gemm) {
    if (root) mlp::bench_gemms(dev, o.batch, std::cout);
    return 0;
  }
  auto t_load = Clock::now();
  mlp::Dataset ds = mlp::load_fashion_mnist(o.data);
  const size_t n_train = o.limit ? std::min(o.limit, ds.train_images.count) : ds.train_images.count;
  if (root)
    std::printf("loaded %zu training and %zu test images in %.2f s; device %s (%s)\n", n_train, ds.test_images.count,
                seconds_since(t_load), dev.id().c_str(), dev.info().name.c_str());

  // B: the global batch (one optimizer step); b: this rank's shard of it. The loss gradient is
  // scaled by 1/B on every rank, so the sum over the ranks is the mean over the global batch.
  const int B = o.batch, b = B / N;
  if (o.data_parallel && root)
    std::printf("data-parallel: %d rank%s, %d examples each per global batch of %d; gradients all-reduced (%s) inside the step\n", N,
                N == 1 ? "" : "s", b, B, o.grad_reduce.c_str());
  mlp::Model model(dev, {.sizes = {784, 256, 128, 10}, .batch = b, .grad_batch = B, .grad_shards = o.grad_shards});
  model.init(o.seed);
  std::function<void(const Buffer&)> reduce_grads;
  if (o.data_parallel && o.grad_reduce != "none") {
    const encore::ReduceOp op = o.grad_reduce == "sum" ? encore::ReduceOp::sum : encore::ReduceOp::mean;
    reduce_grads = [&grp, op](const Buffer& g) { grp.allreduce(g, op); };
  }
  // The monitoring batch: the first 512 test images (the accuracy gate below uses all of them).
  // A step that evaluates it is told so by a key (encore::key: a host value that only picks which
  // work the step does); each value gets a unit of its own, so no replay ever takes the other path.
  const int mon_rows = 512;
  const mlp::Batch mon(dev, mon_rows, 784);
  {
    std::vector<uint32_t> idx(mon_rows);
    std::iota(idx.begin(), idx.end(), 0u);
    std::vector<float> mx;
    std::vector<int32_t> my;
    mlp::gather(ds.test_images, ds.test_labels, idx, mx, my);
    mon.upload(mx, my);
  }
  const Buffer mon_correct = dev.alloc<int32_t>(size_t(mon_rows));
  auto step_fn = [&model, &reduce_grads, &dev, &mon, &mon_correct, mon_rows](const Buffer& x, const Buffer& y, encore::BoundVar,
                                                                             encore::BoundVar, encore::BoundVar, encore::Key evaluate) {
    Buffer loss = model.train_step(x, y, reduce_grads);
    if (evaluate.value) dev.copy(mon_correct, model.eval_step(mon.x, mon.y, mon_rows));
    return loss;
  };
  encore::TinyJit step(step_fn);
  // Every example is used: whole batches, then a last smaller one (60,000 = 468 x 128 + 96). Each
  // rank (and with --grad-shards each shard) takes an equal share of it that is a multiple of 4.
  const int whole_steps = int(n_train / size_t(B)), S = o.grad_shards;
  const size_t rest = n_train % size_t(B);
  size_t tail = rest;
  if (tail % size_t(4 * N * S)) tail = 0;
  else if (S > 1 && tail / size_t(S) * 784 * sizeof(float) % dev.info().base_align_bytes) tail = 0;
  if (root && rest && !tail)
    std::printf("the last %zu training examples are left out: %zu is not %d equal shares of a multiple of 4%s\n", rest, rest, N * S,
                S > 1 ? " aligned for views" : "");
  const int steps_per_epoch = whole_steps + (tail ? 1 : 0), total_steps = steps_per_epoch * o.epochs;
  if (whole_steps == 0) throw encore::ArgumentError("--limit " + std::to_string(n_train) + " is smaller than one batch");
  std::vector<mlp::Batch> uploads;
  for (int i = 0; i < 3; ++i) uploads.emplace_back(dev, b, 784);
  const mlp::Batch tail_upload = tail ? mlp::Batch(dev, int(tail) / N, 784) : mlp::Batch();
  std::vector<float> hx;
  std::vector<int32_t> hy;
  int64_t t = 0;  // Adam step count
  auto lr_at = [&](int64_t s) {  // cosine decay from lr to 5% of it
    const double f = double(s) / double(std::max(1, total_steps - 1));
    return o.lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * f)));
  };
  // One step on the global batch `idx` (B examples, or the last batch's): this rank's share of it
  // goes into the next upload buffers; bind this step's values; run. The last batch's size is a
  // second input signature: the jit keeps a unit for each.
  auto train_on = [&](auto& jit, std::span<const uint32_t> idx, bool evaluate = false) {
    const size_t share = idx.size() / size_t(N);
    mlp::gather(ds.train_images, ds.train_labels, idx.subspan(size_t(grp.rank()) * share, share), hx, hy);
    const mlp::Batch& up = share == size_t(b) ? uploads[size_t(t) % uploads.size()] : tail_upload;
    up.upload(hx, hy);
    const mlp::AdamFactors f = mlp::adam_factors(model.config(), ++t);
    return jit(up.x, up.y, model.lr.bind(lr_at(t - 1)), model.bc1.bind(f.bc1), model.bc2.bind(f.bc2), encore::key(evaluate));
  };

  auto t_train = Clock::now();
  auto t_print = t_train;
  int64_t examples = 0;
  for (int e = 0; e < o.epochs; ++e) {
    const std::vector<uint32_t> order = mlp::shuffled(n_train, o.seed, uint64_t(e));
    for (int s = 0; s < steps_per_epoch; ++s) {
      const size_t rows = s < whole_steps ? size_t(B) : tail;
      const bool evaluate = o.eval_every > 0 && (t + 1) % o.eval_every == 0;
      Buffer loss = train_on(step, std::span(order).subspan(size_t(s) * B, rows), evaluate);
      examples += int64_t(rows);
      if (root && evaluate) {  // what this step's own evaluation found (every rank computes it, rank 0 prints)
        const std::vector<int32_t> c = mon_correct.copyout<int32_t>();
        std::printf("step %5lld  monitoring accuracy %.4f (%d test images, evaluated inside the step)\n", (long long)t,
                    double(std::count(c.begin(), c.end(), 1)) / mon_rows, mon_rows);
      }
      const bool last = e + 1 == o.epochs && s + 1 == steps_per_epoch;
      if (root && (seconds_since(t_print) > 2.0 || last)) {  // rank-local: no collective may depend on it
        const std::vector<float> l = loss.copyout<float>();
        std::printf("step %5lld  epoch %d  loss %.4f%s  %.0f examples/s\n", (long long)t, e, std::accumulate(l.begin(), l.end(), 0.0) / double(l.size()),
                    N > 1 ? " (rank 0's shard)" : "", double(examples) / seconds_since(t_train));
        std::fflush(stdout);
        t_print = Clock::now();
      }
    }
  }
  dev.synchronize();
  const double train_s = seconds_since(t_train);
  if (root)
    std::printf("trained %lld steps on %lld examples (%d epochs) in %.2f s: %.2f ms per step\n", (long long)t, (long long)examples, o.epochs,
                train_s, train_s * 1e3 / double(t));
  if (root) print_units("train", step);
  if (root && !o.save_weights.empty()) {
    mlp::save_weights(o.save_weights, {model.get_params(), model.get_grads()});
    std::printf("saved the parameters and the last gradient (%zu floats each) to %s\n", model.num_params(), o.save_weights.c_str());
  }
  int status = 0;
  if (o.data_parallel) {  // every rank must end with rank 0's weights, bit for bit
    const RankAgreement a = compare_with_rank0(dev, grp, model);
    if (a.differing) {
      if (root)
        std::fprintf(stderr, "train_mlp: RANKS DISAGREE: up to %d parameters differ from rank 0's, max |w - w_rank0| = %.3e\n", a.differing,
                     double(a.max_abs));
      status = 3;
    } else if (root && N > 1) {
      std::printf("weights: bit-identical on all %d ranks\n", N);
    }
  }

  // Evaluation (rank 0; the accuracy is broadcast): every test image, in batches of 768 and a
  // last one of what is left (16 of 10,000), through one TinyJit: it keeps a unit per batch shape,
  // both sharing one arena.
  double acc = 0;
  if (root) {
    const size_t EB = 768, n_test = ds.test_images.count, tail = n_test % EB;
    auto eval = encore::TinyJit([&model](const Buffer& x, const Buffer& y) { return model.eval_step(x, y, int(y.count())); });
    std::vector<mlp::Batch> eval_up{mlp::Batch(dev, EB, 784), mlp::Batch(dev, EB, 784)};
    mlp::Batch eval_tail = tail ? mlp::Batch(dev, int(tail), 784) : mlp::Batch();
    size_t correct = 0, seen = 0;
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n_test; i += EB) {
      const size_t rows = std::min(EB, n_test - i);
      if (rows % 4) break;  // the GEMMs take multiples of 4 rows (10,000 leaves 16)
      idx.resize(rows);
      std::iota(idx.begin(), idx.end(), uint32_t(i));
      mlp::gather(ds.test_images, ds.test_labels, idx, hx, hy);
      const mlp::Batch& up = rows == EB ? eval_up[(i / EB) % 2] : eval_tail;
      up.upload(hx, hy);
      const std::vector<int32_t> c = eval(up.x, up.y).copyout<int32_t>();
      correct += size_t(std::count(c.begin(), c.end(), 1));
      seen += rows;
    }
    acc = double(correct) / double(seen);
    std::printf("test accuracy: %.4f (%zu images)\n", acc, seen);
    print_units("eval", eval);
  }
  if (o.data_parallel && N > 1) {
    Buffer a = dev.alloc<double>(1);
    a.copyin(std::vector<double>{acc});
    grp.broadcast(a, 0);
    acc = a.copyout<double>()[0];
  }

  // Eager vs replay, measured now in the same process (these steps keep training the model).
  encore::TinyJit eager_step(step_fn, encore::JitOptions{.enabled = false});
  const std::vector<uint32_t> order = mlp::shuffled(n_train, o.seed, 1000);
  auto timed = [&](auto& jit) {
    return median_step_ms(20, [&](int i) {
      train_on(jit, std::span(order).subspan(size_t(i % steps_per_epoch) * B, size_t(B)));
      dev.synchronize();
    });
  };
  double eager_ms = 1e9, replay_ms = 1e9, allreduce_ms = 1e9;
  // The all-reduce alone: the same collective over a buffer of the gradient's size, replayed.
  Buffer g = dev.alloc<float>(model.num_params());
  g.copyin(model.get_grads());
  encore::TinyJit allreduce_only([&grp, &g] { grp.allreduce(g, encore::ReduceOp::sum); });
  for (int round = 0; round < 3; ++round) {  // interleaved rounds, best of each
    eager_ms = std::min(eager_ms, timed(eager_step));
    replay_ms = std::min(replay_ms, timed(step));
    if (o.data_parallel)
      allreduce_ms = std::min(allreduce_ms, median_step_ms(20, [&](int) {
                                allreduce_only();
                                dev.synchronize();
                              }));
  }
  const encore::UnitStats& st = step.unit().stats();
  if (root) {
    std::printf("step time (upload + step, waiting for the device): eager %.2f ms, replay %.2f ms (%.2fx); %.1f GFLOP/s in replay\n",
                eager_ms, replay_ms, eager_ms / replay_ms, model.flops_per_step() / (replay_ms * 1e6));
    std::printf("captured step: %zu items, %zu pruned, %zu replayed; temporaries %.1f KiB naive -> %.1f KiB planned (%zu buffers)\n",
                st.items, st.items_pruned, st.items_replayed, double(st.temp_bytes_naive) / 1024, double(st.temp_bytes_planned) / 1024,
                st.planned_temps);
    if (o.data_parallel)
      std::printf("data-parallel step (%d rank%s, rank 0): %.2f ms median, allreduce of %.0f KiB: %.2f ms median (%.0f%% of the step)\n", N,
                  N == 1 ? "" : "s", replay_ms, double(model.num_params()) * 4 / 1024, allreduce_ms, 100 * allreduce_ms / replay_ms);
  }
  if (!o.save_step.empty() && root) {
    model.reset_optimizer();  // zero moments and gradients: saved as "zeros", keeping the file small
    encore::workload::save_workload(step.unit(), o.save_step, {.name = "fmnist_step"});
    std::printf("saved the training step to %s\n", o.save_step.c_str());
  }
  if (status) return status;
  if (acc < o.min_accuracy) {
    if (root) std::fprintf(stderr, "train_mlp: test accuracy %.4f is below --min-accuracy %.2f\n", acc, o.min_accuracy);
    return 1;
  }
  return 0;
}

// An error on one rank of several: the others may be waiting in a collective, and MPI_Finalize at
// exit would wait for them; leave without it, so that mpirun ends the job.
[[noreturn]] void fail_rank(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
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
    if (g_size > 1) {
      std::fprintf(stderr, "train_mlp [rank %d of %d]: %s\n", g_rank, g_size, e.what());
      fail_rank(2);
    }
    std::fprintf(stderr, "train_mlp: %s\n", e.what());
    return 2;
  }
}
