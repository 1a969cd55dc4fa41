// 2D heat diffusion on a grid with a moving heat source, one TinyJit call per tick (two explicit
// Euler substeps, ping-pong buffers a -> b -> a). The time step is a float Variable, the source's
// position two int Variables, so the replay follows them; prints total energy over time, ticks/s
// eager vs replay, and writes the final field as a PNG with a colour map.
//   ./build/examples/heat_sim [--size 256] [--ticks 2000] [--dt 0.2] [--out heat_sim.png]
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <encore/encore.hpp>

#include "heat/png_writer.hpp"

namespace po = boost::program_options;
using encore::Buffer;

namespace {

const char* kSource = R"CLC(
// One explicit Euler step of u_t = lap(u) + source, edges held at 0 (they drain heat).
__kernel void heat_diffuse(__global const float* u, __global float* v, int W, int H, float dt, int sx, int sy,
                           float power, int radius) {
  const int x = get_global_id(0), y = get_global_id(1), i = y * W + x;
  if (x == 0 || y == 0 || x == W - 1 || y == H - 1) { v[i] = 0.0f; return; }
  const float lap = u[i - 1] + u[i + 1] + u[i - W] + u[i + W] - 4.0f * u[i];
  const int dx = x - sx, dy = y - sy;
  const float src = dx * dx + dy * dy <= radius * radius ? power : 0.0f;
  v[i] = u[i] + dt * (lap + src);
}

__kernel void heat_row_energy(__global const float* u, __global float* e, int W) {
  const int y = get_global_id(0);
  float s = 0.0f;
  for (int x = 0; x < W; ++x) s += u[y * W + x];
  e[y] = s;
}
)CLC";

struct Options {
  int size = 256, ticks = 2000, rate_ticks = 200;
  double dt = 0.2;
  std::string out = "heat_sim.png";
};

// The source's path: a Lissajous curve inside the grid.
std::pair<int, int> source_at(int tick, int n) {
  const double r = 0.33 * n;
  return {int(n / 2 + r * std::sin(tick * 0.006)), int(n / 2 + r * std::sin(tick * 0.0085 + 0.7))};
}

int run(const Options& o) {
  encore::Device dev = encore::Device::open();
  encore::Program prog = dev.compile(kSource);
  encore::Kernel diffuse = prog.kernel("heat_diffuse"), energy = prog.kernel("heat_row_energy");
  const int n = o.size;
  Buffer a = dev.alloc<float>(size_t(n) * n).set_name("field"), b = dev.alloc<float>(size_t(n) * n).set_name("field_next");
  a.copyin(std::vector<float>(size_t(n) * n, 0.0f));
  encore::Variable dt = encore::Variable::f32("dt", 0, 0.25);  // stable for dt <= 0.25
  encore::Variable sx{"src_x", 0, n - 1}, sy{"src_y", 0, n - 1};
  const float power = 4.0f;
  const int radius = std::max(2, n / 40);
  auto tick_fn = [&](encore::BoundVar, encore::BoundVar, encore::BoundVar) {
    const encore::Sizes g{size_t(n), size_t(n)}, l{size_t(64), size_t(1)};
    dev.launch(diffuse, g, l, a, b, n, n, dt, sx, sy, power, radius);
    dev.launch(diffuse, g, l, b, a, n, n, dt, sx, sy, power, radius);
    Buffer e = dev.alloc<float>(size_t(n));
    dev.launch(energy, {size_t(n)}, {size_t(64)}, a, e, n);
    return e;
  };
  encore::TinyJit tick(tick_fn);
  auto bound = [&](int t) {
    auto [x, y] = source_at(t, n);
    return std::tuple{dt.bind(o.dt), sx.bind(x), sy.bind(y)};
  };
  auto one = [&](auto& jit, int t) {
    auto [d, x, y] = bound(t);
    return jit(d, x, y);
  };
  std::printf("heat_sim: %dx%d grid, %d ticks (2 substeps each), dt %.3f, on %s\n", n, n, o.ticks, o.dt, dev.id().c_str());
  for (int t = 0; t < o.ticks; ++t) {
    Buffer e = one(tick, t);
    if (t % (o.ticks / 10 > 0 ? o.ticks / 10 : 1) == 0 || t + 1 == o.ticks) {
      const std::vector<float> rows = e.copyout<float>();
      auto [x, y] = source_at(t, n);
      std::printf("tick %5d  source (%3d, %3d)  energy %10.1f\n", t, x, y, std::accumulate(rows.begin(), rows.end(), 0.0));
    }
  }
  const std::vector<float> field = a.copyout<float>();
  heat::write_png(o.out, field, n, n);
  std::printf("wrote %s\n", o.out.c_str());

  // Replay must compute what eager execution computes: the same 50 ticks from the same field.
  encore::TinyJit eager(tick_fn, encore::JitOptions{.enabled = false});
  auto run_from = [&](auto& jit, const std::vector<float>& start) {
    a.copyin(start);
    for (int t = 0; t < 50; ++t) one(jit, o.ticks + t);
    return a.copyout<float>();
  };
  const bool same = run_from(eager, field) == run_from(tick, field);
  std::printf("replay matches eager over 50 ticks: %s\n", same ? "yes (bitwise)" : "NO");
  if (!same) return 1;

  // Ticks per second, eager vs replay: interleaved rounds, best of each; each round ends when the
  // device has finished.
  if (o.rate_ticks <= 0) return 0;
  auto rate = [&](auto& jit) {
    const int k = o.rate_ticks;
    auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < k; ++t) one(jit, o.ticks + t);
    dev.synchronize();
    return k / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double re = 0, rr = 0;
  for (int round = 0; round < 3; ++round) {
    re = std::max(re, rate(eager));
    rr = std::max(rr, rate(tick));
  }
  const encore::UnitStats& st = tick.unit().stats();
  std::printf("ticks/s: eager %.0f, replay %.0f (%.2fx); %zu items per tick, %zu pruned\n", re, rr, rr / re, st.items, st.items_pruned);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  po::options_description d("heat_sim options");
  d.add_options()("help,h", "show this help")
      ("size", po::value(&o.size)->default_value(o.size), "grid side (a multiple of 64)")
      ("ticks", po::value(&o.ticks)->default_value(o.ticks), "ticks to simulate")
      ("dt", po::value(&o.dt)->default_value(o.dt), "time step (at most 0.25)")
      ("out", po::value(&o.out)->default_value(o.out), "PNG file for the final field")
      ("rate-ticks", po::value(&o.rate_ticks)->default_value(o.rate_ticks),
       "ticks per timing round (3 rounds each of eager and replay); 0 skips the timing (slow simulators)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, d), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << d;
      return 0;
    }
    if (o.size < 64 || o.size % 64 || o.ticks < 1) throw po::error("--size must be a multiple of 64 and --ticks at least 1");
    return run(o);
  } catch (const po::error& e) {
    std::fprintf(stderr, "heat_sim: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat_sim: %s\n", e.what());
    return 2;
  }
}
