// Steps that decide (encore/control.hpp), three programs that used to need a host round trip
// outside the step, each now ONE TinyJit step, each checked against eager execution:
//   srad      Rodinia-style speckle-reducing diffusion: reduce the image, compute q0sqr on the host,
//             diffuse with it; also checked against the two-jit version with a copyout between
//   particles an engine frame: live particles counted on the device set the next kernels' launch
//             size (indirect dispatch, which OpenCL lacks), 300 frames
//   jacobi    a solver iterating until its residual is below a tolerance: one replay per solve,
//             iteration counts printed
// Usage: steps_that_decide [--device NAME] [--frames N]. Exits 1 when a replay differs from eager.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <encore/encore.hpp>

using encore::Buffer;
using encore::Device;
using encore::HostCtx;
using encore::TinyJit;
using encore::Variable;

namespace {

const char* kSrc = R"CL(
// sums[0] = sum of J, sums[1] = sum of J*J (one work-item: exact and simple)
__kernel void srad_reduce(__global const float* J, __global float* sums, int n) {
  float s = 0.0f, s2 = 0.0f;
  for (int i = 0; i < n; ++i) { s += J[i]; s2 += J[i] * J[i]; }
  sums[0] = s; sums[1] = s2;
}
__kernel void srad_coef(__global const float* J, __global float* c, __global float4* d, int rows, int cols, float q0sqr) {
  int i = get_global_id(1), j = get_global_id(0), k = i * cols + j;
  float Jc = J[k];
  float dN = J[max(i - 1, 0) * cols + j] - Jc, dS = J[min(i + 1, rows - 1) * cols + j] - Jc;
  float dW = J[i * cols + max(j - 1, 0)] - Jc, dE = J[i * cols + min(j + 1, cols - 1)] - Jc;
  float G2 = (dN * dN + dS * dS + dW * dW + dE * dE) / (Jc * Jc);
  float L = (dN + dS + dW + dE) / Jc;
  float num = 0.5f * G2 - (1.0f / 16.0f) * (L * L), den = 1.0f + 0.25f * L;
  float qsqr = num / (den * den);
  den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  c[k] = clamp(1.0f / (1.0f + den), 0.0f, 1.0f);
  d[k] = (float4)(dN, dS, dW, dE);
}
__kernel void srad_update(__global float* J, __global const float* c, __global const float4* d, int rows, int cols, float lambda) {
  int i = get_global_id(1), j = get_global_id(0), k = i * cols + j;
  float cN = c[k], cS = c[min(i + 1, rows - 1) * cols + j], cW = c[k], cE = c[i * cols + min(j + 1, cols - 1)];
  float4 v = d[k];
  J[k] += 0.25f * lambda * (cN * v.x + cS * v.y + cW * v.z + cE * v.w);
}

// particles: live ones (life > 0) are compacted to the front by a single work-item; then the frame's
// kernels run over the live count only
__kernel void p_compact(__global float4* p, __global int* live, int n) {
  int k = 0;
  for (int i = 0; i < n; ++i) if (p[i].w > 0.0f) p[k++] = p[i];
  for (int i = k; i < n; ++i) p[i] = (float4)(0.0f);
  live[0] = k;
}
__kernel void p_move(__global float4* p, float dt) {
  int i = get_global_id(0);
  float4 q = p[i];
  q.xyz += dt * (float3)(q.y, -q.x, 0.5f);
  q.w -= dt;
  p[i] = q;
}
__kernel void p_spawn(__global float4* p, int live, int frame, int n) {
  int i = get_global_id(0), k = live + i;
  if (k < n) p[k] = (float4)((float)(i % 7) * 0.25f, (float)(frame % 5) * 0.5f, 0.0f, 0.5f + 0.125f * (float)((i + frame) % 9));
}

// jacobi for -u'' = f on a 1D grid, u = 0 at both ends; r[0] = max |u_new - u|
__kernel void j_sweep(__global const float* u, __global float* un, __global const float* f, float h2, int n) {
  int i = get_global_id(0);
  float l = i > 0 ? u[i - 1] : 0.0f, r = i + 1 < n ? u[i + 1] : 0.0f;
  un[i] = 0.5f * (l + r + h2 * f[i]);
}
__kernel void j_count(__global int* c) { c[0] += 1; }
__kernel void j_delta(__global float* u, __global const float* un, __global float* r, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) { m = fmax(m, fabs(un[i] - u[i])); u[i] = un[i]; }
  r[0] = m;
}
)CL";

struct Kernels {
  Device dev;
  encore::Program prog;
  encore::Kernel reduce, coef, update, compact, move, spawn, sweep, delta, count;
  explicit Kernels(Device d)
      : dev(d), prog(d.compile(kSrc)), reduce(prog.kernel("srad_reduce")), coef(prog.kernel("srad_coef")),
        update(prog.kernel("srad_update")), compact(prog.kernel("p_compact")), move(prog.kernel("p_move")),
        spawn(prog.kernel("p_spawn")), sweep(prog.kernel("j_sweep")), delta(prog.kernel("j_delta")),
        count(prog.kernel("j_count")) {}
};

template <class T> bool same(const Buffer& a, const Buffer& b) { return a.copyout<T>() == b.copyout<T>(); }

// --- srad -----------------------------------------------------------------------------------------
bool srad(const Kernels& k, int steps) {
  const Device& dev = k.dev;
  const int rows = 64, cols = 64, n = rows * cols;
  const float lambda = 0.5f;
  std::vector<float> img(n);
  std::mt19937 g(7);
  for (float& v : img) v = std::exp(std::uniform_real_distribution<float>(0.f, 1.f)(g));
  Variable q0sqr = Variable::f32("q0sqr", 0.0, 1e6);
  struct State {
    Buffer J, sums, c, d;
  };
  auto state = [&] {
    State s{dev.alloc<float>(n), dev.alloc<float>(2), dev.alloc<float>(n), Buffer(dev, encore::DType::f32, 4 * n)};
    s.J.copyin(img);
    return s;
  };
  auto diffuse = [&](State& s) {
    dev.launch(k.coef, {cols, rows}, {}, s.J, s.c, s.d, rows, cols, q0sqr);
    dev.launch(k.update, {cols, rows}, {}, s.J, s.c, s.d, rows, cols, lambda);
  };
  auto one_step = [&](State& s) {
    dev.launch(k.reduce, {1}, {}, s.J, s.sums, n);
    dev.host({s.sums}, {q0sqr}, [n, q0sqr](HostCtx& c) {
      float mean = c.read<float>(0, 0) / n, var = c.read<float>(0, 1) / n - mean * mean;
      c.set(q0sqr, static_cast<double>(var / (mean * mean)));
    }, "q0sqr");
    diffuse(s);
  };
  State a = state(), b = state(), t = state();
  TinyJit jit([&] { one_step(a); });
  // the port before host items: two jits and a host round trip between them
  TinyJit reduce_jit([&] { dev.launch(k.reduce, {1}, {}, t.J, t.sums, n); });
  TinyJit diffuse_jit([&](encore::BoundVar) { diffuse(t); });
  int replays = 0;
  for (int i = 0; i < steps; ++i) {
    replays += jit.next_call_replays();
    jit();
    one_step(b);
    reduce_jit();
    std::vector<float> s = t.sums.copyout<float>();
    float mean = s[0] / n, var = s[1] / n - mean * mean;
    diffuse_jit(q0sqr.bind(static_cast<double>(var / (mean * mean))));
  }
  bool ok = same<float>(a.J, b.J) && same<float>(a.J, t.J) && replays == steps - 2;
  std::printf("srad: %d steps of 64x64, one step each (%d of them one replay): %s eager, %s the two-jit version\n", steps, replays,
              same<float>(a.J, b.J) ? "equals" : "DIFFERS FROM",
              same<float>(a.J, t.J) ? "equals" : "DIFFERS FROM");
  return ok;
}

// --- particles ------------------------------------------------------------------------------------
bool particles(const Kernels& k, int frames) {
  const Device& dev = k.dev;
  const int n = 1024, spawn = 24;
  Variable live{"live", 0, n}, frame{"frame", 0, 1 << 30};
  struct State {
    Buffer p, count;
  };
  auto state = [&] {
    State s{Buffer(dev, encore::DType::f32, 4 * n), dev.alloc<int32_t>(1)};
    dev.fill(s.p, 0.0f);
    return s;
  };
  auto step = [&](State& s) {
    dev.launch(k.compact, {1}, {}, s.p, s.count, n);
    dev.host({s.count}, {live}, [live](HostCtx& c) { c.set(live, c.read<int32_t>(0)); }, "live");
    dev.launch(k.move, {live}, {}, s.p, 0.0625f);                  // only the live ones
    dev.launch(k.spawn, {spawn}, {}, s.p, live, frame, n);
  };
  State a = state(), b = state();
  TinyJit jit([&](encore::BoundVar) { step(a); });
  int most = 0, replays = 0;
  for (int f = 0; f < frames; ++f) {
    replays += jit.next_call_replays(frame.bind(f));
    jit(frame.bind(f));
    {
      std::vector<encore::BoundVar> v{frame.bind(f)};
      encore::BindingScope scope(v, true);
      step(b);
    }
    most = std::max(most, a.count.copyout<int32_t>()[0]);
  }
  bool ok = same<float>(a.p, b.p) && same<int32_t>(a.count, b.count) && replays == frames - 2;
  std::printf("particles: %d frames (%d of them one replay each), launch sizes from the live count (up to %d): %s eager\n", frames, replays,
              most, same<float>(a.p, b.p) && same<int32_t>(a.count, b.count) ? "equals" : "DIFFERS FROM");
  return ok;
}

// --- jacobi ---------------------------------------------------------------------------------------
bool jacobi(const Kernels& k) {
  const Device& dev = k.dev;
  const int n = 32;
  const float tol = 1e-4f;
  Variable scale = Variable::f32("scale", 0.0, 100.0);
  struct State {
    Buffer u, un, f, r, iters;
  };
  auto state = [&] {
    State s{dev.alloc<float>(n), dev.alloc<float>(n), dev.alloc<float>(n), dev.alloc<float>(1), dev.alloc<int32_t>(1)};
    std::vector<float> f(n);
    for (int i = 0; i < n; ++i) f[i] = std::sin(3.14159265f * static_cast<float>(i + 1) / static_cast<float>(n + 1));
    s.f.copyin(f);
    return s;
  };
  auto solve = [&](State& s) {
    dev.fill(s.u, 0.0f);
    dev.fill(s.iters, 0);
    dev.loop_while(20000, {s.r}, [&] {
      dev.launch(k.sweep, {n}, {}, s.u, s.un, s.f, scale, n);
      dev.launch(k.delta, {1}, {}, s.u, s.un, s.r, n);
      dev.launch(k.count, {1}, {}, s.iters);
    }, [tol](HostCtx& c) { return c.read<float>(0) > tol; }, "jacobi");
  };
  State a = state(), b = state();
  TinyJit jit([&](encore::BoundVar) { solve(a); });
  bool ok = true;
  std::printf("jacobi: solves until max |du| <= %g, one replay each, equal to eager:", static_cast<double>(tol));
  const double scales[] = {0.5, 1.0, 0.01, 2.0, 0.25};
  for (double sc : scales) {
    const bool replay = jit.next_call_replays(scale.bind(sc));  // calls 0 and 1 warm up and capture
    jit(scale.bind(sc));
    {
      std::vector<encore::BoundVar> v{scale.bind(sc)};
      encore::BindingScope scope(v, true);
      solve(b);
    }
    const bool eq = same<float>(a.u, b.u) && same<int32_t>(a.iters, b.iters);
    ok = ok && eq;
    std::printf(" scale %g: %d iterations (%s)%s;", sc, a.iters.copyout<int32_t>()[0], replay ? "one replay" : "eager, capturing",
                eq ? "" : " (DIFFERS FROM EAGER)");
  }
  std::printf("\n");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string name;
  int frames = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--frames")) frames = std::atoi(argv[i + 1]);
  }
  try {
    Device dev = name.empty() ? Device::open() : Device::open(name);
    if (dev.is_null()) {
      std::printf("the NULL device computes nothing: run on an OpenCL device\n");
      return 77;
    }
    Kernels k(dev);
    bool ok = srad(k, 50);
    ok = particles(k, frames) && ok;
    ok = jacobi(k) && ok;
    return ok ? 0 : 1;
  } catch (const encore::Error& e) {
    std::fprintf(stderr, "steps_that_decide: %s\n", e.what());
    return 1;
  }
}
