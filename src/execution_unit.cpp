// ExecutionUnit's public API over UnitImpl (unit_build.cpp builds it, unit_replay.cpp runs it).
#include "encore/execution_unit.hpp"

#include <algorithm>
#include <string>

#include "unit_impl.hpp"

namespace encore {

using namespace detail;


ExecutionUnit::ExecutionUnit() = default;
ExecutionUnit::~ExecutionUnit() {
  if (impl_)
    for (auto& d : impl_->devices) try {
        d->finish();  // pending uploads read the unit's snapshots
      } catch (...) {
      }
}
ExecutionUnit::ExecutionUnit(ExecutionUnit&&) noexcept = default;
ExecutionUnit& ExecutionUnit::operator=(ExecutionUnit&& o) noexcept {
  if (this != &o) {
    ExecutionUnit old(std::move(*this));
    impl_ = std::move(o.impl_);
  }
  return *this;
}

static UnitImpl& need(const std::unique_ptr<UnitImpl>& u) {
  if (!u) throw JitError("use of an empty ExecutionUnit");
  return *u;
}

ExecutionUnit ExecutionUnit::build(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs, UnitOptions options) {
  ExecutionUnit u;
  u.impl_ = make_unit(std::move(items), std::move(inputs), std::move(outputs), options, {}, {});
  return u;
}

UnitImpl& UnitImpl::of(const ExecutionUnit& u) { return need(u.impl_); }
ExecutionUnit detail::UnitAccess::wrap(std::unique_ptr<UnitImpl> p) {
  ExecutionUnit u;
  u.impl_ = std::move(p);
  return u;
}

const std::vector<ExecItem>& ExecutionUnit::items() const { return need(impl_).items; }
std::vector<bool> ExecutionUnit::one_time() const { return need(impl_).one_time; }
const UnitStats& ExecutionUnit::stats() const { return need(impl_).stats; }
size_t ExecutionUnit::num_inputs() const { return need(impl_).inputs.size(); }
const Buffer& ExecutionUnit::captured_input(size_t slot) const {
  UnitImpl& u = need(impl_);
  if (slot >= u.inputs.size()) throw JitError("input slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.inputs.size()) + ")");
  return u.inputs_captured[slot];
}
const Buffer& ExecutionUnit::input(size_t slot) const {
  captured_input(slot);
  return impl_->inputs[slot];
}
size_t ExecutionUnit::num_variables() const { return need(impl_).vars.size(); }
const Variable& ExecutionUnit::variable(size_t slot) const {
  UnitImpl& u = need(impl_);
  if (slot >= u.vars.size()) throw JitError("variable slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.vars.size()) + ")");
  return u.vars[slot];
}
size_t ExecutionUnit::variable_slot(const Variable& v) const {
  UnitImpl& u = need(impl_);
  for (size_t i = 0; i < u.vars.size(); ++i)
    if (u.vars[i] == v) return i;
  throw JitError("variable \"" + v.name() + "\" is not used by the unit's items");
}

BoundVar ExecutionUnit::variable_value(size_t slot) const {
  const Variable& v = variable(slot);
  return BoundVar{v, impl_->var_i[slot], impl_->var_f[slot]};
}
const std::vector<Buffer>& ExecutionUnit::outputs() const { return need(impl_).outputs; }
bool ExecutionUnit::is_internal(const Buffer& b) const {
  UnitImpl& u = need(impl_);
  return b && std::find(u.internal.begin(), u.internal.end(), b.impl()->root()) != u.internal.end();
}
bool ExecutionUnit::is_fresh_output(const Buffer& b) const {
  UnitImpl& u = need(impl_);
  return b && std::find(u.fresh_output_roots.begin(), u.fresh_output_roots.end(), b.impl()->root()) != u.fresh_output_roots.end();
}

ExecutionUnit& ExecutionUnit::bind_input(size_t slot, const Buffer& b) {
  UnitImpl& u = need(impl_);
  if (slot >= u.inputs.size())
    throw JitError("input slot " + std::to_string(slot) + " out of range: the capture has " + std::to_string(u.inputs.size()) + " inputs");
  if (!b) throw JitError("input " + std::to_string(slot) + ": null buffer");
  if (b.impl() == u.inputs[slot].impl()) return *this;
  const Buffer& c = u.inputs_captured[slot];
  BufferImpl& bi = *b.impl();
  BufferImpl& ci = *c.impl();
  if (bi.dtype != ci.dtype || bi.count != ci.count || bi.dev != ci.dev)
    throw JitError("input " + std::to_string(slot) + ": captured " + c.describe() + ", given " + b.describe() +
                   (bi.dev != ci.dev ? " (different device)" : bi.dtype != ci.dtype ? " (different dtype)" : " (different element count)"));
  u.inputs[slot] = b;
  u.inputs_changed = true;
  u.staged[slot] = 0;
  if (u.bound) set_slot_buffer(u, static_cast<uint32_t>(slot), b);
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var(size_t slot, int64_t value) {
  UnitImpl& u = need(impl_);
  const Variable& v = variable(slot);
  if (v.is_float()) return bind_var_f(slot, static_cast<double>(value));
  if (value < v.min() || value > v.max())
    throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds [" + std::to_string(v.min()) + ", " +
                   std::to_string(v.max()) + "]");
  if (u.var_i[slot] == value) return *this;
  int64_t old = u.var_i[slot];
  u.var_i[slot] = value;
  u.var_f[slot] = static_cast<double>(value);
  try {
    if (u.bound)
      for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
  } catch (...) {
    u.var_i[slot] = old;
    u.var_f[slot] = static_cast<double>(old);
    for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
    throw;
  }
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var_f(size_t slot, double value) {
  UnitImpl& u = need(impl_);
  const Variable& v = variable(slot);
  if (!v.is_float()) {
    if (value != static_cast<double>(static_cast<int64_t>(value))) throw JitError("variable \"" + v.name() + "\" is an integer variable");
    return bind_var(slot, static_cast<int64_t>(value));
  }
  if (!(value >= v.fmin() && value <= v.fmax())) throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds");
  if (u.var_f[slot] == value) return *this;
  u.var_f[slot] = value;
  u.var_i[slot] = static_cast<int64_t>(value);
  if (u.bound)
    for (const VarUse& use : u.var_uses[slot]) set_kernel_var(u, use, static_cast<uint32_t>(slot));
  return *this;
}

ExecutionUnit& ExecutionUnit::bind(const BoundVar& bv) {
  size_t slot = variable_slot(bv.var);
  return bv.var.is_float() ? bind_var_f(slot, bv.f) : bind_var(slot, bv.i);
}

ExecutionUnit& ExecutionUnit::update(const std::map<Buffer, Buffer>& buffers, std::span<const BoundVar> var_vals) {
  UnitImpl& u = need(impl_);
  for (const auto& [from, to] : buffers) {
    size_t slot = SIZE_MAX;
    for (size_t s = 0; s < u.inputs_captured.size() && slot == SIZE_MAX; ++s)
      if (u.inputs_captured[s] == from) slot = s;
    if (slot == SIZE_MAX) throw JitError("update: " + from.describe() + " is not an input of this unit");
    bind_input(slot, to);
  }
  for (const BoundVar& v : var_vals) bind(v);
  return *this;
}

void ExecutionUnit::operator()() { run_unit(need(impl_)); }

double ExecutionUnit::run_and_wait() {
  UnitImpl& u = need(impl_);
  for (auto& d : u.devices) d->finish();
  auto t0 = std::chrono::steady_clock::now();
  run_unit(u);
  for (auto& d : u.devices) d->finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ExecutionUnit ExecutionUnit::operator+(const ExecutionUnit& o) const {
  UnitImpl& a = need(impl_);
  UnitImpl& b = need(o.impl_);
  std::vector<ExecItem> items = a.items;
  items.insert(items.end(), b.items.begin(), b.items.end());
  std::vector<Buffer> inputs = a.inputs_captured;
  for (const Buffer& x : b.inputs_captured)
    if (std::find(inputs.begin(), inputs.end(), x) == inputs.end()) inputs.push_back(x);
  std::vector<Buffer> outputs = a.outputs;
  outputs.insert(outputs.end(), b.outputs.begin(), b.outputs.end());
  std::vector<BufferImpl*> internal = a.internal;
  internal.insert(internal.end(), b.internal.begin(), b.internal.end());
  std::vector<uint64_t> ids;
  for (BufferImpl* r : internal) ids.push_back(r->capture_id);
  for (const Buffer& x : outputs)
    if (x) ids.push_back(x.impl()->root()->capture_id);
  ExecutionUnit r;
  r.impl_ = make_unit(std::move(items), std::move(inputs), std::move(outputs), a.opt, std::move(internal), std::move(ids));
  return r;
}

void ExecutionUnit::free_intermediates() {
  UnitImpl& u = need(impl_);
  for (auto& d : u.devices) d->finish();
  u.bound = false;
  u.replay.clear();
  u.once.clear();
  for (auto& [ei, place] : u.planned) u.entries[ei].current = Buffer();
  for (auto& a : u.arenas) a.buf = Buffer();
  for (Entry& e : u.entries) e.kernel_uses.clear();
}

}  // namespace encore
