// ExecutionUnit's public API over UnitImpl (src/unit/: plan.cpp plans, binding.cpp binds,
// replay.cpp runs).
#include "encore/execution_unit.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "exec/kind.hpp"
#include "unit/unit.hpp"
#include "core/event_impl.hpp"

namespace encore {

using namespace detail;

void UnitOptions::validate() const { detail::check_unit_options(*this, "UnitOptions::max_in_flight"); }

void CaptureOptions::validate() const {}

namespace detail {

void check_unit_options(const UnitOptions& o, const char* max_in_flight_name) {
  // each replay in flight holds an event per device: a garbage bound would allocate gigabytes
  constexpr uint32_t kMaxInFlight = 1024;
  if (o.max_in_flight > kMaxInFlight)
    throw ArgumentError(std::string(max_in_flight_name) + ": at most " + std::to_string(kMaxInFlight) + " replays in flight (0: unbounded), found " +
                        std::to_string(o.max_in_flight));
}

std::unique_ptr<UnitImpl> make_unit(std::vector<ExecItem> items, std::vector<Buffer> inputs, std::vector<Buffer> outputs,
                                    UnitOptions opt, std::vector<BufferImpl*> internal, const std::vector<uint64_t>& capture_ids,
                                    std::shared_ptr<ArenaPool> pool, std::vector<std::vector<unsigned char>> host_inputs) {
  opt.validate();  // (checked where the options came in too: Capture, TinyJit)
  for (const ExecItem& it : items)
    if (it.host_slot >= 0 && (static_cast<size_t>(it.host_slot) >= host_inputs.size() ||
                              it.host_offset + it.dst.nbytes() > host_inputs[static_cast<size_t>(it.host_slot)].size()))
      throw Error("internal error: an upload from host input " + std::to_string(it.host_slot) + " lies outside the host inputs");
  for (const ExecItem& it : items)
    for (const Arg& a : it.args)
      if (a.kind == Arg::Kind::bytes && a.host_slot >= 0 &&
          (static_cast<size_t>(a.host_slot) >= host_inputs.size() ||
           a.host_offset + a.value->size() > host_inputs[static_cast<size_t>(a.host_slot)].size()))
        throw Error("internal error: a by-value argument from host input " + std::to_string(a.host_slot) + " lies outside the host inputs");
  auto up = std::make_unique<UnitImpl>();
  up->arena_pool = std::move(pool);
  UnitImpl& u = *up;
  u.host_captured = std::move(host_inputs);
  for (const auto& h : u.host_captured) u.host_now.push_back(h.data());
  TraceSpan plan_span("plan");
  u.plan = make_plan(std::move(items), std::move(inputs), std::move(outputs), opt, std::move(internal), capture_ids);
  const Plan& p = u.plan;
  u.inputs = p.inputs;
  for (const auto& d : p.devices) u.device_handles.emplace_back(d);
  u.views.resize(p.entries.size());
  u.slot_changed.assign(p.inputs.size(), 0);
  u.alias_copy.resize(p.inputs.size());
  u.copied.assign(p.inputs.size(), 0);
  u.vars = p.var_init;
  u.changed_slots.reserve(p.inputs.size());
  bool host_reads = false;  // items that leave host memory to the device never group
  for (const ExecItem& it : p.items) host_reads = host_reads || kind_of(it).host_reads || kind_of(it).opaque;
  u.flight.size(p.opt, p.stats.items_replayed, host_reads, p.devices.size());
  if (debug_level() >= 1) {
    const UnitStats& st = p.stats;
    char line[320];
    std::snprintf(line, sizeof line,
                  "captured %zu items: %zu pruned, %zu replayed; %zu inputs, %zu variables; temps %zu planned: %llu -> %llu bytes "
                  "(lower bound %llu)",
                  st.items, st.items_pruned, st.items_replayed, st.inputs, st.variables, st.planned_temps,
                  static_cast<unsigned long long>(st.temp_bytes_naive), static_cast<unsigned long long>(st.temp_bytes_planned),
                  static_cast<unsigned long long>(st.temp_bytes_lower_bound));
    log(LogLevel::info, line);
    for (const std::string& note : p.keep_notes) log(LogLevel::info, "  kept " + note);
  }
  TraceSpan bind_span("bind");
  bind_unit(u);
  return up;
}

std::vector<Buffer> unit_state_storages(const ExecutionUnit& unit) { return UnitImpl::of(unit).plan.state_storages(); }

void unit_in_use(const char* op, std::thread::id holder) {
  if (holder == std::this_thread::get_id())
    throw JitError(std::string("ExecutionUnit::") + op +
                   " called from inside the same unit's replay (a native call of the unit calling back into it): a replay uses the "
                   "unit's binding, arena and values until it returns. Call it after the run returns");
  throw JitError(std::string("ExecutionUnit::") + op +
                 ": another thread is replaying this unit, or binding or freeing it, right now. A unit is used by one thread at a "
                 "time (a replay reads its bound inputs, variables and arena until it returns): give each thread its own unit "
                 "(capture one per thread), or guard the unit with a lock; a TinyJit serialises its calls");
}

void check_not_replaying(const UnitImpl& u, const char* op) {
  const std::thread::id holder = u.replaying_on.load(std::memory_order_relaxed);
  if (holder != std::thread::id()) [[unlikely]] unit_in_use(op, holder);
}

}  // namespace detail

ExecutionUnit::ExecutionUnit() = default;
// The unit's in-flight replays read its upload snapshots and arena: UnitImpl's destructor settles
// them (InFlight::settle), never waiting for unrelated work where it kept events.
ExecutionUnit::~ExecutionUnit() = default;
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

static const Variable& variable_at(const UnitImpl& u, size_t slot) {
  if (slot >= u.plan.vars.size())
    throw JitError("variable slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.plan.vars.size()) + ")");
  return u.plan.vars[slot];
}

UnitImpl& UnitImpl::of(const ExecutionUnit& u) { return need(u.impl_); }
ExecutionUnit detail::UnitAccess::wrap(std::unique_ptr<UnitImpl> p) {
  ExecutionUnit u;
  u.impl_ = std::move(p);
  return u;
}

const std::vector<ExecItem>& ExecutionUnit::items() const { return need(impl_).plan.items; }
std::vector<bool> ExecutionUnit::one_time() const { return need(impl_).plan.one_time; }
const UnitStats& ExecutionUnit::stats() const { return need(impl_).plan.stats; }
std::span<const Device> ExecutionUnit::devices() const { return need(impl_).device_handles; }
size_t ExecutionUnit::num_inputs() const { return need(impl_).inputs.size(); }
const Buffer& ExecutionUnit::captured_input(size_t slot) const {
  UnitImpl& u = need(impl_);
  if (slot >= u.inputs.size()) throw JitError("input slot " + std::to_string(slot) + " out of range (unit has " + std::to_string(u.inputs.size()) + ")");
  return u.plan.inputs[slot];
}
const Buffer& ExecutionUnit::input(size_t slot) const {
  captured_input(slot);
  return impl_->inputs[slot];
}
size_t ExecutionUnit::num_variables() const { return need(impl_).plan.vars.size(); }
const Variable& ExecutionUnit::variable(size_t slot) const { return variable_at(need(impl_), slot); }
size_t ExecutionUnit::variable_slot(const Variable& v) const {
  UnitImpl& u = need(impl_);
  for (size_t i = 0; i < u.plan.vars.size(); ++i)
    if (u.plan.vars[i] == v) return i;
  throw JitError("variable \"" + v.name() + "\" is not used by the unit's items");
}
BoundVar ExecutionUnit::variable_value(size_t slot) const {
  const Variable& v = variable(slot);
  return BoundVar{v, impl_->vars[slot].i, impl_->vars[slot].f};
}
const std::vector<Buffer>& ExecutionUnit::outputs() const { return need(impl_).plan.outputs; }
bool ExecutionUnit::is_internal(const Buffer& b) const { return b && need(impl_).plan.is_internal(b.impl()->root()); }
bool ExecutionUnit::is_fresh_output(const Buffer& b) const { return b && need(impl_).plan.is_fresh_output(b.impl()->root()); }

// The binding calls hold the unit (UnitMark) while they change it: a replay on another thread at the
// same time would read inputs and kernel arguments half set.
namespace {

// Whether `b` replaces slot's input: false when it is that input already; a JitError when it
// does not match the capture's.
bool input_changes(UnitImpl& u, size_t slot, const Buffer& b) {
  if (slot >= u.inputs.size())
    throw JitError("input slot " + std::to_string(slot) + " out of range: the capture has " + std::to_string(u.inputs.size()) + " inputs");
  if (!b) throw JitError("input " + std::to_string(slot) + ": null buffer");
  if (b.impl() == u.inputs[slot].impl()) return false;
  const Buffer& c = u.plan.inputs[slot];
  BufferImpl& bi = *b.impl();
  BufferImpl& ci = *c.impl();
  if (bi.dtype != ci.dtype || bi.count != ci.count || bi.dev != ci.dev)
    throw JitError("input " + std::to_string(slot) + ": captured " + c.describe() + ", given " + b.describe() +
                   (bi.dev != ci.dev ? " (different device)" : bi.dtype != ci.dtype ? " (different dtype)" : " (different element count)"));
  bi.ensure_allocated();
  return true;
}

void note_changed(UnitImpl& u, size_t slot) {
  if (!u.slot_changed[slot]) {
    u.slot_changed[slot] = 1;
    u.changed_slots.push_back(static_cast<uint32_t>(slot));  // reserved: no allocation once warm
  }
}

void bind_input_at(UnitImpl& u, size_t slot, const Buffer& b) {
  if (!input_changes(u, slot, b)) return;
  u.inputs[slot] = b;
  note_changed(u, slot);
}

void bind_float_at(UnitImpl& u, size_t slot, double value);

void bind_int_at(UnitImpl& u, size_t slot, int64_t value) {
  const Variable& v = variable_at(u, slot);
  if (v.is_float()) return bind_float_at(u, slot, static_cast<double>(value));
  if (value < v.min() || value > v.max())
    throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds [" + std::to_string(v.min()) + ", " +
                   std::to_string(v.max()) + "]");
  if (u.vars[slot].i == value) return;
  set_var(u, static_cast<uint32_t>(slot), {value, static_cast<double>(value)});
}

void bind_float_at(UnitImpl& u, size_t slot, double value) {
  const Variable& v = variable_at(u, slot);
  if (!v.is_float()) {
    if (!(value >= -9.2e18 && value <= 9.2e18) || value != static_cast<double>(static_cast<int64_t>(value)))
      throw JitError("variable \"" + v.name() + "\" is an integer variable; got " + std::to_string(value));
    return bind_int_at(u, slot, static_cast<int64_t>(value));
  }
  if (!(value >= v.fmin() && value <= v.fmax())) throw JitError("variable \"" + v.name() + "\" = " + std::to_string(value) + " is outside its bounds");
  if (u.vars[slot].f == value) return;
  set_var(u, static_cast<uint32_t>(slot), {0, value});
}

void bind_at(UnitImpl& u, const ExecutionUnit& unit, const BoundVar& bv) {
  const size_t slot = unit.variable_slot(bv.var);
  if (bv.var.is_float()) bind_float_at(u, slot, bv.f);
  else bind_int_at(u, slot, bv.i);
}

}  // namespace

// TinyJit's call binds its flattened input buffers (JitCore::check_and_bind) as bind_input would,
// slot by slot, under one mark. A buffer that changes its slot is moved in, and the slot's old
// buffer moved out into `ins`; `ins` is then cleared (nothing reads the call's copies after this).
// Copying in and releasing the call's copy at the next call cost two atomic reference-count
// updates per slot: the stencil's call on NULL (two slots swapping) went from 145-150 to 117-120
// ns. On an error, the slots before the failing one stay bound, as with bind_input.
void detail::take_inputs(ExecutionUnit& unit, std::vector<Buffer>& ins) {
  UnitImpl& u = UnitImpl::of(unit);
  UnitMark mark(u, "bind_input");
  for (size_t s = 0; s < ins.size(); ++s)
    if (input_changes(u, s, ins[s])) {
      std::swap(u.inputs[s], ins[s]);
      note_changed(u, s);
    }
  ins.clear();
}

ExecutionUnit& ExecutionUnit::bind_input(size_t slot, const Buffer& b) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "bind_input");
  bind_input_at(u, slot, b);
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var(size_t slot, int64_t value) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "bind_var");
  bind_int_at(u, slot, value);
  return *this;
}

ExecutionUnit& ExecutionUnit::bind_var_f(size_t slot, double value) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "bind_var_f");
  bind_float_at(u, slot, value);
  return *this;
}

ExecutionUnit& ExecutionUnit::bind(const BoundVar& bv) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "bind");
  bind_at(u, *this, bv);
  return *this;
}

size_t ExecutionUnit::num_host_inputs() const { return need(impl_).host_now.size(); }

ExecutionUnit& ExecutionUnit::bind_host_input(size_t slot, const void* data, size_t bytes) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "bind_host_input");
  if (slot >= u.host_now.size())
    throw JitError("host input slot " + std::to_string(slot) + " out of range: the capture has " + std::to_string(u.host_now.size()) +
                   " host inputs");
  const size_t want = u.host_captured[slot].size();
  if (bytes != want)
    throw JitError("host input " + std::to_string(slot) + ": captured " + std::to_string(want) + " bytes, given " + std::to_string(bytes) +
                   " bytes (a host input keeps its capture's size; another size is another capture)");
  if (!data && bytes) throw JitError("host input " + std::to_string(slot) + ": null data for " + std::to_string(bytes) + " bytes");
  u.host_now[slot] = static_cast<const unsigned char*>(data);
  return *this;
}

ExecutionUnit& ExecutionUnit::update(const std::map<Buffer, Buffer>& buffers, std::span<const BoundVar> var_vals) {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "update");
  for (const auto& [from, to] : buffers) {
    size_t slot = SIZE_MAX;
    for (size_t s = 0; s < u.plan.inputs.size() && slot == SIZE_MAX; ++s)
      if (u.plan.inputs[s] == from) slot = s;
    if (slot == SIZE_MAX) throw JitError("update: " + from.describe() + " is not an input of this unit");
    bind_input_at(u, slot, to);
  }
  for (const BoundVar& v : var_vals) bind_at(u, *this, v);
  return *this;
}

void ExecutionUnit::operator()() { run_unit(need(impl_)); }

Event ExecutionUnit::run(std::span<const Event> wait_for) {
  UnitImpl& u = need(impl_);
  check_not_replaying(u, "run");
  if (!wait_for.empty())
    for (auto& d : u.plan.devices) d->enqueue_wait(wait_for);
  // the completion: the replay's own events (its last kernel's on each device, or a marker)
  const size_t nd = u.plan.devices.size();
  std::vector<OwnedEvent> done(nd);
  run_unit(u, done.data());
  std::vector<std::shared_ptr<EventImpl>> parts;
  for (size_t d = 0; d < nd; ++d) {
    auto& dev = u.plan.devices[d];
    dev->flush();  // a kernel's own event is not flushed: a caller that only polls done() must still see it complete
    if (done[d]) parts.push_back(std::make_shared<QueueEvent>(dev, std::move(done[d])));
  }
  if (parts.empty()) return Event();
  if (parts.size() == 1) return Event(std::move(parts[0]));
  auto all = std::make_shared<AllEvent>();
  all->parts = std::move(parts);
  return Event(std::move(all));
}

bool ExecutionUnit::times_on_device() const {
  UnitImpl& u = need(impl_);
  for (auto& d : u.plan.devices)
    if (!d->profiling) return false;
  return !u.plan.devices.empty();
}

double ExecutionUnit::run_and_wait() {
  UnitImpl& u = need(impl_);
  check_not_replaying(u, "run_and_wait");
  auto& devs = u.plan.devices;
  if (devs.size() == 1 && devs[0]->profiling) {
    uint64_t t0 = 0, t1 = 0;
    if (devs[0]->device_clock(&t0)) {
      run_unit(u);
      if (devs[0]->device_clock(&t1)) return static_cast<double>(t1 - t0) * 1e-9;
    }
  }
  for (auto& d : devs) d->finish();
  auto t0 = std::chrono::steady_clock::now();
  run_unit(u);
  for (auto& d : devs) d->finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ExecutionUnit ExecutionUnit::operator+(const ExecutionUnit& o) const {
  const Plan& a = need(impl_).plan;
  const Plan& b = need(o.impl_).plan;
  std::vector<ExecItem> items = a.items;
  items.insert(items.end(), b.items.begin(), b.items.end());
  std::vector<Buffer> inputs = a.inputs;
  for (const Buffer& x : b.inputs)
    if (std::find(inputs.begin(), inputs.end(), x) == inputs.end()) inputs.push_back(x);
  // b's host inputs follow a's (their slots shift), each starting from its capture's bytes: the
  // bytes bound to it now may be gone
  std::vector<std::vector<unsigned char>> hosts = impl_->host_captured;
  hosts.insert(hosts.end(), o.impl_->host_captured.begin(), o.impl_->host_captured.end());
  for (size_t i = a.items.size(); i < items.size(); ++i) {
    if (items[i].host_slot >= 0) items[i].host_slot += static_cast<int32_t>(impl_->host_captured.size());
    for (Arg& x : items[i].args)
      if (x.kind == Arg::Kind::bytes && x.host_slot >= 0) x.host_slot += static_cast<int32_t>(impl_->host_captured.size());
  }
  std::vector<Buffer> outputs = a.outputs;
  outputs.insert(outputs.end(), b.outputs.begin(), b.outputs.end());
  std::vector<BufferImpl*> internal = a.internal;
  internal.insert(internal.end(), b.internal.begin(), b.internal.end());
  std::vector<uint64_t> ids;
  for (BufferImpl* r : internal) ids.push_back(r->capture_id);
  for (const Buffer& x : outputs)
    if (x) ids.push_back(x.impl()->root()->capture_id);
  ExecutionUnit r;
  r.impl_ = make_unit(std::move(items), std::move(inputs), std::move(outputs), a.opt, std::move(internal), ids, {}, std::move(hosts));
  return r;
}

// A TinyJit's unit shares its arenas with the jit's other units (ArenaPool): dropping its binding
// lets go of its hold, and the pool releases an arena when no unit is bound to it any more.
void ExecutionUnit::free_intermediates() {
  UnitImpl& u = need(impl_);
  UnitMark mark(u, "free_intermediates");
  u.flight.settle(u.plan.devices);
  u.bound.reset();
  if (u.arena_pool) u.arena_pool->release_unused();
}

}  // namespace encore
