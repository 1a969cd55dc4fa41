// The kernel kind: a launch of a compiled kernel over buffer, scalar, Variable and __local
// arguments with literal or Variable launch sizes.
#include <array>
#include <mutex>

#include "exec/kernel_bound.hpp"
#include "core/program_impl.hpp"

namespace encore::detail {

namespace {

void operands(const ExecItem& it, std::vector<Operand>& out) {
  for (uint32_t i = 0; i < it.args.size(); ++i)
    if (it.args[i].kind == Arg::Kind::buffer) out.push_back({const_cast<Buffer*>(&it.args[i].buf), it.args[i].access, i});
}

std::string operand_name(const ExecItem& it, uint32_t arg) {
  const auto& params = it.kernel.params();
  if (arg < params.size())
    return "argument " + std::to_string(arg) + " (" + (params[arg].const_data ? "const " : "") + params[arg].type_name + " " + params[arg].name + ")";
  return "argument " + std::to_string(arg);
}

const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.kernel.impl()->program->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? it.kernel.name() : it.name; }
std::string title(const ExecItem& it) { return "kernel " + it.kernel.name(); }

std::string sizes_str(const Sizes& s) {
  std::string r = "[";
  for (uint8_t i = 0; i < s.n; ++i) {
    if (i) r += ",";
    const Size& z = s.v[i];
    r += z.str();
  }
  return r + "]";
}

std::string describe(const ExecItem& it) {
  std::string s = label(it) + args_str(it.args) + " global " + sizes_str(it.global);
  if (!it.local.empty()) s += " local " + sizes_str(it.local);
  return s;
}

bool uses_variables(const ExecItem& it) {
  if (it.global.uses_variable() || it.local.uses_variable()) return true;
  for (const Arg& a : it.args)
    if (a.kind == Arg::Kind::variable) return true;
  return false;
}

void run_eager(const ExecItem& it) {
  const auto t0 = eager_start();
  LaunchDims ld;
  uint64_t ns = 0;
  const bool debug = debug_level() >= 2;
  const bool traced = trace_active() && !debug;
  if (!run_kernel_eager(*it.kernel.impl(), it.args, it.global, it.local, ld, debug ? &ns : nullptr, traced ? &it : nullptr)) return;
  if (debug) debug_print_item(it, ld.dims, ld.gws, ld.lws, ns, micros_since(t0));
}

void submit(const ExecItem& it) { it.kernel.device().launch_args(it.kernel, it.global, it.local, it.args, it.name, it.estimate); }

// On a lane (a concurrent replay): an empty launch is a marker, so what waits for it still waits
// for what it waited for.
void replay_after(BoundItem& x, uint32_t lane, NativeEvent* const* waits, uint32_t n, NativeEvent** done) {
  const KernelBound& k = payload<KernelBound>(x);
  if (!k.ld.empty) return x.dev->launch_after(lane, *k.kernel, k.ld.dims, k.ld.gws, k.ld.lws, waits, n, done);
  if (!n && !done) return;  // nothing waits for it, and it waits for nothing
  NativeEvent* m = x.dev->marker_after(lane, waits, n);
  if (done) *done = m;
  else x.dev->release_event(m);
}

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  Binding& b = c.b;
  const PlanView& p = c.p;
  KernelImpl& k = *it.kernel.impl();
  KernelBound& kb = b.payloads.make<KernelBound>();
  x.payload = &kb;
  {
    std::lock_guard<std::mutex> lock(k.program->mu);
    kb.kernel = k.program->backend->create_kernel(k.sig->name);
  }
  BackendKernel* const kernel = kb.kernel.get();
  uint32_t op = 0;
  for (uint32_t ai = 0; ai < it.args.size(); ++ai) {
    const Arg& a = it.args[ai];
    switch (a.kind) {
      case Arg::Kind::buffer: {
        const uint32_t e = st.ops[op];
        kernel->set_buffer(ai, b.current[e].impl()->handle());
        b.uses[e].push_back({c.bound, op++, ai});
        break;
      }
      case Arg::Kind::scalar: kernel->set_arg(ai, size(a.dtype), &a.bits); break;
      case Arg::Kind::local: kernel->set_local(ai, a.local_bytes); break;
      case Arg::Kind::bytes:
        if (a.host_slot >= 0) {
          const HostArg h{kernel, ai, static_cast<uint32_t>(a.host_slot), a.host_offset, a.value->size()};
          kernel->set_arg(ai, h.n, c.u.host_now[h.slot] + h.off);
          b.host_args.push_back(h);
        } else {
          kernel->set_arg(ai, a.value->size(), a.value->data());
        }
        break;
      case Arg::Kind::variable: {
        uint32_t v = st.var_ref[ai];
        uint64_t bits = var_arg_bits(*p.vars[v].state(), c.u.values[v].i, c.u.values[v].f, a.dtype);
        kernel->set_arg(ai, size(a.dtype), &bits);
        b.var_args[v].push_back({kernel, ai, a.dtype});
        break;
      }
    }
  }
  for (uint32_t d = 0; d < st.dims; ++d)
    for (const SizeRef* s : {&st.g[d], &st.l[d]}) {
      if (s == &st.l[d] && !st.has_local) continue;
      auto use = [&](uint32_t v) {
        auto& users = b.var_sizes[v];
        if (users.empty() || users.back().bound != c.bound) users.push_back({c.bound});
      };
      if (s->expr >= 0)
        for (uint32_t v : p.size_exprs[static_cast<size_t>(s->expr)].vars) use(v);
      else if (s->var >= 0)
        use(static_cast<uint32_t>(s->var));
    }
  resolve_sizes(p, x, c.u.values, true);
  x.replay_after = replay_after;
}

void point(BoundItem& x, uint32_t, uint32_t arg, BufferImpl*, NativeMem* handle) { payload<KernelBound>(x).kernel->set_buffer(arg, handle); }


bool replay_event(BoundItem& x, NativeEvent** ev) {
  const KernelBound& k = payload<KernelBound>(x);
  if (k.ld.empty) return false;  // a zero global size: OpenCL enqueues nothing
  *ev = x.dev->launch_traced(*k.kernel, k.ld.dims, k.ld.gws, k.ld.lws);
  return true;
}

const LaunchDims* launch(const BoundItem& x) { return &payload<KernelBound>(x).ld; }

}  // namespace

// Overflow-checked, so a wrap to a small positive size cannot pass unnoticed. Sizes are resolved
// here at bind and at every set_var, never in the replay loop: that loop needs no check.
static int64_t eval(const PlanView& p, const SizeRef& s, const std::vector<VarValue>& vars) {
  try {
    return eval_size(s, p.size_exprs, vars, p.vars);
  } catch (const ArgumentError& e) {
    throw ArgumentError(std::string("replay launch: ") + e.what());
  }
}

void resolve_sizes(const PlanView& p, BoundItem& x, const std::vector<VarValue>& vars, bool apply) {
  KernelBound& kb = payload<KernelBound>(x);
  const PlanStep& st = p.steps[x.item];
  int64_t g[3], l[3];
  for (uint32_t d = 0; d < st.dims; ++d) {
    g[d] = eval(p, st.g[d], vars);
    if (st.has_local) l[d] = eval(p, st.l[d], vars);
  }
  LaunchDims checked;
  resolve_launch(st.dims, g, st.has_local ? l : nullptr, *x.dev, *kb.kernel, apply ? kb.ld : checked, "replay launch");
}

bool run_kernel_eager(KernelImpl& k, const std::vector<Arg>& args, const Sizes& global, const Sizes& local, LaunchDims& ld,
                      uint64_t* ns, const ExecItem* traced) {
  DeviceImpl& dev = *k.program->dev;
  int64_t g[3], l[3];
  for (uint8_t d = 0; d < global.n; ++d) g[d] = global.v[d].eval();
  for (uint8_t d = 0; d < local.n; ++d) l[d] = local.v[d].eval();
  try {
    resolve_launch(global.n, g, local.empty() ? nullptr : l, dev, *k.eager, ld, "launch");
  } catch (const ArgumentError& e) {  // the kernel's name only on failure: no string built per launch
    throw ArgumentError("kernel " + k.sig->name + ": " + e.what());
  }
  if (ld.empty) return false;
  const uint32_t dims = ld.dims;
  const size_t* lws = ld.lws;
  {
    std::lock_guard<std::mutex> lock(k.mu);
    BackendKernel& bk = *k.eager;
    for (uint32_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      switch (a.kind) {
        case Arg::Kind::buffer: bk.set_buffer(i, a.buf.impl()->handle()); break;
        case Arg::Kind::scalar: bk.set_arg(i, size(a.dtype), &a.bits); break;
        case Arg::Kind::local: bk.set_local(i, a.local_bytes); break;
        case Arg::Kind::bytes: bk.set_arg(i, a.value->size(), a.value->data()); break;
        case Arg::Kind::variable: {
          const VarState& v = *a.var->state();
          VarValue val = var_value(v);
          uint64_t bits = var_arg_bits(v, val.i, val.f, a.dtype);
          bk.set_arg(i, size(a.dtype), &bits);
          break;
        }
      }
    }
    if (traced) trace_item(dev, OwnedEvent(&dev, dev.launch_traced(bk, ld.dims, ld.gws, ld.lws)), *traced, "eager", ld.dims, ld.gws);
    else enqueue_launch(dev, bk, ld, ns);
    std::array<size_t, 4> cfg{dims, lws[0], dims > 1 ? lws[1] : 0, dims > 2 ? lws[2] : 0};
    bool seen = false;
    for (const auto& cf : k.seen_configs) seen = seen || cf == cfg;
    if (!seen) {
      k.seen_configs.push_back(cfg);
      if (k.seen_configs.size() > 1 || !k.program->from_disk) {
        k.program->dirty = true;
        dev.programs_dirty = true;
      }
    }
  }
  bump_written(args);
  return true;
}

const KindOps kernel_kind{"kernel", operands, operand_name, queue, label, title, describe, uses_variables, false, true,
                          run_eager, submit, bind, point, replay_launch, replay_event, false, launch};

}  // namespace encore::detail
