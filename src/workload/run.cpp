// encore-bench `run`: the same calls eagerly and through TinyJit from the same initial state,
// compared call by call, then both timed (each timed call waits for the device).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <span>
#include <unistd.h>

#include "workload/reader.hpp"
#include "workload/runner.hpp"

namespace encore::workload {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// CPU time of the calling thread in µs (what Google Benchmark reports as cpu_time).
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One progress line on stderr, redrawn at most 10 times a second.
struct Progress {
  bool on = false;
  Clock::time_point last{};
  bool drawn = false;
  void show(const char* phase, int i, int n) {
    if (!on || Clock::now() - last < std::chrono::milliseconds(100)) return;
    last = Clock::now();
    std::fprintf(stderr, "\r\033[K%s %d/%d", phase, i, n);
    std::fflush(stderr);
    drawn = true;
  }
  void clear() {
    if (drawn) std::fprintf(stderr, "\r\033[K"), std::fflush(stderr);
    drawn = false;
  }
};

std::vector<unsigned char> read_back(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  b.copyout_bytes(v.data(), v.size());
  return v;
}

struct Checker {
  Tolerance tol;
  Report& r;
  void check(const std::string& where, const BufferSpec& s, const std::vector<unsigned char>& eager, const std::vector<unsigned char>& jit) {
    Diff d = compare(s.dtype, eager.data(), jit.data(), s.count, tol);
    if (d.count == 0) return;
    if (r.mismatches == 0) {
      size_t off = d.first * size(s.dtype);
      r.first_mismatch = where + ", buffer " + quote(s.name) + ", index " + std::to_string(d.first) + ": eager " +
                         format_element(s.dtype, eager.data() + off) + ", jit " + format_element(s.dtype, jit.data() + off);
    }
    r.mismatches += d.count;
  }
};

void dump(const std::filesystem::path& dir, const std::string& name, const std::vector<unsigned char>& bytes) {
  std::ofstream f(dir / (name + ".bin"), std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error("--dump: cannot write " + (dir / (name + ".bin")).string());
}

}  // namespace

// "shape set 1 (n = 128)"
std::string describe_set(const Workload& w, size_t k) {
  std::string d = "shape set " + std::to_string(k) + " (";
  for (size_t i = 0; i < w.shape_names.size(); ++i) d += (i ? ", " : "") + w.shape_names[i] + " = " + std::to_string(w.shape_values[i][k]);
  return d + ")";
}

std::vector<Compiled> validate_sets(const Workload& w, const Device& dev) {
  std::vector<Compiled> cs;
  if (w.sets.empty()) cs.push_back(validate(w, dev));
  for (size_t k = 0; k < w.sets.size(); ++k) try {
      cs.push_back(validate(w.sets[k], dev));
    } catch (const WorkloadError& e) {
      throw WorkloadError(e.path(), e.message() + " [in " + describe_set(w, k) + "]");
    }
  return cs;
}

namespace {

// The shape sets (one without "shapes"): one TinyJit runs them all, a unit per set, the calls
// interleaved: call i runs set i % K with input rotation (i / K) % R.
std::vector<const Workload*> shape_sets(const Workload& w, const RunOptions& opt) {
  if (opt.calls < 1) throw ArgumentError("calls must be at least 1");
  if (opt.rotate < 1) throw ArgumentError("rotate must be at least 1");
  std::vector<const Workload*> ws;
  if (w.sets.empty()) ws.push_back(&w);
  else
    for (const Workload& s : w.sets) ws.push_back(&s);
  const size_t K = ws.size();
  if (K > 1 && size_t(opt.calls) < 3 * K)
    throw ArgumentError("--calls " + std::to_string(opt.calls) + " is too few for " + std::to_string(K) +
                        " shape sets: each needs 3 calls (warm-up, capture, replay), so at least " + std::to_string(3 * K));
  if (K > 1 && opt.jit.enabled && K > opt.jit.max_units)
    throw ArgumentError(std::to_string(K) + " shape sets need a jit that keeps " + std::to_string(K) + " units; max_units is " +
                        std::to_string(opt.jit.max_units));
  return ws;
}

// What the phases of run share: the shape sets with their runners, and which inputs call i uses.
struct Bench {
  const Workload& w;
  const Device& dev;
  const RunOptions& opt;
  const std::vector<const Workload*> ws;
  const size_t K, n, rot;
  const int warmup, timed;
  // The NULL device runs nothing: its buffers hold whatever memory held, so there is nothing to
  // compare (it measures encore's own overhead).
  const bool compared;
  const std::vector<Compiled> cs;  // the runners refer to them
  std::vector<std::unique_ptr<Runner>> runners;
  Progress progress;

  Bench(const Workload& w_, const Device& dev_, const RunOptions& opt_)
      : w(w_), dev(dev_), opt(opt_), ws(shape_sets(w_, opt_)), K(ws.size()), n(static_cast<size_t>(opt_.calls)),
        rot(static_cast<size_t>(opt_.rotate)), warmup(K > 1 ? int(K) : 2), timed(std::max(opt_.calls, 5 * int(K))),
        compared(!dev_.is_null()), cs(validate_sets(w_, dev_)), progress{opt_.progress} {
    for (size_t k = 0; k < K; ++k) runners.push_back(std::make_unique<Runner>(*ws[k], dev, cs[k], opt, k ? &runners[0]->variables() : nullptr));
  }
  World make_world() const {
    World world;
    world.resident = runners[0]->make_resident();
    for (const auto& rn : runners) world.input_sets.push_back(rn->make_inputs());
    return world;
  }
  const std::vector<Buffer>& inputs(const World& world, size_t i) const { return world.input_sets[i % K][(i / K) % rot]; }
  std::string where(size_t i) const { return "call " + std::to_string(i) + (K > 1 ? " (" + describe_set(w, i % K) + ")" : std::string()); }
};

using Outputs = std::vector<std::vector<unsigned char>>;

// The run as the report names it, before any figure.
Report start_report(const Bench& b) {
  Report r;
  r.name = b.w.name;
  r.device = b.dev.id() + " (" + b.dev.info().name + ")";
  r.calls = b.opt.calls;
  r.rotate = b.opt.rotate;
  r.prune = b.opt.jit.unit.prune;
  r.concurrent = b.opt.jit.unit.concurrent;
  r.plan = b.opt.jit.unit.plan;
  r.items = b.w.step.size();
  r.compared = b.compared;
  return r;
}

// 1. The eager reference: every call's outputs, kept for the jit's to be compared with.
std::vector<Outputs> eager_reference(Bench& b, World& ew) {
  std::vector<Outputs> expect(b.n);
  for (size_t i = 0; i < b.n; ++i) {
    b.progress.show("eager", static_cast<int>(i), b.opt.calls);
    b.runners[i % b.K]->bind(i);
    for (const Buffer& out : b.runners[i % b.K]->step(ew, b.inputs(ew, i), b.runners[i % b.K]->host(i)))
      if (b.compared) expect[i].push_back(read_back(out));
  }
  return expect;
}

struct JitSide;
// The step as the jit sees it: the runner of the set in progress, on the jit side's world.
struct JitStep {
  JitSide* side;
  std::vector<Buffer> operator()(const std::vector<Buffer>& ins, const std::vector<std::span<const unsigned char>>& host,
                                 const std::vector<BoundVar>&) const;
};

// The jit side, from its own world: one TinyJit over every set's step; a set's second call
// captures its unit, and is timed to the device's end as its capture time.
struct JitSide {
  Bench& b;
  World jw;
  size_t cur = 0;  // the shape set of the call in progress
  TinyJit<JitStep> jit;
  std::vector<size_t> set_calls;
  std::vector<double> capture_ms;

  explicit JitSide(Bench& b_) : b(b_), jw(b_.make_world()), jit(JitStep{this}, b_.opt.jit), set_calls(b_.K, 0), capture_ms(b_.K, 0) {}
  JitSide(const JitSide&) = delete;  // the jit's step points here

  std::vector<Buffer> call(size_t i) {
    cur = i % b.K;
    std::vector<BoundVar> vals = b.runners[cur]->bind(i);
    const bool capturing = set_calls[cur]++ == 1;
    auto t0 = Clock::now();
    std::vector<Buffer> outs = jit(b.inputs(jw, i), b.runners[cur]->host(i), vals);
    if (capturing) {
      b.dev.synchronize();
      capture_ms[cur] = us_since(t0) / 1000;
    }
    return outs;
  }
};

std::vector<Buffer> JitStep::operator()(const std::vector<Buffer>& ins, const std::vector<std::span<const unsigned char>>& host,
                                        const std::vector<BoundVar>&) const {
  return side->b.runners[side->cur]->step(side->jw, ins, host);
}

// 2. The same calls through TinyJit, from the same initial state, each call's outputs compared;
// the last call's outputs are kept for --dump.
Outputs compare_calls(Bench& b, JitSide& j, const std::vector<Outputs>& expect, Checker& checker) {
  Outputs last;
  for (size_t i = 0; i < b.n; ++i) {
    b.progress.show("jit", static_cast<int>(i), b.opt.calls);
    const std::vector<Buffer> outs = j.call(i);
    if (b.opt.after_jit_call) b.opt.after_jit_call(i, outs);
    last.clear();
    for (size_t k = 0; k < outs.size() && b.compared; ++k) {
      last.push_back(read_back(outs[k]));
      checker.check(b.where(i), b.ws[i % b.K]->buffers[b.runners[i % b.K]->outputs()[k]], expect[i][k], last.back());
    }
  }
  return last;
}

// What both sides leave behind: the state buffers and every input set (a step may write its inputs).
void compare_final(const Bench& b, const World& ew, const World& jw, Checker& checker) {
  for (size_t k = 0; k < b.w.buffers.size() && b.compared; ++k)
    if (b.w.buffers[k].role == Role::state) checker.check("final state", b.w.buffers[k], read_back(ew.resident[k]), read_back(jw.resident[k]));
  for (size_t set = 0; set < b.K && b.compared; ++set)
    for (size_t k = 0; k < b.runners[set]->inputs().size(); ++k)
      for (size_t s = 0; s < b.rot; ++s)
        checker.check("final state (input set " + std::to_string(s) + (b.K > 1 ? " of " + describe_set(b.w, set) : std::string()) + ")",
                      b.ws[set]->buffers[b.runners[set]->inputs()[k]], read_back(ew.input_sets[set][s][k]), read_back(jw.input_sets[set][s][k]));
}

// --dump: the jit side's final state and its last call's outputs, a file each.
void dump_all(const Bench& b, const World& jw, const Outputs& last) {
  std::filesystem::create_directories(b.opt.dump_dir);
  for (size_t k = 0; k < b.w.buffers.size(); ++k)
    if (b.w.buffers[k].role == Role::state) dump(b.opt.dump_dir, b.w.buffers[k].name, read_back(jw.resident[k]));
  for (size_t k = 0; k < last.size(); ++k) dump(b.opt.dump_dir, b.w.buffers[b.runners[(b.n - 1) % b.K]->outputs()[k]].name, last[k]);
}

// 3. Timing: the calls after the compared ones, the sets interleaved as before, warm-up calls
// first; `call` ends when the device is done, `prepare` runs untimed. Per set and over all; returns
// the calling thread's CPU time per timed call.
template <class Prepare, class Call>
double time_calls(Bench& b, const char* phase, Prepare&& prepare, Call&& call, std::vector<std::vector<double>>& per_set,
                  std::vector<double>& all) {
  double cpu0 = 0;
  for (int k = 0; k < b.warmup + b.timed; ++k) {
    b.progress.show(phase, k, b.warmup + b.timed);
    if (k == b.warmup) cpu0 = thread_cpu_us();
    size_t i = b.n + static_cast<size_t>(k);
    prepare(i);
    auto t0 = Clock::now();
    call(i);
    if (k >= b.warmup) per_set[i % b.K].push_back(us_since(t0)), all.push_back(per_set[i % b.K].back());
  }
  return (thread_cpu_us() - cpu0) / b.timed;
}

// Each set's figures and its unit's counts, the unit found by the set's inputs (the jit keys its
// units by them); the report's own counts are set 0's.
void set_reports(const Bench& b, JitSide& j, const std::vector<std::vector<double>>& te, const std::vector<std::vector<double>>& tj, Report& r) {
  for (size_t k = 0; k < b.K; ++k) {
    const ExecutionUnit* u = j.jit.unit_for(j.jw.input_sets[k][0], b.runners[k]->host(0), b.runners[k]->bind(0));
    SetReport sr;
    if (b.K > 1) sr.shape = describe_set(b.w, k);
    sr.eager_step_us = median(te[k]);
    sr.replay_step_us = median(tj[k]);
    sr.speedup = sr.replay_step_us > 0 ? sr.eager_step_us / sr.replay_step_us : 0;
    sr.capture_ms = j.capture_ms[k];
    if (u && *u) {
      const UnitStats& st = u->stats();
      sr.items_pruned = st.items_pruned;
      sr.temp_bytes_naive = st.temp_bytes_naive;
      sr.temp_bytes_planned = st.temp_bytes_planned;
      sr.temp_bytes_lower_bound = st.temp_bytes_lower_bound;
      sr.planned_temps = st.planned_temps;
    }
    if (k == 0) {
      r.items_pruned = sr.items_pruned;
      if (u && *u) {
        r.chains = u->stats().chains;
        r.longest_chain = u->stats().longest_chain;
      }
      r.items_replayed = r.items - std::min(r.items, sr.items_pruned);
      r.temp_bytes_naive = sr.temp_bytes_naive;
      r.temp_bytes_planned = sr.temp_bytes_planned;
      r.temp_bytes_lower_bound = sr.temp_bytes_lower_bound;
      r.planned_temps = sr.planned_temps;
    }
    if (b.K > 1) r.sets.push_back(sr);
  }
}

}  // namespace

Report run(const Workload& w, const Device& dev, const RunOptions& opt) {
  Bench b(w, dev, opt);
  Report r = start_report(b);
  Checker checker{Tolerance{w.bitwise(), w.rtol, w.atol}, r};
  World ew = b.make_world();
  std::vector<Outputs> expect = eager_reference(b, ew);
  JitSide j(b);
  const Outputs last = compare_calls(b, j, expect, checker);
  compare_final(b, ew, j.jw, checker);
  if (!opt.dump_dir.empty()) dump_all(b, j.jw, last);
  expect.clear();

  r.timed_calls = b.timed;
  std::vector<std::vector<double>> te(b.K), tj(b.K);
  std::vector<double> te_all, tj_all;
  r.eager_cpu_us = time_calls(
      b, "timing eager", [&](size_t i) { b.runners[i % b.K]->bind(i); },
      [&](size_t i) {
        std::vector<Buffer> outs = b.runners[i % b.K]->step(ew, b.inputs(ew, i), b.runners[i % b.K]->host(i));
        dev.synchronize();
      },
      te, te_all);
  // the jit captures here only when --calls is too few for it to have happened above
  r.replay_cpu_us = time_calls(
      b, "timing jit", [](size_t) {},
      [&](size_t i) {
        j.call(i);
        dev.synchronize();
      },
      tj, tj_all);
  b.progress.clear();
  r.eager_step_us = median(te_all);
  r.replay_step_us = median(tj_all);
  r.speedup = r.replay_step_us > 0 ? r.eager_step_us / r.replay_step_us : 0;
  r.eager_item_us = r.eager_step_us / static_cast<double>(r.items);
  r.replay_item_us = r.replay_step_us / static_cast<double>(r.items);
  r.capture_ms = j.capture_ms[0];
  r.items_replayed = r.items;
  set_reports(b, j, te, tj, r);
  return r;
}

}  // namespace encore::workload
