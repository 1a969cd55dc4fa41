#pragma once
// The step of a workload as a program would write it by hand (run.cpp runs it eagerly and through
// TinyJit; load_unit.cpp records it once into a unit): its buffers made and initialised, its
// items issued on the device with their arguments.
//   Runner r(w, dev, compiled, opt); World world{r.make_resident(), {{r.make_inputs()}}};
//   std::vector<Buffer> outs = r.step(world, world.input_sets[0][0], r.host(0));
#include <unistd.h>

#include <new>
#include <span>
#include <vector>

#include "core/async_beside.hpp"
#include "workload/reader.hpp"

namespace encore::workload::detail {

// Buffers that live across calls in one run (eager or jit): state and const buffers, and the
// input sets. Each run gets its own, initialised identically.
struct World {
  std::vector<Buffer> resident;                                // per workload buffer; null unless state/const
  std::vector<std::vector<std::vector<Buffer>>> input_sets;    // [shape set][rotation][k]: used inputs, in declaration order
};

// Buffer b of w on dev, holding input set `set`'s initial contents.
inline Buffer make_buffer(const Workload& w, const Device& dev, size_t b, uint64_t set) {
  const BufferSpec& s = w.buffers[b];
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
    Buffer buf = dev.alloc(s.dtype, s.count);
    buf.set_name(s.name);
    buf.copyin_bytes(initial_bytes(w, b, set).data(), buf.nbytes());
    return buf;
  } catch (const std::bad_alloc&) {
    throw too_large();
  }
}

// The inputs some step item uses, in declaration order: the step's arguments.
inline std::vector<int> used_inputs(const Workload& w) {
  std::vector<bool> used(w.buffers.size());
  for (const ItemSpec& it : w.step) {
    if (it.kind == ItemSpec::Kind::copy) used[it.src] = used[it.dst] = true;
    for (const ArgSpec& a : it.args)
      if (a.kind == ArgSpec::Kind::buffer) used[a.buffer] = true;
  }
  std::vector<int> out;
  for (size_t b = 0; b < w.buffers.size(); ++b)
    if (w.buffers[b].role == Role::input && used[b]) out.push_back(static_cast<int>(b));
  return out;
}

// The buffers a run starts from: resident (state and const, null elsewhere) and the used inputs,
// input set 0.
struct Initial {
  std::vector<Buffer> resident;
  std::vector<Buffer> inputs;
};
inline std::vector<Buffer> make_resident(const Workload& w, const Device& dev) {
  std::vector<Buffer> r(w.buffers.size());
  for (size_t b = 0; b < w.buffers.size(); ++b)
    if (w.buffers[b].role == Role::state || w.buffers[b].role == Role::const_) r[b] = make_buffer(w, dev, b, 0);
  return r;
}
inline Initial make_initial(const Workload& w, const Device& dev) {
  Initial i{make_resident(w, dev), {}};
  for (int b : used_inputs(w)) i.inputs.push_back(make_buffer(w, dev, static_cast<size_t>(b), 0));
  return i;
}

// A start-up's compile with its buffers made beside it (encore::detail::async_beside), as an
// engine loads its assets beside its pipeline builds. On PoCL the two took turns on two cores:
// train_mlp's step spent 2.6-3.4 ms making its resident buffers (generating the bytes, and the
// device memory's first touch in each copyin) after a 2.8-2.9 ms compile. A compile that throws is
// the error reported: the buffers are waited for (made on a thread) or never made (deferred).
template <class F> auto compile_beside_buffers(const Workload& w, const Device& dev, F&& compile) {
  auto made = encore::detail::async_beside([&w, &dev] { return make_initial(w, dev); });
  auto compiled = compile();
  return std::pair{std::move(compiled), made.get()};
}

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
    std::vector<bool> used_var(w.variables.size());
    for (size_t i = 0; i < w.step.size(); ++i) {
      const ItemSpec& it = w.step[i];
      if (it.kind == ItemSpec::Kind::copy) {
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
    inputs_ = used_inputs(w);
    for (size_t b = 0; b < w.buffers.size(); ++b)
      if (w.buffers[b].role == Role::output) outputs_.push_back(static_cast<int>(b));
    // Only variables some item uses are passed to the jit: a capture knows no others.
    for (size_t v = 0; v < vars_.size(); ++v)
      if (used_var[v]) used_vars_.push_back(static_cast<int>(v));
  }

  Buffer make(size_t b, uint64_t set) const { return make_buffer(w_, dev_, b, set); }

  std::vector<Buffer> make_resident() const { return workload::detail::make_resident(w_, dev_); }

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
  // Whether some argument takes per-call bytes (the step then has a host input).
  bool has_host_input() const { return !host_.empty(); }

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

}  // namespace encore::workload::detail
