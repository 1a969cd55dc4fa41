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

// Buffers that live across calls in one run (eager or jit): state and const buffers, and the
// input sets. Each run gets its own, initialised identically.
struct World {
  std::vector<Buffer> resident;                                // per workload buffer; null unless state/const
  std::vector<std::vector<std::vector<Buffer>>> input_sets;    // [shape set][rotation][k]: used inputs, in declaration order
};

class Runner {
 public:
  // `vars`: the Variables of another shape set's runner (all sets share them), else made here.
  Runner(const Workload& w, const Device& dev, const Compiled& c, const RunOptions& opt, const std::vector<Variable>* vars = nullptr)
      : w_(w), dev_(dev), c_(c), opt_(opt) {
    if (vars) vars_ = *vars;
    else
      for (const VariableSpec& v : w.variables)
        vars_.push_back(v.type == VarType::i64   ? Variable(v.name, v.min, v.max)
                        : v.type == VarType::f32 ? Variable::f32(v.name, v.fmin, v.fmax)
                                                 : Variable::f64(v.name, v.fmin, v.fmax));
    std::vector<bool> used_buf(w.buffers.size()), used_var(w.variables.size());
    for (size_t i = 0; i < w.step.size(); ++i) {
      const ItemSpec& it = w.step[i];
      if (it.kind == ItemSpec::Kind::copy) {
        used_buf[it.src] = used_buf[it.dst] = true;
        templates_.emplace_back();
        host_off_.emplace_back();
        globals_.emplace_back();
        locals_.emplace_back();
        continue;
      }
      auto sizes = [&](const std::vector<SizeExpr>& e) {
        Sizes s;
        s.n = static_cast<uint8_t>(e.size());
        for (size_t d = 0; d < e.size(); ++d) {
          if (e[d].var >= 0) used_var[e[d].var] = true;
          for (int k : e[d].vars) used_var[k] = true;
          s.v[d] = !e[d].expr.empty() ? Size::parse(e[d].expr, vars_) : e[d].var < 0 ? Size(e[d].add) : Size(vars_[e[d].var], e[d].mul, e[d].add);
        }
        return s;
      };
      globals_.push_back(sizes(it.global));
      locals_.push_back(sizes(it.local));
      std::vector<Arg> args;
      host_off_.emplace_back(it.args.size(), -1);
      for (const ArgSpec& a : it.args) switch (a.kind) {
          case ArgSpec::Kind::buffer:
            used_buf[a.buffer] = true;
            args.emplace_back(BufferArg{Buffer(), a.access});
            break;
          case ArgSpec::Kind::scalar: {
            Arg x(int32_t(0));
            x.dtype = a.dtype;
            x.bits = a.bits;
            args.push_back(x);
            break;
          }
          case ArgSpec::Kind::variable:
            used_var[a.variable] = true;
            args.emplace_back(a.as_given ? Arg(vars_[a.variable].as(a.dtype)) : Arg(vars_[a.variable]));
            break;
          case ArgSpec::Kind::local: args.emplace_back(LocalMem{a.local_bytes}); break;
          case ArgSpec::Kind::bytes:
            if (!a.per_call.empty()) {  // its place in the call's host input
              host_off_.back()[args.size()] = static_cast<int64_t>(host_.size());
              host_.resize(host_.size() + a.bytes.size());
            }
            args.emplace_back(encore::bytes(a.bytes.data(), a.bytes.size()));
            break;
        }
      templates_.push_back(std::move(args));
    }
    for (size_t b = 0; b < w.buffers.size(); ++b) {
      if (w.buffers[b].role == Role::input && used_buf[b]) inputs_.push_back(static_cast<int>(b));
      if (w.buffers[b].role == Role::output) outputs_.push_back(static_cast<int>(b));
    }
    // Only variables some item uses are passed to the jit: a capture knows no others.
    for (size_t v = 0; v < vars_.size(); ++v)
      if (used_var[v]) used_vars_.push_back(static_cast<int>(v));
  }

  Buffer make(size_t b, uint64_t set) const {
    const BufferSpec& s = w_.buffers[b];
    // its initial contents are generated in host memory first: more than the host has is the
    // file's error, said before trying (a bare std::bad_alloc, or the OOM killer, otherwise)
    const double bytes = static_cast<double>(s.count) * static_cast<double>(size(s.dtype));
    const double host = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    auto too_large = [&] {
      return WorkloadError("buffers." + s.name + ".count", std::to_string(s.count) + " x " + std::string(name(s.dtype)) + " = " +
                                                               std::to_string(static_cast<uint64_t>(bytes)) + " bytes of initial contents " +
                                                               "do not fit in this host's memory (" + std::to_string(static_cast<uint64_t>(host)) + " bytes)");
    };
    if (host > 0 && bytes > host) throw too_large();
    try {
      Buffer buf = dev_.alloc(s.dtype, s.count);
      buf.set_name(s.name);
      buf.copyin_bytes(initial_bytes(w_, b, set).data(), buf.nbytes());
      return buf;
    } catch (const std::bad_alloc&) {
      throw too_large();
    }
  }

  std::vector<Buffer> make_resident() const {
    std::vector<Buffer> r(w_.buffers.size());
    for (size_t b = 0; b < w_.buffers.size(); ++b)
      if (w_.buffers[b].role == Role::state || w_.buffers[b].role == Role::const_) r[b] = make(b, 0);
    return r;
  }

  // --rotate input sets of this shape set's sizes
  std::vector<std::vector<Buffer>> make_inputs() const {
    std::vector<std::vector<Buffer>> sets(static_cast<size_t>(opt_.rotate));
    for (int k = 0; k < opt_.rotate; ++k)
      for (int b : inputs_) sets[k].push_back(make(b, static_cast<uint64_t>(k)));
    return sets;
  }

  // Makes call i's variable values current; returns them for a TinyJit call.
  std::vector<BoundVar> bind(size_t i) const {
    std::vector<BoundVar> out;
    for (int v : used_vars_) {
      const VariableSpec& s = w_.variables[v];
      out.push_back(s.type == VarType::i64 ? vars_[v].bind(s.ivalues[i % s.ivalues.size()]) : vars_[v].bind(s.fvalues[i % s.fvalues.size()]));
    }
    return out;
  }

  // Call i's per-call by-value bytes ({"bytes": [...]}), laid out in one host input: none (no
  // host input at all) when the file has no such argument. The same memory every call.
  std::vector<std::span<const unsigned char>> host(size_t i) const {
    if (host_.empty()) return {};
    for (size_t t = 0; t < w_.step.size(); ++t)
      for (size_t j = 0; j < host_off_[t].size(); ++j)
        if (host_off_[t][j] >= 0) {
          const auto& v = w_.step[t].args[j].per_call;
          const auto& b = v[i % v.size()];
          std::copy(b.begin(), b.end(), host_.begin() + host_off_[t][j]);
        }
    return {std::span<const unsigned char>(host_)};
  }

  // The step function: what a program would write by hand. Temps and outputs are created at their
  // first use each call; state and const buffers come from the world (the closure); inputs are
  // the arguments.
  std::vector<Buffer> step(const World& world, const std::vector<Buffer>& inputs, const std::vector<std::span<const unsigned char>>& host) const {
    std::vector<Buffer> bufs = world.resident;
    for (size_t k = 0; k < inputs_.size(); ++k) bufs[inputs_[k]] = inputs[k];
    auto get = [&](int b) -> const Buffer& {
      if (!bufs[b]) bufs[b] = dev_.alloc(w_.buffers[b].dtype, w_.buffers[b].count);
      return bufs[b];
    };
    for (size_t i = 0; i < w_.step.size(); ++i) {
      const ItemSpec& it = w_.step[i];
      if (it.kind == ItemSpec::Kind::copy) {
        const Buffer& src = get(it.src);
        dev_.copy(get(it.dst), src);
        continue;
      }
      std::vector<Arg> args = templates_[i];
      for (size_t j = 0; j < it.args.size(); ++j) {
        const ArgSpec& a = it.args[j];
        if (host_off_[i][j] >= 0)  // the per-call form: bytes of the call's host input
          args[j] = encore::bytes_from(host.at(0), static_cast<size_t>(host_off_[i][j]), a.bytes.size());
        if (a.kind != ArgSpec::Kind::buffer) continue;
        const Buffer& b = get(a.buffer);
        args[j].buf = a.view ? b.view(a.offset, a.count) : b;
      }
      dev_.launch_args(c_.kernels[i], globals_[i], locals_[i], std::move(args), it.name, Estimate{it.est_ops, it.est_bytes});
    }
    std::vector<Buffer> out;
    for (int b : outputs_) out.push_back(get(b));
    return out;
  }

  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<Variable>& variables() const { return vars_; }

 private:
  const Workload& w_;
  const Device& dev_;
  const Compiled& c_;
  const RunOptions& opt_;
  std::vector<Variable> vars_;
  std::vector<int> used_vars_, inputs_, outputs_;
  std::vector<std::vector<Arg>> templates_;
  std::vector<std::vector<int64_t>> host_off_;  // per item, per argument: its byte offset in host_, or -1
  mutable std::vector<unsigned char> host_;     // the per-call bytes of the call being made
  std::vector<Sizes> globals_, locals_;
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
