#include "property_gen.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace prop {

namespace {

// FP_CONTRACT OFF: no fused multiply-add, so the host reference (compiled with -std=c++20, where
// GCC does not contract either) computes every float op with the same single rounding. No division,
// no sqrt, no library functions: every op is a correctly rounded IEEE add, mul or compare.
const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void p_affine(__global const float* a, __global float* o, float m, float c) {
  size_t i = get_global_id(0); o[i] = a[i] * m + c; }
__kernel void p_add(__global const float* a, __global const float* b, __global float* o, float m) {
  size_t i = get_global_id(0); o[i] = a[i] * m + b[i]; }
__kernel void p_mulc(__global const float* a, __global const float* b, __global float* o) {
  size_t i = get_global_id(0); float t = b[i]; t = t < -1.5f ? -1.5f : t; t = t > 1.5f ? 1.5f : t; o[i] = a[i] * t + 0.25f; }
__kernel void p_max2(__global const float* a, __global const float* b, __global float* o) {
  size_t i = get_global_id(0); o[i] = a[i] > b[i] ? a[i] : b[i]; }
__kernel void p_tern(__global const float* a, __global const float* b, __global const float* c, __global float* o, float m) {
  size_t i = get_global_id(0); o[i] = (a[i] + b[i]) * 0.5f + c[i] * m; }
__kernel void p_sel(__global const float* a, __global const float* b, __global const float* c, __global float* o) {
  size_t i = get_global_id(0); o[i] = a[i] > b[i] ? c[i] : a[i] - c[i]; }
__kernel void p_inplace(__global float* s, __global const float* x, float m, float c) {
  size_t i = get_global_id(0); s[i] = s[i] * m + x[i] * c; }
__kernel void p_counter(__global int* c) {
  if (get_global_id(0) == 0) c[0] += 1; }
__kernel void p_from_counter(__global const float* a, __global const int* c, __global float* o) {
  size_t i = get_global_id(0); o[i] = a[i] + (float)c[0] * 0.125f; }
__kernel void p_rng(__global uint* st, __global float* o) {
  size_t i = get_global_id(0); uint x = st[i]; x ^= x << 13; x ^= x >> 17; x ^= x << 5; st[i] = x;
  o[i] = (float)(x >> 8) * 5.9604644775390625e-8f - 0.5f; }
__kernel void p_table(__global const float* w, __global float* t, float m) {
  size_t i = get_global_id(0); t[i] = w[i] * m + (float)(i & 7) * 0.125f; }
__kernel void p_var_add(__global const float* a, __global float* o, int v) {
  size_t i = get_global_id(0); o[i] = a[i] + (float)v * 0.5f; }
__kernel void p_vprefix(__global float* s, __global const float* x, float m) {
  size_t i = get_global_id(0); s[i] = s[i] * m + x[i]; }
__kernel void p_var_scale(__global const float* a, __global float* o, float v) {
  size_t i = get_global_id(0); o[i] = a[i] * v + 0.5f; }
)CL";

const char* kNames[] = {"p_affine", "p_add",  "p_mulc",  "p_max2",  "p_tern",    "p_sel",    "p_inplace",
                        "p_counter", "p_from_counter", "p_rng", "p_table", "p_var_add", "p_vprefix", "p_var_scale"};

// Per kernel: which buffer parameters are const (read-only); the rest are read-write (inout).
struct KInfo {
  std::vector<bool> const_buf;
  int floats;  // float scalars after the buffers
};
const KInfo& kinfo(KId k) {
  static const std::array<KInfo, static_cast<size_t>(KId::count_)> t = {{
      {{true, false}, 2},                // affine a, o ; m c
      {{true, true, false}, 1},          // add a b o ; m
      {{true, true, false}, 0},          // mulc
      {{true, true, false}, 0},          // max2
      {{true, true, true, false}, 1},    // tern ; m
      {{true, true, true, false}, 0},    // sel
      {{false, true}, 2},                // inplace s x ; m c
      {{false}, 0},                      // counter
      {{true, true, false}, 0},          // from_counter a c o
      {{false, false}, 0},               // rng st o
      {{true, false}, 1},                // table w t ; m
      {{true, false}, 0},                // var_add a o ; int v
      {{false, true}, 1},                // vprefix s x ; m
      {{true, false}, 0},                // var_scale a o ; float v
  }};
  return t[static_cast<size_t>(k)];
}

float f_of(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
uint32_t w_of(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

// ---- generator -----------------------------------------------------------------------------------

struct Gen {
  Prog& p;
  std::mt19937_64 r;
  const GenOptions& o;
  std::vector<bool> defined;     // per value: readable
  std::vector<int> protect;      // states never written by generic ops (table sources, late-table states)
  bool input_writable = false;
  int cur = 0;                   // the device new values go to and operands come from

  Gen(Prog& prog, uint64_t seed, const GenOptions& opt) : p(prog), r(seed * 0x9E3779B97F4A7C15ull + 12345), o(opt) {}

  // Draws nothing with one device, so a seed gives the same program as before devices existed.
  int pick_dev() { return p.devices > 1 ? rnd(0, p.devices - 1) : 0; }
  int dev_of(int v) const { return p.values[static_cast<size_t>(v)].dev; }

  int rnd(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); }
  bool chance(double q) { return std::uniform_real_distribution<double>(0, 1)(r) < q; }
  template <class T> const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(rnd(0, static_cast<int>(v.size()) - 1))]; }
  float pickf(std::initializer_list<float> l) { return *(l.begin() + rnd(0, static_cast<int>(l.size()) - 1)); }

  uint32_t rand_float_word() { return w_of(static_cast<float>(rnd(-256, 256)) / 64.0f); }
  Words rand_floats(int n) {
    Words w(static_cast<size_t>(n));
    for (auto& x : w) x = rand_float_word();
    return w;
  }

  int add_value(Value v) {
    p.values.push_back(v);
    defined.push_back(false);
    return static_cast<int>(p.values.size()) - 1;
  }
  int root(int v) const { return p.values[v].src == Value::view ? p.values[v].base : v; }
  int elem_off(int v) const { return p.values[v].src == Value::view ? p.values[v].off : 0; }
  bool overlap(int a, int b) const {
    if (root(a) != root(b)) return false;
    int la = elem_off(a), ha = la + p.values[a].count, lb = elem_off(b), hb = lb + p.values[b].count;
    return la < hb && lb < ha;
  }
  bool is_protected(int v) const { return std::find(protect.begin(), protect.end(), root(v)) != protect.end(); }

  int new_state(Ty ty, int count, Words init) {
    Value v;
    v.src = Value::state;
    v.index = static_cast<int>(p.state_vals.size());
    v.count = count;
    v.ty = ty;
    v.dev = cur;
    int id = add_value(v);
    p.state_vals.push_back(id);
    p.state_init.push_back(std::move(init));
    defined[id] = ty == Ty::f32;
    return id;
  }
  // An f32 state of `count` random values that generic ops never write (see protect).
  int new_protected_state(int count) {
    int id = new_state(Ty::f32, count, rand_floats(count));
    protect.push_back(id);
    return id;
  }
  int new_temp(int count, Ty ty = Ty::f32) {
    int id = p.add_temp(count, ty, cur);
    defined.push_back(false);
    return id;
  }
  int new_view(int base, int off, int count) {
    int id = p.add_view(base, off, count);
    defined.push_back(defined[base]);
    p.f.view = true;
    return id;
  }

  // defined f32 values of `count` on device `dev` (the current one by default)
  std::vector<int> readable(int count, int dev = -1) const {
    if (dev < 0) dev = cur;
    std::vector<int> v;
    for (size_t i = 0; i < p.values.size(); ++i)
      if (defined[i] && p.values[i].count == count && p.values[i].ty == Ty::f32 && p.values[i].dev == dev) v.push_back(static_cast<int>(i));
    return v;
  }
  // A readable f32 value of `count` on the current device: one there, or (several devices) a copy
  // into a new temp of one on another device, else a view or a fresh upload.
  int operand(int count) {
    std::vector<int> v = readable(count);
    if (p.devices > 1) {
      int other = (cur + rnd(1, p.devices - 1)) % p.devices;
      std::vector<int> far = readable(count, other);
      if (!far.empty() && (v.empty() || chance(0.3))) return cross_copy(pick(far));
    }
    if (!v.empty()) return pick(v);
    if (count == p.M && o.allow_views) {
      std::vector<int> big = readable(p.N);
      std::vector<int> roots;
      for (int b : big)
        if (p.values[b].src != Value::view) roots.push_back(b);
      if (!roots.empty()) return new_view(pick(roots), chance(0.5) ? p.align : 0, p.M);
    }
    return upload_temp(count);
  }
  // a copy item dst <- src on the current device (dst's); src may be on another device
  void push_copy(int dst, int src) {
    Op op;
    op.kind = Op::copy;
    op.v = dst;
    op.src = src;
    op.dev = cur;
    p.ops.push_back(op);
    defined[dst] = true;
    p.f.copy = true;
    p.f.cross_copy = p.f.cross_copy || dev_of(src) != cur;
  }
  // a new temp on the current device holding a copy of `src` (on another device)
  int cross_copy(int src) {
    int t = new_temp(p.values[static_cast<size_t>(src)].count);
    push_copy(t, src);
    return t;
  }
  int upload_temp(int count) {
    int t = new_temp(count);
    Op op;
    op.kind = Op::upload;
    op.v = t;
    op.dev = dev_of(t);
    op.data = rand_floats(count);
    p.ops.push_back(op);
    defined[t] = true;
    p.f.upload = true;
    return t;
  }

  // a host copyin inside the step into an existing buffer (a state, a temp, a view of either)
  void upload_into() {
    int c = count_pick();
    int t = target(c, {}, false);
    Op op;
    op.kind = Op::upload;
    op.v = t;
    op.dev = dev_of(t);
    op.data = rand_floats(c);
    p.ops.push_back(op);
    defined[t] = true;
    p.f.upload = true;
  }
  // Device::fill of an existing buffer (a state, a temp, a view of either) or of a new temp
  void fill_into() {
    int c = count_pick();
    int t = chance(0.5) ? target(c, {}, false) : new_temp(c);
    Op op;
    op.kind = Op::fill;
    op.v = t;
    op.dev = dev_of(t);
    op.data = rand_floats(1);
    p.ops.push_back(op);
    defined[t] = true;
    p.f.fill = true;
  }
  // Where an op writing `count` elements stores its result: a new temp mostly, sometimes an existing
  // temp, a view of one, a state or (when enabled) an input. Never overlapping any operand.
  int target(int count, const std::vector<int>& operands, bool allow_new = true) {
    if (allow_new && chance(0.6)) return new_temp(count);
    std::vector<int> cand;
    for (size_t i = 0; i < p.values.size(); ++i) {
      const Value& v = p.values[i];
      if (v.count != count || v.ty != Ty::f32 || !defined[i] || v.dev != cur) continue;
      const Value& rv = p.values[root(static_cast<int>(i))];
      if (rv.src == Value::input && !input_writable) continue;
      if (is_protected(static_cast<int>(i))) continue;
      bool ok = true;
      for (int x : operands) ok = ok && !overlap(x, static_cast<int>(i));
      if (ok) cand.push_back(static_cast<int>(i));
    }
    if (cand.empty()) return allow_new ? new_temp(count) : new_state(Ty::f32, count, rand_floats(count));
    return pick(cand);
  }

  encore::Access out_access() { return chance(0.5) ? encore::Access::out : encore::Access::none; }

  void kernel(KId k, std::vector<int> bufs, std::vector<encore::Access> acc, int gsize, float f0 = 0, float f1 = 0) {
    Op op = kernel_op(k, std::move(bufs), std::move(acc), f0, f1);
    op.gsize = gsize;
    op.dev = dev_of(op.bufs[0]);
    for (int b : op.bufs)
      if (dev_of(b) != op.dev) throw std::logic_error("property generator: a kernel over buffers of two devices");
    p.ops.push_back(op);
  }
  int count_pick() { return chance(0.6) ? p.N : p.M; }

  void elementwise() {
    int c = count_pick();
    static const KId ks[] = {KId::affine, KId::add, KId::mulc, KId::max2, KId::tern, KId::sel};
    KId k = ks[rnd(0, 5)];
    int arity = k == KId::affine ? 1 : (k == KId::tern || k == KId::sel) ? 3 : 2;
    std::vector<int> ops;
    for (int i = 0; i < arity; ++i) ops.push_back(operand(c));
    int t = target(c, ops);
    std::vector<int> bufs = ops;
    bufs.push_back(t);
    std::vector<encore::Access> acc(bufs.size(), encore::Access::none);
    acc.back() = out_access();
    kernel(k, bufs, acc, c, pickf({0.5f, -0.5f, 0.75f, 1.5f, -1.25f, 1.0f}), pickf({0.25f, -1.0f, 0.125f, 2.0f, 0.0f}));
    defined[t] = true;
  }
  // s = s * m + x * c on a state, a defined temp, or an input when enabled
  void inplace() {
    int c = count_pick();
    int x = operand(c);
    int s = target(c, {x}, false);
    kernel(KId::inplace, {s, x}, {}, c, pickf({0.5f, -0.5f, 0.75f}), pickf({0.25f, 1.0f, -0.5f}));
    defined[s] = true;
  }
  void copy() {
    int c = count_pick();
    int src = -1;
    if (p.devices > 1 && chance(0.5)) {  // from another device into any target here (a state, an input, a temp)
      const int here = cur;
      cur = (cur + rnd(1, p.devices - 1)) % p.devices;
      src = operand(c);
      cur = here;
    } else {
      src = operand(c);
    }
    push_copy(target(c, {src}), src);
  }
  void view() {
    std::vector<int> big = readable(p.N), roots;
    for (int b : big)
      if (p.values[b].src != Value::view) roots.push_back(b);
    if (roots.empty() || !o.allow_views) return elementwise();
    new_view(pick(roots), chance(0.5) ? p.align : 0, p.M);
  }

  // ---- features ----
  void table_temp() {
    int cw = count_pick();
    int w = new_protected_state(cw);
    int src = w;
    if (cw == p.N && o.allow_views && chance(0.3)) src = new_view(w, p.align, p.M);
    int c = p.values[src].count;
    int t = new_temp(c);
    kernel(KId::table, {src, t}, {encore::Access::none, out_access()}, c, pickf({0.5f, 1.5f, -0.75f}));
    defined[t] = true;
    if (chance(0.4)) {  // a one-time chain: a table derived from the table
      int t2 = new_temp(c);
      kernel(KId::affine, {t, t2}, {encore::Access::none, out_access()}, c, 0.5f, 1.0f);
      defined[t2] = true;
    }
    p.f.table = true;
  }
  // a closure state read early in the step and rebuilt late from a closure buffer: the table item is
  // one-time by the rule, while an earlier item reads its bytes (the value of the previous call)
  std::function<void()> table_late_state() {
    int cw = count_pick();
    int w = new_protected_state(cw);
    int ts = new_protected_state(cw);
    p.f.table_late_state = true;
    // early read
    int x = operand(cw);
    int t = new_temp(cw);
    kernel(KId::add, {ts, x, t}, {encore::Access::none, encore::Access::none, out_access()}, cw, 0.5f);
    defined[t] = true;
    return [this, w, ts, cw] {
      cur = dev_of(ts);
      kernel(KId::table, {w, ts}, {encore::Access::none, chance(0.8) ? encore::Access::out : encore::Access::none}, cw,
             pickf({0.5f, 1.5f, -0.75f}));
    };
  }
  void counter() {
    Words init{static_cast<uint32_t>(rnd(0, 9))};
    int cs = new_state(Ty::i32, 1, init);
    kernel(KId::counter, {cs}, {}, 1);
    if (chance(0.8)) {
      int c = count_pick();
      int a = operand(c);
      int t = target(c, {a});
      kernel(KId::from_counter, {a, cs, t}, {encore::Access::none, encore::Access::none, out_access()}, c);
      defined[t] = true;
    }
    p.f.counter = true;
  }
  void rng() {
    int c = count_pick();
    Words init(static_cast<size_t>(c));
    for (auto& x : init) x = static_cast<uint32_t>(r() | 1u);
    int st = new_state(Ty::u32, c, init);
    int t = target(c, {});
    kernel(KId::rng, {st, t}, {encore::Access::none, out_access()}, c);
    defined[t] = true;
    p.f.rng = true;
  }
  std::function<void()> cycle() {
    int c = count_pick();
    int a = new_protected_state(c);
    int b = new_protected_state(c);
    kernel(KId::affine, {a, b}, {encore::Access::none, out_access()}, c, pickf({0.5f, -0.75f}), 0.25f);
    p.f.cycle = true;
    return [this, a, b, c] { cur = dev_of(a); kernel(KId::affine, {b, a}, {encore::Access::none, out_access()}, c, pickf({0.5f, -0.5f}), -0.125f); };
  }
  void var_scalar() {
    int c = count_pick();
    int a = operand(c);
    int t = target(c, {a});
    bool f = chance(0.5);
    kernel(f ? KId::var_scale : KId::var_add, {a, t}, {encore::Access::none, out_access()}, c);
    p.ops.back().var_scalar = true;
    defined[t] = true;
    (f ? p.has_fv : p.has_sv) = true;
    p.f.var_scalar = true;
  }
  void var_size() {
    int c = count_pick();
    int x = operand(c);
    int s = target(c, {x}, false);
    kernel(KId::vprefix, {s, x}, {}, 0, pickf({0.5f, -0.5f, 0.75f}));
    p.ops.back().var_size = true;
    defined[s] = true;
    p.has_len = true;
    p.f.var_size = true;
  }
  void input_written() {
    std::vector<int> ins;
    for (int v : p.input_vals) ins.push_back(v);
    int in = pick(ins);
    cur = dev_of(in);
    int c = p.values[in].count;
    int x = operand(c);
    for (int tries = 0; tries < 4 && overlap(x, in); ++tries) x = operand(c);
    if (overlap(x, in)) x = upload_temp(c);
    if (chance(0.6)) kernel(KId::inplace, {in, x}, {}, c, 0.5f, 0.25f);
    else kernel(KId::affine, {x, in}, {encore::Access::none, out_access()}, c, 0.75f, -0.5f);
    p.f.input_written = true;
  }
  void loop_carried() {
    // a plain state read early and written later in the step
    int c = count_pick();
    int s = new_state(Ty::f32, c, rand_floats(c));
    int x = operand(c);
    int t = new_temp(c);
    kernel(KId::add, {s, x, t}, {encore::Access::none, encore::Access::none, out_access()}, c, 0.75f);
    defined[t] = true;
    deferred.push_back([this, s, t, c] {
      cur = dev_of(s);
      if (chance(0.5)) {
        push_copy(s, t);
      } else {
        int y = operand(c);
        if (overlap(y, s)) y = t;
        kernel(KId::inplace, {s, y}, {}, c, 0.5f, 0.5f);
      }
    });
  }

  std::vector<std::function<void()>> deferred;

  void run() {
    static const int kN[] = {40, 45, 72, 101, 136, 200, 267, 299};
    // N - M is one view alignment: a view of M at offset `align` fits in N (M as with 32)
    p.align = std::max(o.view_align, 1);
    p.N = kN[rnd(0, 7)] + std::max(p.align - 32, 0);
    p.M = p.N - p.align;
    p.devices = std::max(o.devices, 1);
    int nin = rnd(1, 3);
    for (int i = 0; i < nin; ++i) {
      Value v;
      v.src = Value::input;
      v.index = i;
      v.dev = pick_dev();
      v.count = count_pick();
      int id = add_value(v);
      defined[id] = true;
      p.input_vals.push_back(id);
    }
    int nst = rnd(0, 2);
    for (int i = 0; i < nst; ++i) {
      cur = pick_dev();
      int c = count_pick();
      new_state(Ty::f32, c, rand_floats(c));
    }
    input_writable = chance(0.25);
    if (!input_writable && p.input_vals.size() >= 2 && chance(0.15)) {
      // same buffer in two slots (as at capture): only when the step writes no input
      p.dup_input = true;
      p.values[static_cast<size_t>(p.input_vals.back())].count = p.values[static_cast<size_t>(p.input_vals[0])].count;
      p.values[static_cast<size_t>(p.input_vals.back())].dev = p.values[static_cast<size_t>(p.input_vals[0])].dev;
    }

    std::vector<std::function<void()>> features;
    if (chance(0.55)) features.push_back([this] { table_temp(); });
    if (chance(0.35)) features.push_back([this] { deferred.push_back(table_late_state()); });
    if (chance(0.3)) features.push_back([this] { counter(); });
    if (chance(0.3)) features.push_back([this] { rng(); });
    if (chance(0.3)) features.push_back([this] { deferred.push_back(cycle()); });
    if (chance(0.3)) features.push_back([this] { var_scalar(); });
    if (chance(0.3)) features.push_back([this] { var_size(); });
    if (input_writable) features.push_back([this] { input_written(); });
    if (chance(0.4)) features.push_back([this] { loop_carried(); });
    std::shuffle(features.begin(), features.end(), r);

    int n = rnd(o.min_ops, o.max_ops);
    size_t fi = 0;
    for (int i = 0; i < n || fi < features.size() || !deferred.empty(); ++i) {
      cur = pick_dev();
      int roll = rnd(0, 99);
      if (fi < features.size() && (roll < 30 || i >= n)) {
        features[fi++]();
      } else if (!deferred.empty() && (roll < 45 || i >= n)) {
        size_t k = static_cast<size_t>(rnd(0, static_cast<int>(deferred.size()) - 1));
        auto fn = std::move(deferred[k]);
        deferred.erase(deferred.begin() + static_cast<long>(k));
        fn();
      } else if (roll < 62) {
        elementwise();
      } else if (roll < 72) {
        inplace();
      } else if (roll < 80) {
        copy();
      } else if (roll < 88) {
        view();
      } else if (roll < 91) {
        upload_temp(count_pick());
      } else if (roll < 93) {
        upload_into();
      } else if (roll < 96) {
        fill_into();
      } else {
        elementwise();
      }
    }
    if (p.device_items() == 0) elementwise();

    // outputs: temps (or views of temps) written late, sometimes a state
    std::vector<int> temps;
    for (size_t i = 0; i < p.values.size(); ++i)
      if (defined[i] && p.values[root(static_cast<int>(i))].src == Value::temp && p.values[i].ty == Ty::f32) temps.push_back(static_cast<int>(i));
    int nout = rnd(1, 3);
    for (int i = 0; i < nout && !temps.empty(); ++i) {
      int k = chance(0.6) ? static_cast<int>(temps.size()) - 1 : rnd(0, static_cast<int>(temps.size()) - 1);
      p.outputs.push_back(temps[static_cast<size_t>(k)]);
      temps.erase(temps.begin() + k);
    }
    if (p.outputs.empty() || chance(0.15)) {
      std::vector<int> sts;
      for (int s : p.state_vals)
        if (p.values[s].ty == Ty::f32) sts.push_back(s);
      if (!sts.empty()) p.outputs.push_back(pick(sts));
    }
    if (p.outputs.empty()) {
      cur = 0;
      int t = new_temp(p.N);
      kernel(KId::affine, {operand(p.N), t}, {}, p.N, 1.0f, 0.0f);
      defined[t] = true;
      p.outputs.push_back(t);
    }

    // data
    p.input_sets.resize(kSets);
    for (int s = 0; s < kSets; ++s) {
      for (int v : p.input_vals) p.input_sets[static_cast<size_t>(s)].push_back(rand_floats(p.values[v].count));
      if (p.dup_input) p.input_sets[static_cast<size_t>(s)].back() = p.input_sets[static_cast<size_t>(s)][0];
    }
    if (p.has_len) p.len_hi = p.M;
    for (int c = 0; c < kCalls; ++c) {
      p.var_vals.push_back({rnd(static_cast<int>(p.sv_lo), static_cast<int>(p.sv_hi)), rnd(1, p.M)});
      p.fv_vals.push_back(pickf({0.5f, -0.75f, 1.25f, 2.0f, -1.5f, 0.0f}));
    }
    // host updates of closure buffers between calls
    for (size_t s = 0; s < p.state_vals.size(); ++s) {
      const Value& v = p.values[static_cast<size_t>(p.state_vals[s])];
      bool src = std::find(protect.begin(), protect.end(), p.state_vals[s]) != protect.end();
      double q = src ? 0.45 : 0.12;
      for (int c = 1; c < kCalls; ++c)
        if (chance(q)) {
          Words w;
          if (v.ty == Ty::f32) w = rand_floats(v.count);
          else if (v.ty == Ty::i32) w = {static_cast<uint32_t>(rnd(0, 50))};
          else for (int i = 0; i < v.count; ++i) w.push_back(static_cast<uint32_t>(r() | 1u));
          p.events.push_back({c, static_cast<int>(s), std::move(w)});
          p.f.host_update = true;
          if (c >= 2) p.f.host_update_replay = true;
        }
    }
    // last call's output fed back as an input (the step must not write that input: eager would
    // write the old output, which replay cannot give in one buffer; JitError by design)
    if (!input_writable && !p.dup_input && chance(0.25)) {
      std::vector<std::pair<int, int>> fb;
      for (size_t k = 0; k < p.input_vals.size(); ++k)
        for (size_t o = 0; o < p.outputs.size(); ++o) {
          const Value& ov = p.values[static_cast<size_t>(p.outputs[o])];
          int orv = ov.src == Value::view ? ov.base : p.outputs[o];
          if (ov.count == p.values[static_cast<size_t>(p.input_vals[k])].count && p.values[static_cast<size_t>(orv)].src == Value::temp &&
              ov.dev == p.values[static_cast<size_t>(p.input_vals[k])].dev)
            fb.push_back({static_cast<int>(k), static_cast<int>(o)});
        }
      if (!fb.empty()) {
        std::tie(p.fb_input, p.fb_output) = pick(fb);
        p.f.feedback = true;
      }
    }
    for (int c = 1; c < kCalls - 1 && !p.f.feedback; ++c)
      if (chance(0.2)) {
        p.edit_after.push_back(c);
        p.f.edit_output = true;
      }
    p.ring_inputs = chance(0.3);
    if (chance(0.2)) p.free_after = rnd(2, 4);
  }
};

}  // namespace

int Prog::add_temp(int count, Ty ty, int dev) {
  Value v;
  v.src = Value::temp;
  v.count = count;
  v.ty = ty;
  v.dev = dev;
  values.push_back(v);
  int id = static_cast<int>(values.size()) - 1;
  Op op;
  op.kind = Op::alloc;
  op.v = id;
  ops.push_back(op);
  return id;
}

int view_align(const encore::Device& d) { return d ? std::max(32, static_cast<int>(d.info().base_align_bytes / 4)) : 32; }

int Prog::add_view(int base, int off, int count) {
  Value v;
  v.src = Value::view;
  v.base = base;
  v.off = off;
  v.count = count;
  v.ty = values[static_cast<size_t>(base)].ty;
  v.dev = values[static_cast<size_t>(base)].dev;
  values.push_back(v);
  int id = static_cast<int>(values.size()) - 1;
  Op op;
  op.kind = Op::view;
  op.v = id;
  ops.push_back(op);
  return id;
}

size_t Prog::device_items() const {
  size_t n = 0;
  for (const Op& op : ops) n += op.kind == Op::kernel || op.kind == Op::copy || op.kind == Op::upload || op.kind == Op::fill;
  return n;
}

std::string Prog::describe() const {
  std::ostringstream s;
  auto val = [&](int v) {
    const Value& x = values[static_cast<size_t>(v)];
    std::ostringstream t;
    switch (x.src) {
      case Value::input: t << "in" << x.index; break;
      case Value::state: t << "st" << x.index; break;
      case Value::temp: t << "t" << v; break;
      case Value::view: t << "v" << v << "(" << "of " << x.base << "@" << x.off << ")"; break;
    }
    t << "[" << x.count << (x.ty == Ty::f32 ? "f" : x.ty == Ty::i32 ? "i" : "u") << "]";
    if (devices > 1) t << "{dev" << x.dev << "}";
    return t.str();
  };
  s << "seed " << seed << " N=" << N << " M=" << M << (devices > 1 ? " devices=" + std::to_string(devices) : std::string()) << "\n";
  int item = 0;
  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::alloc: s << "      alloc " << val(op.v) << "\n"; break;
      case Op::view: s << "      view " << val(op.v) << "\n"; break;
      case Op::copy: s << "  #" << item++ << " copy " << val(op.v) << " <- " << val(op.src) << "\n"; break;
      case Op::upload: s << "  #" << item++ << " upload " << val(op.v) << "\n"; break;
      case Op::fill: s << "  #" << item++ << " fill " << val(op.v) << " with word " << op.data[0] << "\n"; break;
      case Op::kernel:
        s << "  #" << item++ << " " << kNames[static_cast<int>(op.k)] << "(";
        for (size_t i = 0; i < op.bufs.size(); ++i)
          s << (i ? ", " : "") << val(op.bufs[i]) << (op.acc[i] == encore::Access::out ? ":out" : "");
        s << ") f=" << op.f0 << "," << op.f1 << (op.var_scalar ? " var-scalar" : "") << (op.var_size ? " var-size" : "") << "\n";
        break;
    }
  }
  s << "  outputs:";
  for (int o : outputs) s << " " << val(o);
  s << "\n  host updates:";
  for (const HostEvent& e : events) s << " st" << e.state << "@call" << e.before_call;
  s << "\n  output edits after calls:";
  for (int c : edit_after) s << " " << c;
  if (fb_input >= 0) s << "\n  feedback: input " << fb_input << " = previous call's output " << fb_output;
  if (ring_inputs) s << "\n  inputs are views at other offsets of one ring buffer per input";
  if (free_after >= 0) s << "\n  free_intermediates after call " << free_after;
  if (dup_input) s << "\n  the last input slot is the same buffer as slot 0";
  return s.str();
}

Prog generate(uint64_t seed, const GenOptions& o) {
  Prog p;
  p.seed = seed;
  Gen g(p, seed, o);
  g.run();
  return p;
}

// ---- device ---------------------------------------------------------------------------------------

namespace {

struct Lib {
  encore::Program prog;
  std::array<encore::Kernel, static_cast<size_t>(KId::count_)> k;
};

const Lib& lib_for(const encore::Device& dev, bool foreign) {
  static std::mutex mu;
  static std::map<std::pair<encore::detail::DeviceImpl*, bool>, std::unique_ptr<Lib>> libs;
  std::lock_guard<std::mutex> lock(mu);
  auto& l = libs[{dev.impl(), foreign}];
  if (!l) {
    l = std::make_unique<Lib>();
    l->prog = dev.compile(foreign ? foreign_source() : std::string(kSource));
    for (size_t i = 0; i < l->k.size(); ++i) l->k[i] = l->prog.kernel(kNames[i]);
  }
  return *l;
}

encore::DType dtype(Ty t) { return t == Ty::f32 ? encore::DType::f32 : t == Ty::i32 ? encore::DType::i32 : encore::DType::u32; }

Words read(const encore::Buffer& b) {
  Words w(b.nbytes() / 4);
  b.copyout_bytes(w.data(), b.nbytes());
  return w;
}

struct DevState {
  std::vector<encore::Buffer> states;
  std::vector<encore::Variable> vars;  // sv, len
};

// The devices a program runs on, and each one's kernel library.
struct Devs {
  std::vector<encore::Device> dev;
  std::vector<const Lib*> lib;
  explicit Devs(std::vector<encore::Device> d, bool foreign = false) : dev(std::move(d)) {
    for (const encore::Device& x : dev) lib.push_back(&lib_for(x, foreign));
  }
  const encore::Device& of(int d) const { return dev[static_cast<size_t>(d) % dev.size()]; }
  const Lib& lib_of(int d) const { return *lib[static_cast<size_t>(d) % lib.size()]; }
};

std::vector<encore::Buffer> exec(const Prog& p, const Devs& devs, DevState& st, const std::vector<encore::Buffer>& ins) {
  std::vector<encore::Buffer> val(p.values.size());
  for (size_t i = 0; i < p.input_vals.size(); ++i) val[static_cast<size_t>(p.input_vals[i])] = ins[i];
  for (size_t i = 0; i < p.state_vals.size(); ++i) val[static_cast<size_t>(p.state_vals[i])] = st.states[i];
  for (const Op& op : p.ops) {
    const size_t v = static_cast<size_t>(op.v);
    switch (op.kind) {
      case Op::alloc: val[v] = devs.of(p.values[v].dev).alloc(dtype(p.values[v].ty), static_cast<size_t>(p.values[v].count)); break;
      case Op::view:
        val[v] = val[static_cast<size_t>(p.values[v].base)].view(static_cast<size_t>(p.values[v].off), static_cast<size_t>(p.values[v].count));
        break;
      case Op::copy: devs.of(op.dev).copy(val[v], val[static_cast<size_t>(op.src)]); break;
      case Op::upload: val[v].copyin_bytes(op.data.data(), op.data.size() * 4); break;
      case Op::fill: devs.of(op.dev).fill_bytes(val[v], op.data.data(), 4); break;
      case Op::kernel: {
        std::vector<encore::Arg> args;
        for (size_t i = 0; i < op.bufs.size(); ++i) {
          encore::BufferArg b{val[static_cast<size_t>(op.bufs[i])], op.acc[i]};
          args.emplace_back(b);
        }
        int nf = kinfo(op.k).floats;
        if (nf >= 1) args.emplace_back(op.f0);
        if (nf >= 2) args.emplace_back(op.f1);
        if (op.k == KId::var_add) args.emplace_back(st.vars[0]);
        if (op.k == KId::var_scale) args.emplace_back(st.vars[2]);
        encore::Sizes g = op.var_size ? encore::Sizes{encore::Size(st.vars[1])} : encore::Sizes{encore::Size(op.gsize)};
        devs.of(op.dev).launch_args(devs.lib_of(op.dev).k[static_cast<size_t>(op.k)], g, {}, std::move(args));
        break;
      }
    }
  }
  std::vector<encore::Buffer> outs;
  for (int o : p.outputs) outs.push_back(val[static_cast<size_t>(o)]);
  return outs;
}

// Returned buffers whose storage was created in the step (safe to scribble on between calls).
bool output_is_temp(const Prog& p, int v) {
  const Value& x = p.values[static_cast<size_t>(v)];
  int r = x.src == Value::view ? x.base : v;
  return p.values[static_cast<size_t>(r)].src == Value::temp;
}

}  // namespace

std::string foreign_source() {
  std::string s = kSource;
  const std::string from = "__global const ", to = "__global ";
  for (size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, from.size(), to);
  return s;
}

RunResult run_device(const Prog& p, const encore::Device& dev, const encore::JitOptions* jopt, bool foreign) {
  return run_device(p, std::vector<encore::Device>{dev}, jopt, foreign);
}

RunResult run_device(const Prog& p, const std::vector<encore::Device>& dev_list, const encore::JitOptions* jopt, bool foreign) {
  RunResult res;
  const Devs devs(dev_list, foreign);
  DevState st;
  for (size_t s = 0; s < p.state_vals.size(); ++s) {
    const Value& v = p.values[static_cast<size_t>(p.state_vals[s])];
    encore::Buffer b = devs.of(v.dev).alloc(dtype(v.ty), static_cast<size_t>(v.count));
    b.copyin_bytes(p.state_init[s].data(), p.state_init[s].size() * 4);
    st.states.push_back(b);
  }
  st.vars.push_back(encore::Variable("sv", p.sv_lo, p.sv_hi));
  st.vars.push_back(encore::Variable("len", 1, std::max<int64_t>(p.M, 1)));
  st.vars.push_back(encore::Variable::f32("fv", -4.0, 4.0));
  std::vector<std::vector<encore::Buffer>> sets(kSets);
  std::vector<encore::Buffer> rings;
  const size_t al = static_cast<size_t>(p.align);
  for (size_t i = 0; i < p.input_vals.size() && p.ring_inputs; ++i) {
    const Value& in = p.values[static_cast<size_t>(p.input_vals[i])];
    size_t stride = (static_cast<size_t>(in.count) + al - 1) / al * al;
    rings.push_back(devs.of(in.dev).alloc(encore::DType::f32, stride * kSets + al));
  }
  for (int s = 0; s < kSets; ++s)
    for (size_t i = 0; i < p.input_vals.size(); ++i) {
      size_t count = static_cast<size_t>(p.values[static_cast<size_t>(p.input_vals[i])].count);
      // ring: set s at element align + s * stride, backwards for odd inputs, so offsets differ per call
      size_t stride = (count + al - 1) / al * al, slot = i % 2 ? static_cast<size_t>(kSets - 1 - s) : static_cast<size_t>(s);
      encore::Buffer b = p.ring_inputs ? rings[i].view(al + slot * stride, count)
                                       : devs.of(p.values[static_cast<size_t>(p.input_vals[i])].dev).alloc(encore::DType::f32, count);
      b.copyin_bytes(p.input_sets[static_cast<size_t>(s)][i].data(), p.input_sets[static_cast<size_t>(s)][i].size() * 4);
      sets[static_cast<size_t>(s)].push_back(b);
    }
  auto fn = [&](std::vector<encore::Buffer> ins, std::vector<encore::BoundVar>) { return exec(p, devs, st, ins); };
  std::unique_ptr<encore::TinyJit<decltype(fn)>> jit;
  if (jopt) jit = std::make_unique<encore::TinyJit<decltype(fn)>>(fn, *jopt);
  std::vector<encore::Buffer> prev;
  try {
    for (int c = 0; c < kCalls; ++c) {
      for (const HostEvent& e : p.events)
        if (e.before_call == c) st.states[static_cast<size_t>(e.state)].copyin_bytes(e.data.data(), e.data.size() * 4);
      std::vector<encore::BoundVar> vs;
      if (p.has_sv) vs.push_back(st.vars[0].bind(p.var_vals[static_cast<size_t>(c)].first));
      if (p.has_len) vs.push_back(st.vars[1].bind(p.var_vals[static_cast<size_t>(c)].second));
      if (p.has_fv) vs.push_back(st.vars[2].bind(p.fv_vals[static_cast<size_t>(c)]));
      std::vector<encore::Buffer> ins = sets[static_cast<size_t>(c % kSets)];
      if (p.fb_input >= 0 && c > 0) ins[static_cast<size_t>(p.fb_input)] = prev[static_cast<size_t>(p.fb_output)];
      if (p.dup_input) ins.back() = ins[0];
      std::vector<encore::Buffer> outs = jit ? (*jit)(ins, vs) : fn(ins, vs);
      std::vector<Words> got;
      for (const encore::Buffer& b : outs) got.push_back(read(b));
      res.outs.push_back(std::move(got));
      prev = outs;
      if (jit && c == p.free_after) jit->unit().free_intermediates();
      if (std::find(p.edit_after.begin(), p.edit_after.end(), c) != p.edit_after.end())
        for (size_t i = 0; i < outs.size(); ++i)
          if (output_is_temp(p, p.outputs[i])) {
            Words junk(outs[i].nbytes() / 4, 0x7fc00badu);
            outs[i].copyin_bytes(junk.data(), junk.size() * 4);
          }
    }
    for (const encore::Buffer& b : st.states) res.states.push_back(read(b));
    for (auto& s : sets) {
      res.inputs.emplace_back();
      for (auto& b : s) res.inputs.back().push_back(read(b));
    }
    if (jit && jit->unit()) {
      res.one_time = jit->unit().one_time();
      res.stats = jit->unit().stats();
      res.unit_items = jit->unit().items().size();
    }
  } catch (const std::exception& e) {
    res.error = e.what();
  }
  return res;
}

Prog pair_program(const Prog& p) {
  Prog q = p;
  q.edit_after.clear();
  q.free_after = -1;
  q.fb_input = q.fb_output = -1;
  q.dup_input = false;
  q.ring_inputs = false;
  std::vector<HostEvent> ev;
  for (const HostEvent& e : q.events)
    if (e.before_call % 2 == 0) ev.push_back(e);
  q.events = ev;
  // a returned closure buffer holds the second half's value after a run of the pair: drop it (the
  // final state is still compared)
  std::vector<int> outs;
  for (int o : q.outputs) {
    const Value& v = q.values[static_cast<size_t>(o)];
    if (q.values[static_cast<size_t>(v.src == Value::view ? v.base : o)].src == Value::temp) outs.push_back(o);
  }
  q.outputs = outs;
  return q;
}

RunResult run_device_concat(const Prog& p, const encore::Device& dev, const encore::UnitOptions& opt) {
  RunResult res;
  const Devs devs({dev});
  DevState st;
  for (size_t s = 0; s < p.state_vals.size(); ++s) {
    const Value& v = p.values[static_cast<size_t>(p.state_vals[s])];
    encore::Buffer b = dev.alloc(dtype(v.ty), static_cast<size_t>(v.count));
    b.copyin_bytes(p.state_init[s].data(), p.state_init[s].size() * 4);
    st.states.push_back(b);
  }
  std::vector<std::vector<encore::Buffer>> sets(kSets);
  for (int s = 0; s < kSets; ++s)
    for (size_t i = 0; i < p.input_vals.size(); ++i) {
      const Words& w = p.input_sets[static_cast<size_t>(s)][i];
      encore::Buffer b = dev.alloc(encore::DType::f32, w.size());
      b.copyin_bytes(w.data(), w.size() * 4);
      sets[static_cast<size_t>(s)].push_back(b);
    }
  auto events = [&](int c) {
    for (const HostEvent& e : p.events)
      if (e.before_call == c) st.states[static_cast<size_t>(e.state)].copyin_bytes(e.data.data(), e.data.size() * 4);
  };
  try {
    encore::ExecutionUnit units[2];
    std::vector<encore::Buffer> outs[2];
    for (int c = 0; c < 2; ++c) {
      events(c);
      encore::Capture cap(opt);
      for (const encore::Buffer& b : sets[static_cast<size_t>(c)]) cap.add_input(b);
      outs[c] = exec(p, devs, st, sets[static_cast<size_t>(c)]);
      for (const encore::Buffer& b : outs[c]) cap.add_output(b);
      units[c] = cap.end();
      std::vector<Words> got;
      for (const encore::Buffer& b : outs[c]) got.push_back(read(b));
      res.outs.push_back(std::move(got));
    }
    encore::ExecutionUnit u = units[0] + units[1];
    const size_t nin = p.input_vals.size();
    if (u.num_inputs() != 2 * nin) throw std::runtime_error("concatenation has " + std::to_string(u.num_inputs()) + " inputs, expected " + std::to_string(2 * nin));
    for (int c = 2; c < kCalls; c += 2) {
      events(c);
      for (size_t i = 0; i < nin; ++i) {
        u.bind_input(i, sets[static_cast<size_t>(c % kSets)][i]);
        u.bind_input(nin + i, sets[static_cast<size_t>((c + 1) % kSets)][i]);
      }
      u();
      for (int h = 0; h < 2; ++h) {
        std::vector<Words> got;
        for (const encore::Buffer& b : outs[h]) got.push_back(read(b));
        res.outs.push_back(std::move(got));
      }
    }
    for (const encore::Buffer& b : st.states) res.states.push_back(read(b));
    for (auto& s : sets) {
      res.inputs.emplace_back();
      for (auto& b : s) res.inputs.back().push_back(read(b));
    }
    res.one_time = u.one_time();
    res.stats = u.stats();
    res.unit_items = u.items().size();
  } catch (const std::exception& e) {
    res.error = e.what();
  }
  return res;
}

Prog doubled(const Prog& p) {
  Prog q = p;
  const int nv = static_cast<int>(p.values.size()), nin = static_cast<int>(p.input_vals.size());
  std::vector<int> map(static_cast<size_t>(nv));
  for (int v = 0; v < nv; ++v) {
    const Value& x = p.values[static_cast<size_t>(v)];
    if (x.src == Value::state) {
      map[static_cast<size_t>(v)] = v;
      continue;
    }
    Value y = x;
    if (x.src == Value::input) y.index = nin + x.index;
    if (x.src == Value::view) y.base = map[static_cast<size_t>(x.base)];
    q.values.push_back(y);
    map[static_cast<size_t>(v)] = static_cast<int>(q.values.size()) - 1;
    if (x.src == Value::input) q.input_vals.push_back(map[static_cast<size_t>(v)]);
  }
  for (const Op& op : p.ops) {
    Op o = op;
    if (o.v >= 0) o.v = map[static_cast<size_t>(o.v)];
    if (o.src >= 0) o.src = map[static_cast<size_t>(o.src)];
    for (int& b : o.bufs) b = map[static_cast<size_t>(b)];
    q.ops.push_back(o);
  }
  return q;
}

// ---- host reference ---------------------------------------------------------------------------

RunResult run_host(const Prog& p) {
  RunResult res;
  std::vector<Words> states = p.state_init;
  auto sets = p.input_sets;
  for (int c = 0; c < kCalls; ++c) {
    for (const HostEvent& e : p.events)
      if (e.before_call == c) states[static_cast<size_t>(e.state)] = e.data;
    std::vector<Words> fb_in;
    std::vector<Words>& ins = p.fb_input >= 0 && c > 0 ? fb_in : sets[static_cast<size_t>(c % kSets)];
    if (p.fb_input >= 0 && c > 0) {
      fb_in = sets[static_cast<size_t>(c % kSets)];  // never written by the step (the generator makes sure)
      fb_in[static_cast<size_t>(p.fb_input)] = res.outs.back()[static_cast<size_t>(p.fb_output)];
    }
    std::vector<Words> temps(p.values.size());
    // value -> (storage words, element offset)
    auto at = [&](int v) -> std::pair<Words*, size_t> {
      const Value& x = p.values[static_cast<size_t>(v)];
      int r = v;
      size_t off = 0;
      if (x.src == Value::view) {
        r = x.base;
        off = static_cast<size_t>(x.off);
      }
      const Value& rv = p.values[static_cast<size_t>(r)];
      if (rv.src == Value::input) return {&ins[static_cast<size_t>(rv.index)], off};
      if (rv.src == Value::state) return {&states[static_cast<size_t>(rv.index)], off};
      return {&temps[static_cast<size_t>(r)], off};
    };
    int64_t sv = p.var_vals[static_cast<size_t>(c)].first, len = p.var_vals[static_cast<size_t>(c)].second;
    const float fv = p.fv_vals.empty() ? 0.f : p.fv_vals[static_cast<size_t>(c)];
    for (const Op& op : p.ops) {
      switch (op.kind) {
        case Op::alloc: temps[static_cast<size_t>(op.v)].assign(static_cast<size_t>(p.values[static_cast<size_t>(op.v)].count), 0xdeadbeefu); break;
        case Op::view: break;
        case Op::upload: {
          auto [d, o] = at(op.v);
          std::copy(op.data.begin(), op.data.end(), d->begin() + static_cast<long>(o));
          break;
        }
        case Op::fill: {
          auto [d, o] = at(op.v);
          std::fill_n(d->begin() + static_cast<long>(o), static_cast<size_t>(p.values[static_cast<size_t>(op.v)].count), op.data[0]);
          break;
        }
        case Op::copy: {
          auto [d, od] = at(op.v);
          auto [s, os] = at(op.src);
          size_t n = static_cast<size_t>(p.values[static_cast<size_t>(op.v)].count);
          Words tmp(s->begin() + static_cast<long>(os), s->begin() + static_cast<long>(os + n));
          std::copy(tmp.begin(), tmp.end(), d->begin() + static_cast<long>(od));
          break;
        }
        case Op::kernel: {
          std::vector<std::pair<Words*, size_t>> b;
          for (int v : op.bufs) b.push_back(at(v));
          auto F = [&](size_t k, size_t i) { return f_of((*b[k].first)[b[k].second + i]); };
          auto W = [&](size_t k, size_t i) -> uint32_t& { return (*b[k].first)[b[k].second + i]; };
          size_t n = op.var_size ? static_cast<size_t>(len) : static_cast<size_t>(op.gsize);
          const float m = op.f0, cc = op.f1;
          for (size_t i = 0; i < n; ++i) {
            switch (op.k) {
              case KId::affine: { float t = F(0, i) * m; W(1, i) = w_of(t + cc); break; }
              case KId::add: { float t = F(0, i) * m; W(2, i) = w_of(t + F(1, i)); break; }
              case KId::mulc: {
                float t = F(1, i);
                t = t < -1.5f ? -1.5f : t;
                t = t > 1.5f ? 1.5f : t;
                float u = F(0, i) * t;
                W(2, i) = w_of(u + 0.25f);
                break;
              }
              case KId::max2: { float a = F(0, i), bb = F(1, i); W(2, i) = w_of(a > bb ? a : bb); break; }
              case KId::tern: {
                float s = F(0, i) + F(1, i);
                float h = s * 0.5f;
                float q = F(2, i) * m;
                W(3, i) = w_of(h + q);
                break;
              }
              case KId::sel: { float a = F(0, i), bb = F(1, i), c3 = F(2, i); W(3, i) = w_of(a > bb ? c3 : a - c3); break; }
              case KId::inplace: { float s = F(0, i) * m; float x = F(1, i) * cc; W(0, i) = w_of(s + x); break; }
              case KId::counter: if (i == 0) W(0, 0) = static_cast<uint32_t>(static_cast<int32_t>(W(0, 0)) + 1); break;
              case KId::from_counter: {
                float k = static_cast<float>(static_cast<int32_t>(W(1, 0))) * 0.125f;
                W(2, i) = w_of(F(0, i) + k);
                break;
              }
              case KId::rng: {
                uint32_t x = W(0, i);
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                W(0, i) = x;
                float f = static_cast<float>(x >> 8) * 5.9604644775390625e-8f;
                W(1, i) = w_of(f - 0.5f);
                break;
              }
              case KId::table: {
                float t = F(0, i) * m;
                float k = static_cast<float>(i & 7) * 0.125f;
                W(1, i) = w_of(t + k);
                break;
              }
              case KId::var_add: { float k = static_cast<float>(static_cast<int>(sv)) * 0.5f; W(1, i) = w_of(F(0, i) + k); break; }
              case KId::vprefix: { float s = F(0, i) * m; W(0, i) = w_of(s + F(1, i)); break; }
              case KId::var_scale: { float s = F(0, i) * fv; W(1, i) = w_of(s + 0.5f); break; }
              case KId::count_: break;
            }
          }
          break;
        }
      }
    }
    std::vector<Words> got;
    for (int o : p.outputs) {
      auto [d, off] = at(o);
      size_t n = static_cast<size_t>(p.values[static_cast<size_t>(o)].count);
      got.emplace_back(d->begin() + static_cast<long>(off), d->begin() + static_cast<long>(off + n));
    }
    res.outs.push_back(std::move(got));
  }
  res.states = states;
  res.inputs = sets;
  return res;
}

std::string compare(const Prog& p, const RunResult& e, const RunResult& g, const char* en, const char* gn) {
  std::ostringstream s;
  if (!e.error.empty()) return std::string(en) + " threw: " + e.error;
  if (!g.error.empty()) return std::string(gn) + " threw: " + g.error;
  auto diff = [&](const Words& a, const Words& b, const std::string& what) -> bool {
    if (a == b) return false;
    if (a.size() != b.size()) {
      s << what << ": sizes differ (" << a.size() << " vs " << b.size() << ")";
      return true;
    }
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) {
        s << what << " element " << i << ": " << en << " " << f_of(a[i]) << " (0x" << std::hex << a[i] << "), " << gn << " " << f_of(b[i])
          << " (0x" << b[i] << std::dec << ")";
        return true;
      }
    return false;
  };
  if (e.outs.size() != g.outs.size()) return "different number of calls";
  for (size_t c = 0; c < e.outs.size(); ++c)
    for (size_t o = 0; o < e.outs[c].size(); ++o)
      if (diff(e.outs[c][o], g.outs[c][o], "call " + std::to_string(c) + " output " + std::to_string(o))) return s.str();
  for (size_t i = 0; i < e.states.size(); ++i)
    if (diff(e.states[i], g.states[i], "final state st" + std::to_string(i))) return s.str();
  for (size_t k = 0; k < e.inputs.size(); ++k)
    for (size_t i = 0; i < e.inputs[k].size(); ++i)
      if (diff(e.inputs[k][i], g.inputs[k][i], "final input set " + std::to_string(k) + " in" + std::to_string(i))) return s.str();
  (void)p;
  return {};
}

// ---- structure ------------------------------------------------------------------------------------

std::vector<RefItem> reference_items(const Prog& p) {
  const int nin = static_cast<int>(p.input_vals.size()), nst = static_cast<int>(p.state_vals.size());
  auto storage = [&](int v, uint64_t* lo, uint64_t* hi) {
    const Value& x = p.values[static_cast<size_t>(v)];
    int r = x.src == Value::view ? x.base : v;
    uint64_t off = x.src == Value::view ? static_cast<uint64_t>(x.off) * 4 : 0;
    *lo = off;
    *hi = off + static_cast<uint64_t>(x.count) * 4;
    const Value& rv = p.values[static_cast<size_t>(r)];
    if (rv.src == Value::input) return rv.index;
    if (rv.src == Value::state) return nin + rv.index;
    return nin + nst + r;
  };
  std::vector<RefItem> items;
  std::map<int, size_t> first_item;  // storage -> first item touching it
  for (const Op& op : p.ops) {
    if (op.kind == Op::alloc || op.kind == Op::view) continue;
    RefItem it;
    auto add = [&](int v, bool read, bool write) {
      RefAccess a{};
      a.storage = storage(v, &a.lo, &a.hi);
      a.read = read;
      a.write = write;
      it.acc.push_back(a);
      if (a.storage < nin) it.touches_input = true;
    };
    if (op.kind == Op::copy) {
      add(op.src, true, false);
      add(op.v, false, true);
    } else if (op.kind == Op::upload || op.kind == Op::fill) {
      add(op.v, false, true);
    } else {
      const KInfo& ki = kinfo(op.k);
      for (size_t i = 0; i < op.bufs.size(); ++i) {
        encore::Access a = op.acc[i];
        if (a == encore::Access::none) a = ki.const_buf[i] ? encore::Access::in : encore::Access::inout;
        add(op.bufs[i], a == encore::Access::in || a == encore::Access::inout, a == encore::Access::out || a == encore::Access::inout);
      }
      it.uses_variable = op.var_scalar || op.var_size;
    }
    size_t idx = items.size();
    for (RefAccess& a : it.acc) {
      if (a.storage < nin + nst) continue;  // only storage created in the step is fresh
      auto f = first_item.find(a.storage);
      if (f == first_item.end() || f->second == idx) {
        first_item[a.storage] = idx;
        if (a.write) a.read = false;  // first access to fresh storage: a pure write
      }
    }
    items.push_back(std::move(it));
  }
  return items;
}

std::vector<bool> reference_one_time(const std::vector<RefItem>& items) {
  const size_t n = items.size();
  std::vector<bool> one(n);
  for (size_t i = 0; i < n; ++i) one[i] = !items[i].touches_input && !items[i].uses_variable;  // (a)
  auto overlaps = [](const RefAccess& a, const RefAccess& b) { return a.storage == b.storage && a.lo < b.hi && b.lo < a.hi; };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (!one[i]) continue;
      bool ok = true;
      for (const RefAccess& a : items[i].acc)
        for (size_t j = 0; j < n && ok; ++j)
          for (const RefAccess& b : items[j].acc) {
            if (!b.write || !overlaps(a, b)) continue;
            if (a.read && (j >= i || !one[j])) ok = false;  // (b): every writer of what it reads is one-time and earlier
            if (a.write && j != i) ok = false;              // (c): the only writer of what it writes
          }
      if (!ok) {
        one[i] = false;
        changed = true;
      }
    }
  }
  return one;
}

bool has_loop_carried(const Prog& p, const std::vector<RefItem>& items) {
  const int closure_end = static_cast<int>(p.input_vals.size() + p.state_vals.size());
  for (size_t i = 0; i < items.size(); ++i)
    for (const RefAccess& a : items[i].acc) {
      if (!a.read || a.storage >= closure_end) continue;
      for (size_t j = i + 1; j < items.size(); ++j)
        for (const RefAccess& b : items[j].acc)
          if (b.write && b.storage == a.storage && a.lo < b.hi && b.lo < a.hi) return true;
    }
  return false;
}

}  // namespace prop
