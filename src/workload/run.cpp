// encore-bench `run`: the same calls eagerly and through TinyJit from the same initial state,
// compared call by call, then both timed (each timed call waits for the device).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>

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
  std::vector<Buffer> resident;                  // per workload buffer; null unless state/const
  std::vector<std::vector<Buffer>> input_sets;   // [set][k]: used inputs, in declaration order
};

class Runner {
 public:
  Runner(const Workload& w, const Device& dev, const Compiled& c, const RunOptions& opt) : w_(w), dev_(dev), c_(c), opt_(opt) {
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
        globals_.emplace_back();
        locals_.emplace_back();
        continue;
      }
      auto sizes = [&](const std::vector<SizeExpr>& e) {
        Sizes s;
        s.n = static_cast<uint8_t>(e.size());
        for (size_t d = 0; d < e.size(); ++d) {
          if (e[d].var >= 0) used_var[e[d].var] = true;
          s.v[d] = e[d].var < 0 ? Size(e[d].add) : Size(vars_[e[d].var], e[d].mul, e[d].add);
        }
        return s;
      };
      globals_.push_back(sizes(it.global));
      locals_.push_back(sizes(it.local));
      std::vector<Arg> args;
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
            args.emplace_back(vars_[a.variable].is_float() ? Arg(vars_[a.variable]) : Arg(vars_[a.variable].as(a.dtype)));
            break;
          case ArgSpec::Kind::local: args.emplace_back(LocalMem{a.local_bytes}); break;
          case ArgSpec::Kind::bytes: args.emplace_back(encore::bytes(a.bytes.data(), a.bytes.size())); break;
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

  World make_world() const {
    World world;
    world.resident.resize(w_.buffers.size());
    auto make = [&](size_t b, uint64_t set) {
      const BufferSpec& s = w_.buffers[b];
      Buffer buf = dev_.alloc(s.dtype, s.count);
      buf.set_name(s.name);
      buf.copyin_bytes(initial_bytes(w_, b, set).data(), buf.nbytes());
      return buf;
    };
    for (size_t b = 0; b < w_.buffers.size(); ++b)
      if (w_.buffers[b].role == Role::state || w_.buffers[b].role == Role::const_) world.resident[b] = make(b, 0);
    world.input_sets.resize(static_cast<size_t>(opt_.rotate));
    for (int k = 0; k < opt_.rotate; ++k)
      for (int b : inputs_) world.input_sets[k].push_back(make(b, static_cast<uint64_t>(k)));
    return world;
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

  // The step function: what a program would write by hand. Temps and outputs are created at their
  // first use each call; state and const buffers come from the world (the closure); inputs are
  // the arguments.
  std::vector<Buffer> step(const World& world, const std::vector<Buffer>& inputs) const {
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

 private:
  const Workload& w_;
  const Device& dev_;
  const Compiled& c_;
  const RunOptions& opt_;
  std::vector<Variable> vars_;
  std::vector<int> used_vars_, inputs_, outputs_;
  std::vector<std::vector<Arg>> templates_;
  std::vector<Sizes> globals_, locals_;
};

std::vector<unsigned char> read_back(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  b.copyout_bytes(v.data(), v.size());
  return v;
}

struct Checker {
  const Workload& w;
  Tolerance tol;
  Report& r;
  void check(const std::string& where, int buffer, const std::vector<unsigned char>& eager, const std::vector<unsigned char>& jit) {
    const BufferSpec& s = w.buffers[buffer];
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

Report run(const Workload& w, const Device& dev, const RunOptions& opt) {
  if (opt.calls < 1) throw ArgumentError("calls must be at least 1");
  if (opt.rotate < 1) throw ArgumentError("rotate must be at least 1");
  Compiled c = validate(w, dev);
  Runner runner(w, dev, c, opt);
  Report r;
  r.name = w.name;
  r.device = dev.id() + " (" + dev.info().name + ")";
  r.calls = opt.calls;
  r.rotate = opt.rotate;
  r.prune = opt.jit.prune;
  r.plan = opt.jit.plan;
  r.items = w.step.size();
  Progress progress{opt.progress};
  Checker checker{w, Tolerance{w.bitwise(), w.rtol, w.atol}, r};
  // The NULL device runs nothing: its buffers hold whatever memory held, so there is nothing to
  // compare (it measures encore's own overhead).
  const bool compared = !dev.is_null();
  r.compared = compared;
  const size_t n = static_cast<size_t>(opt.calls), sets = static_cast<size_t>(opt.rotate);

  // 1. eager reference, outputs kept per call
  World ew = runner.make_world();
  std::vector<std::vector<std::vector<unsigned char>>> expect(n);
  for (size_t i = 0; i < n; ++i) {
    progress.show("eager", static_cast<int>(i), opt.calls);
    runner.bind(i);
    for (const Buffer& b : runner.step(ew, ew.input_sets[i % sets]))
      if (compared) expect[i].push_back(read_back(b));
  }

  // 2. the same calls through TinyJit, from the same initial state
  World jw = runner.make_world();
  auto fn = [&runner, &jw](const std::vector<Buffer>& ins, const std::vector<BoundVar>&) { return runner.step(jw, ins); };
  TinyJit jit(fn, opt.jit);
  std::vector<std::vector<unsigned char>> last;
  for (size_t i = 0; i < n; ++i) {
    progress.show("jit", static_cast<int>(i), opt.calls);
    std::vector<BoundVar> vals = runner.bind(i);
    bool capturing = jit.calls() == 1;
    auto t0 = Clock::now();
    const std::vector<Buffer>& outs = jit(jw.input_sets[i % sets], vals);
    if (capturing) {
      dev.synchronize();
      r.capture_ms = us_since(t0) / 1000;
    }
    if (opt.after_jit_call) opt.after_jit_call(i, outs);
    last.clear();
    for (size_t k = 0; k < outs.size() && compared; ++k) {
      last.push_back(read_back(outs[k]));
      checker.check("call " + std::to_string(i), runner.outputs()[k], expect[i][k], last.back());
    }
  }
  for (size_t b = 0; b < w.buffers.size() && compared; ++b)
    if (w.buffers[b].role == Role::state) checker.check("final state", static_cast<int>(b), read_back(ew.resident[b]), read_back(jw.resident[b]));
  for (size_t k = 0; k < runner.inputs().size() && compared; ++k)
    for (size_t s = 0; s < sets; ++s)
      checker.check("final state (input set " + std::to_string(s) + ")", runner.inputs()[k], read_back(ew.input_sets[s][k]),
                    read_back(jw.input_sets[s][k]));
  if (!opt.dump_dir.empty()) {
    std::filesystem::create_directories(opt.dump_dir);
    for (size_t b = 0; b < w.buffers.size(); ++b)
      if (w.buffers[b].role == Role::state) dump(opt.dump_dir, w.buffers[b].name, read_back(jw.resident[b]));
    for (size_t k = 0; k < last.size(); ++k) dump(opt.dump_dir, w.buffers[runner.outputs()[k]].name, last[k]);
  }
  expect.clear();

  // 3. timing: both continue from where they are; each timed call ends when the device is done
  const int warmup = 2, timed = std::max(opt.calls, 5);
  r.timed_calls = timed;
  std::vector<double> te, tj;
  double cpu0 = 0;
  for (int k = 0; k < warmup + timed; ++k) {
    progress.show("timing eager", k, warmup + timed);
    if (k == warmup) cpu0 = thread_cpu_us();
    size_t i = n + static_cast<size_t>(k);
    runner.bind(i);
    auto t0 = Clock::now();
    std::vector<Buffer> outs = runner.step(ew, ew.input_sets[i % sets]);
    dev.synchronize();
    if (k >= warmup) te.push_back(us_since(t0));
  }
  r.eager_cpu_us = (thread_cpu_us() - cpu0) / timed;
  for (int k = 0; k < warmup + timed; ++k) {
    progress.show("timing jit", k, warmup + timed);
    if (k == warmup) cpu0 = thread_cpu_us();
    size_t i = n + static_cast<size_t>(k);
    std::vector<BoundVar> vals = runner.bind(i);
    bool capturing = jit.calls() == 1;  // only when --calls 1: the capture happens here
    auto t0 = Clock::now();
    jit(jw.input_sets[i % sets], vals);
    dev.synchronize();
    if (capturing) r.capture_ms = us_since(t0) / 1000;
    if (k >= warmup) tj.push_back(us_since(t0));
  }
  r.replay_cpu_us = (thread_cpu_us() - cpu0) / timed;
  progress.clear();
  r.eager_step_us = median(te);
  r.replay_step_us = median(tj);
  r.speedup = r.replay_step_us > 0 ? r.eager_step_us / r.replay_step_us : 0;
  r.eager_item_us = r.eager_step_us / static_cast<double>(r.items);
  r.replay_item_us = r.replay_step_us / static_cast<double>(r.items);
  r.items_replayed = r.items;
  if (jit.unit()) {
    const UnitStats& s = jit.unit().stats();
    r.items_pruned = s.items_pruned;
    r.items_replayed = r.items - std::min(r.items, s.items_pruned);
    r.temp_bytes_naive = s.temp_bytes_naive;
    r.temp_bytes_planned = s.temp_bytes_planned;
    r.temp_bytes_lower_bound = s.temp_bytes_lower_bound;
    r.planned_temps = s.planned_temps;
  }
  return r;
}

}  // namespace encore::workload
