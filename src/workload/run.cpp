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

Report run(const Workload& w, const Device& dev, const RunOptions& opt) {
  if (opt.calls < 1) throw ArgumentError("calls must be at least 1");
  if (opt.rotate < 1) throw ArgumentError("rotate must be at least 1");
  // The shape sets (one without "shapes"): one TinyJit runs them all, a unit per set, the calls
  // interleaved: call i runs set i % K with input rotation (i / K) % R.
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
  const std::vector<Compiled> cs = validate_sets(w, dev);
  std::vector<std::unique_ptr<Runner>> runners;
  for (size_t k = 0; k < K; ++k) runners.push_back(std::make_unique<Runner>(*ws[k], dev, cs[k], opt, k ? &runners[0]->variables() : nullptr));
  Report r;
  r.name = w.name;
  r.device = dev.id() + " (" + dev.info().name + ")";
  r.calls = opt.calls;
  r.rotate = opt.rotate;
  r.prune = opt.jit.unit.prune;
  r.plan = opt.jit.unit.plan;
  r.items = w.step.size();
  Progress progress{opt.progress};
  Checker checker{Tolerance{w.bitwise(), w.rtol, w.atol}, r};
  // The NULL device runs nothing: its buffers hold whatever memory held, so there is nothing to
  // compare (it measures encore's own overhead).
  const bool compared = !dev.is_null();
  r.compared = compared;
  const size_t n = static_cast<size_t>(opt.calls), rot = static_cast<size_t>(opt.rotate);
  auto make_world = [&] {
    World world;
    world.resident = runners[0]->make_resident();
    for (const auto& rn : runners) world.input_sets.push_back(rn->make_inputs());
    return world;
  };
  auto inputs = [&](const World& world, size_t i) -> const std::vector<Buffer>& { return world.input_sets[i % K][(i / K) % rot]; };
  auto where = [&](size_t i) { return "call " + std::to_string(i) + (K > 1 ? " (" + describe_set(w, i % K) + ")" : std::string()); };

  // 1. eager reference, outputs kept per call
  World ew = make_world();
  std::vector<std::vector<std::vector<unsigned char>>> expect(n);
  for (size_t i = 0; i < n; ++i) {
    progress.show("eager", static_cast<int>(i), opt.calls);
    runners[i % K]->bind(i);
    for (const Buffer& b : runners[i % K]->step(ew, inputs(ew, i), runners[i % K]->host(i)))
      if (compared) expect[i].push_back(read_back(b));
  }

  // 2. the same calls through TinyJit, from the same initial state
  World jw = make_world();
  size_t cur = 0;  // the shape set of the call in progress
  auto fn = [&runners, &jw, &cur](const std::vector<Buffer>& ins, const std::vector<std::span<const unsigned char>>& host,
                                  const std::vector<BoundVar>&) { return runners[cur]->step(jw, ins, host); };
  TinyJit jit(fn, opt.jit);
  std::vector<size_t> set_calls(K, 0);
  std::vector<double> capture_ms(K, 0);
  std::vector<std::vector<unsigned char>> last;
  auto jit_call = [&](size_t i) {
    cur = i % K;
    std::vector<BoundVar> vals = runners[cur]->bind(i);
    const bool capturing = set_calls[cur]++ == 1;  // a set's second call captures its unit
    auto t0 = Clock::now();
    std::vector<Buffer> outs = jit(inputs(jw, i), runners[cur]->host(i), vals);
    if (capturing) {
      dev.synchronize();
      capture_ms[cur] = us_since(t0) / 1000;
    }
    return outs;
  };
  for (size_t i = 0; i < n; ++i) {
    progress.show("jit", static_cast<int>(i), opt.calls);
    const std::vector<Buffer> outs = jit_call(i);
    if (opt.after_jit_call) opt.after_jit_call(i, outs);
    last.clear();
    for (size_t k = 0; k < outs.size() && compared; ++k) {
      last.push_back(read_back(outs[k]));
      checker.check(where(i), ws[i % K]->buffers[runners[i % K]->outputs()[k]], expect[i][k], last.back());
    }
  }
  for (size_t b = 0; b < w.buffers.size() && compared; ++b)
    if (w.buffers[b].role == Role::state) checker.check("final state", w.buffers[b], read_back(ew.resident[b]), read_back(jw.resident[b]));
  for (size_t set = 0; set < K && compared; ++set)
    for (size_t k = 0; k < runners[set]->inputs().size(); ++k)
      for (size_t s = 0; s < rot; ++s)
        checker.check("final state (input set " + std::to_string(s) + (K > 1 ? " of " + describe_set(w, set) : std::string()) + ")",
                      ws[set]->buffers[runners[set]->inputs()[k]], read_back(ew.input_sets[set][s][k]), read_back(jw.input_sets[set][s][k]));
  if (!opt.dump_dir.empty()) {
    std::filesystem::create_directories(opt.dump_dir);
    for (size_t b = 0; b < w.buffers.size(); ++b)
      if (w.buffers[b].role == Role::state) dump(opt.dump_dir, w.buffers[b].name, read_back(jw.resident[b]));
    for (size_t k = 0; k < last.size(); ++k) dump(opt.dump_dir, w.buffers[runners[(n - 1) % K]->outputs()[k]].name, last[k]);
  }
  expect.clear();

  // 3. timing: both continue from where they are, the sets interleaved as before; each timed call
  // ends when the device is done
  const int warmup = K > 1 ? int(K) : 2, timed = std::max(opt.calls, 5 * int(K));
  r.timed_calls = timed;
  std::vector<std::vector<double>> te(K), tj(K);
  std::vector<double> te_all, tj_all;
  double cpu0 = 0;
  for (int k = 0; k < warmup + timed; ++k) {
    progress.show("timing eager", k, warmup + timed);
    if (k == warmup) cpu0 = thread_cpu_us();
    size_t i = n + static_cast<size_t>(k);
    runners[i % K]->bind(i);
    auto t0 = Clock::now();
    std::vector<Buffer> outs = runners[i % K]->step(ew, inputs(ew, i), runners[i % K]->host(i));
    dev.synchronize();
    if (k >= warmup) te[i % K].push_back(us_since(t0)), te_all.push_back(te[i % K].back());
  }
  r.eager_cpu_us = (thread_cpu_us() - cpu0) / timed;
  for (int k = 0; k < warmup + timed; ++k) {
    progress.show("timing jit", k, warmup + timed);
    if (k == warmup) cpu0 = thread_cpu_us();
    size_t i = n + static_cast<size_t>(k);
    auto t0 = Clock::now();
    jit_call(i);  // captures here only when --calls is too few for it to have happened above
    dev.synchronize();
    if (k >= warmup) tj[i % K].push_back(us_since(t0)), tj_all.push_back(tj[i % K].back());
  }
  r.replay_cpu_us = (thread_cpu_us() - cpu0) / timed;
  progress.clear();
  r.eager_step_us = median(te_all);
  r.replay_step_us = median(tj_all);
  r.speedup = r.replay_step_us > 0 ? r.eager_step_us / r.replay_step_us : 0;
  r.eager_item_us = r.eager_step_us / static_cast<double>(r.items);
  r.replay_item_us = r.replay_step_us / static_cast<double>(r.items);
  r.capture_ms = capture_ms[0];
  r.items_replayed = r.items;
  // each set's unit, found by its inputs (the jit keys its units by them)
  for (size_t k = 0; k < K; ++k) {
    const ExecutionUnit* u = jit.unit_for(jw.input_sets[k][0], runners[k]->host(0), runners[k]->bind(0));
    SetReport sr;
    if (K > 1) sr.shape = describe_set(w, k);
    sr.eager_step_us = median(te[k]);
    sr.replay_step_us = median(tj[k]);
    sr.speedup = sr.replay_step_us > 0 ? sr.eager_step_us / sr.replay_step_us : 0;
    sr.capture_ms = capture_ms[k];
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
      r.items_replayed = r.items - std::min(r.items, sr.items_pruned);
      r.temp_bytes_naive = sr.temp_bytes_naive;
      r.temp_bytes_planned = sr.temp_bytes_planned;
      r.temp_bytes_lower_bound = sr.temp_bytes_lower_bound;
      r.planned_temps = sr.planned_temps;
    }
    if (K > 1) r.sets.push_back(sr);
  }
  return r;
}

}  // namespace encore::workload
