// C API: explicit capture, execution units, and a TinyJit over a C step callback.
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "capi/handles.hpp"
#include "capi/sized.hpp"
#include "encore/jit.hpp"

namespace encore::capi {

const std::vector<Event>& wait_events(const encore_event* wait_list, size_t num_wait) {
  thread_local std::vector<Event> events;
  events.clear();
  if (num_wait == 0) return events;
  need(wait_list, "wait_list (with num_wait > 0)");
  for (size_t i = 0; i < num_wait; ++i) {
    auto e = get_at<EventObj>(wait_list[i], "wait_list", i);
    for (const Event& p : e->parts) events.push_back(p);
  }
  return events;
}

void fill_stats(const UnitStats& s, encore_unit_stats* out) {
  out->items = s.items;
  out->items_pruned = s.items_pruned;
  out->items_replayed = s.items_replayed;
  out->inputs = s.inputs;
  out->variables = s.variables;
  out->temp_bytes_naive = s.temp_bytes_naive;
  out->temp_bytes_planned = s.temp_bytes_planned;
  out->planned_temps = s.planned_temps;
}

namespace {

std::shared_ptr<UnitObj> make_unit(ExecutionUnit u) {
  auto o = std::make_shared<UnitObj>();
  o->unit = std::move(u);
  return o;
}

// A completion event of all work queued so far on `devices` (one marker each; none on NULL).
std::shared_ptr<EventObj> markers(std::span<const Device> devices) {
  auto ev = std::make_shared<EventObj>();
  for (const Device& d : devices)
    if (Event e = d.marker()) ev->parts.push_back(std::move(e));
  return ev;
}

void check_slot(size_t slot, size_t n, const char* what) {
  if (slot >= n)
    fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string(what) + ": slot " + std::to_string(slot) + " is out of range (the unit has " +
                                            std::to_string(n) + ")");
}

// A C bound variable as a BoundVar, bounds checked.
BoundVar to_bound(const encore_bound_var& b, size_t i) {
  auto v = get_at<VariableObj>(b.var, "vars", i);
  const Variable& var = v->var;
  auto what = [&] { return "vars[" + std::to_string(i) + "]"; };
  if (!var.is_float()) {
    if (b.i < var.min() || b.i > var.max())
      fail(ENCORE_ERROR_INVALID_ARGUMENT, what() + ": value " + std::to_string(b.i) + " of variable \"" + var.name() +
                                              "\" is outside its bounds [" + std::to_string(var.min()) + ", " +
                                              std::to_string(var.max()) + "]");
    return BoundVar{var, b.i, static_cast<double>(b.i)};
  }
  if (!(b.f >= var.fmin() && b.f <= var.fmax()))
    fail(ENCORE_ERROR_INVALID_ARGUMENT, what() + ": value " + std::to_string(b.f) + " of float variable \"" + var.name() +
                                            "\" is outside its bounds (or NaN)");
  return BoundVar{var, 0, b.f};
}

}  // namespace

// A TinyJit whose callable calls the C step with the handles of the current call.
struct JitObj : Object {
  using Hosts = std::vector<std::span<const unsigned char>>;  // TinyJit's host inputs
  using Fn = std::function<std::vector<Buffer>(const std::vector<Buffer>&, const std::vector<BoundVar>&, const Hosts&)>;

  encore_step_fn fn = nullptr;
  void* userdata = nullptr;
  size_t num_outputs = 0;
  std::mutex mu;  // serialises calls; guards everything below
  std::optional<TinyJit<Fn>> jit;
  // the call in progress (the step runs inside it)
  const encore_buffer* cur_inputs = nullptr;
  size_t cur_num_inputs = 0;
  const encore_bound_var* cur_vars = nullptr;
  size_t cur_num_vars = 0;
  std::vector<Buffer> in_bufs;
  std::vector<BoundVar> var_vals;
  Hosts hosts;
  std::vector<encore_buffer> handed;  // what the step fills in
  // handles given to the caller, reused while they name the same buffer
  std::vector<encore_buffer> out_handles;
  std::vector<Buffer> out_bufs;
  std::vector<Device> eager_devices;  // every device an eager call's inputs and outputs were on

  ~JitObj() override {
    for (encore_buffer h : out_handles) release(h);
  }
  static void release(encore_buffer h) noexcept {
    if (!h) return;
    try {
      remove_object(raw(h), Kind::buffer, "output");
    } catch (...) {  // the caller destroyed it already
    }
  }

  bool is_input(encore_buffer h) const {
    for (size_t i = 0; i < cur_num_inputs; ++i)
      if (cur_inputs[i] == h) return true;
    return false;
  }

  // The callable TinyJit runs on eager calls: the C step, then its handed-over outputs as Buffers.
  std::vector<Buffer> step() {
    handed.assign(num_outputs, nullptr);
    const encore_status returned = fn(userdata, cur_inputs, cur_num_inputs, cur_vars, cur_num_vars, handed.data(), num_outputs);
    const int32_t code = enum_bits(returned);  // C may return any int: never loaded as the enum
    const bool known = code > ENCORE_OK && code <= ENCORE_ERROR_UNKNOWN;
    const encore_status s = code == ENCORE_OK ? ENCORE_OK : known ? static_cast<encore_status>(code) : ENCORE_ERROR_UNKNOWN;
    std::string inner = s != ENCORE_OK ? encore_last_error() : "";
    // take over every handle the step handed out, also on failure, so none leaks
    std::vector<Buffer> outs(num_outputs);
    std::string problem;
    for (size_t k = 0; k < num_outputs; ++k) {
      encore_buffer h = handed[k];
      if (!h) {
        if (problem.empty()) problem = "outputs[" + std::to_string(k) + "] was left NULL by the step callback";
        continue;
      }
      try {
        if (is_input(h)) {
          outs[k] = get<BufferObj>(h, "output")->buf;  // borrowed: not ours to destroy
          continue;
        }
        bool seen = false;
        for (size_t j = 0; j < k && !seen; ++j)
          if (handed[j] == h) outs[k] = outs[j], seen = true;
        if (!seen) outs[k] = std::static_pointer_cast<BufferObj>(remove_object(raw(h), Kind::buffer, "output"))->buf;
      } catch (const StatusError& e) {
        if (problem.empty()) problem = "outputs[" + std::to_string(k) + "] from the step callback: " + e.what();
      }
    }
    if (s != ENCORE_OK)
      fail(s, std::string("the step callback returned ") +
                  (known ? std::string(encore_status_name(s)) : std::to_string(code) + " (not an encore_status)") +
                  (inner.empty() ? std::string() : " (last error on this thread: " + inner + ")"));
    if (!problem.empty()) fail(ENCORE_ERROR_INVALID_ARGUMENT, problem);
    for (const Buffer& b : in_bufs) add_device(eager_devices, b.device());
    for (const Buffer& b : outs) add_device(eager_devices, b.device());
    return outs;
  }
};

namespace {

// The argument arrays of a jit call (or drop): present where counted, host bytes non-NULL.
void check_call_arrays(const encore_buffer* inputs, size_t num_inputs, const encore_host_input* hosts, size_t num_hosts,
                       const encore_bound_var* vars, size_t num_vars) {
  if (num_inputs) need(inputs, "inputs (with num_inputs > 0)");
  if (num_vars) need(vars, "vars (with num_vars > 0)");
  if (num_hosts) need(hosts, "hosts (with num_hosts > 0)");
  for (size_t i = 0; i < num_hosts; ++i)
    if (!hosts[i].data && hosts[i].bytes)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "hosts[" + std::to_string(i) + "].data is NULL for " + std::to_string(hosts[i].bytes) + " bytes");
}

// The C arrays as the TinyJit's arguments (handles and bounds checked), into reused vectors.
void to_call_args(const encore_buffer* inputs, size_t num_inputs, const encore_host_input* hosts, size_t num_hosts,
                  const encore_bound_var* vars, size_t num_vars, std::vector<Buffer>& bufs, std::vector<BoundVar>& vals, JitObj::Hosts& hs) {
  bufs.clear();
  for (size_t i = 0; i < num_inputs; ++i) bufs.push_back(get_at<BufferObj>(inputs[i], "inputs", i)->buf);
  vals.clear();
  for (size_t i = 0; i < num_vars; ++i) vals.push_back(to_bound(vars[i], i));
  hs.clear();
  for (size_t i = 0; i < num_hosts; ++i) hs.emplace_back(static_cast<const unsigned char*>(hosts[i].data), hosts[i].bytes);
}

// Hands the call's outputs to the caller as handles owned by the jit.
void publish_outputs(JitObj& j, const std::vector<Buffer>& outs, encore_buffer* outputs) {
  j.out_handles.resize(outs.size(), nullptr);
  j.out_bufs.resize(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    // reused only while live: the caller may have destroyed it, or the step handed it back to us
    // (which took it over) as its output
    bool live = j.out_handles[k] && j.out_bufs[k] == outs[k] && find_object(raw(j.out_handles[k]), Kind::buffer);
    if (!live) {
      JitObj::release(j.out_handles[k]);
      j.out_handles[k] = nullptr;
      auto o = std::make_shared<BufferObj>();
      o->buf = outs[k];
      put(std::move(o), &j.out_handles[k]);
      j.out_bufs[k] = outs[k];
    }
    if (outputs) outputs[k] = j.out_handles[k];
  }
}

// The sizes each option struct had in each release (encore.h: fields are only appended).
constexpr size_t kUnitOptionsSizes[] = {offsetof(encore_unit_options, concurrent), sizeof(encore_unit_options)};
constexpr size_t kPlanStatsSizes[] = {offsetof(encore_unit_plan_stats, longest_chain), sizeof(encore_unit_plan_stats)};

// out->size (the caller's) says how much of it to fill.
void fill_plan_stats(const UnitStats& s, encore_unit_plan_stats* out) {
  size_t size = 0;
  std::memcpy(&size, out, sizeof size);
  write_sized(out, size, kPlanStatsSizes, encore_unit_plan_stats{sizeof(encore_unit_plan_stats), s.temp_bytes_lower_bound, s.chains, s.longest_chain},
              "encore_unit_plan_stats", "set it to that before the call (encore_unit_plan_stats_default() does)");
}
constexpr size_t kJitOptionsSizes[] = {offsetof(encore_jit_options, concurrent), sizeof(encore_jit_options)};

encore_unit_options unit_defaults() {
  const UnitOptions u;
  const CaptureOptions c;
  return encore_unit_options{sizeof(encore_unit_options), u.prune, u.plan, c.allow_copyout, u.max_in_flight, u.min_items_in_flight, 0,
                             u.concurrent};
}

// The environment (ENCORE_JIT, ENCORE_VERIFY) applied.
encore_jit_options jit_defaults() {
  JitOptions j;
  try {
    j = JitOptions::from_env();
  } catch (...) {  // a malformed environment: the plain defaults
  }
  return encore_jit_options{sizeof(encore_jit_options), j.enabled,       j.unit.prune,   j.unit.plan,
                            j.capture.allow_copyout,    j.fresh_outputs, j.verify,       j.unit.max_in_flight,
                            j.max_units,                j.capture.check_closure,         j.unit.min_items_in_flight,
                            j.unit.concurrent,          j.capture.check_access};
}

UnitOptions to_unit_options(int prune, int plan, uint32_t max_in_flight, uint32_t min_items_in_flight, int concurrent) {
  UnitOptions u;
  u.concurrent = concurrent != 0;
  u.prune = prune != 0;
  u.plan = plan != 0;
  u.max_in_flight = max_in_flight;  // bounds: UnitOptions::validate (Capture) or JitOptions::validate
  u.min_items_in_flight = min_items_in_flight;
  return u;
}

JitOptions to_jit_options(const encore_jit_options& o) {
  JitOptions j;
  j.enabled = o.enabled != 0;
  j.unit = to_unit_options(o.prune, o.plan, o.max_in_flight, o.min_items_in_flight, o.concurrent);
  j.capture.allow_copyout = o.allow_copyout != 0;
  j.capture.check_closure = o.check_closure != 0;
  j.capture.check_access = o.check_access != 0;
  j.fresh_outputs = o.fresh_outputs != 0;
  j.verify = o.verify;
  j.max_units = o.max_units;
  j.validate();  // the C++ API's bounds, in its words (c_words.cpp: encore_jit_options.max_units, ...)
  return j;
}

thread_local std::vector<const JitObj*> jits_running;  // on this thread, innermost last

void check_not_running(const JitObj& j, const char* op) {
  for (const JitObj* r : jits_running)
    if (r == &j) fail(ENCORE_ERROR_INVALID_ARGUMENT, std::string("jit is running its step callback on this thread: it cannot be ") + op + " from inside it");
}

// Waits for a call in progress on another thread (one on this thread is an error: it would deadlock).
std::unique_lock<std::mutex> lock_idle(JitObj& j, const char* op) {
  check_not_running(j, op);
  return std::unique_lock<std::mutex>(j.mu);
}

}  // namespace

// ---- encore/c_handles.hpp

Device device_of(encore_device h, const char* what) { return get<DeviceObj>(h, what)->dev; }

std::shared_ptr<ExecutionUnit> unit_of(encore_unit h, const char* what) {
  std::shared_ptr<UnitObj> o = get<UnitObj>(h, what);
  return std::shared_ptr<ExecutionUnit>(o, &o->unit);
}

encore_unit to_handle(ExecutionUnit u, std::vector<std::pair<std::string, Buffer>> named) {
  std::shared_ptr<UnitObj> o = make_unit(std::move(u));
  o->named = std::move(named);
  encore_unit h = nullptr;
  put(std::move(o), &h);
  return h;
}

UnitOptions unit_options(const encore_unit_options* opt) {
  const encore_unit_options o = read_sized(opt, kUnitOptionsSizes, unit_defaults(), "encore_unit_options");
  const UnitOptions u = to_unit_options(o.prune, o.plan, o.max_in_flight, o.min_items_in_flight, o.concurrent);
  u.validate();  // the C++ API's bounds, in its words (Capture's constructor checks them too)
  return u;
}

}  // namespace encore::capi

using namespace encore;
using namespace encore::capi;

extern "C" {

// ---- capture

encore_status encore_unit_options_init(encore_unit_options* opt, size_t size) {
  return guard(__func__, [&] {
    need(opt, "opt");
    write_sized(opt, size, kUnitOptionsSizes, unit_defaults(), "encore_unit_options");
  });
}

encore_status encore_capture_begin(const encore_unit_options* opt, encore_capture* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    check_not_in_native("begin a capture");
    const UnitOptions u = unit_options(opt);
    CaptureOptions c;
    c.allow_copyout = read_sized(opt, kUnitOptionsSizes, unit_defaults(), "encore_unit_options").allow_copyout != 0;
    c.validate();
    auto cap = std::make_shared<CaptureObj>();
    cap->cap = std::make_unique<Capture>(u, c);
    put(std::move(cap), out);
  });
}

encore_status encore_capture_add_input(encore_capture cap, encore_buffer buf, size_t* slot) {
  return guard(__func__, [&] {
    auto c = get<CaptureObj>(cap, "cap");
    auto b = get<BufferObj>(buf, "buf");
    size_t s = c->cap->add_input(b->buf);
    if (slot) *slot = s;
  });
}

encore_status encore_capture_add_host_input(encore_capture cap, const void* data, size_t bytes, size_t* slot) {
  return guard(__func__, [&] {
    auto c = get<CaptureObj>(cap, "cap");
    if (bytes) need(data, "data (with bytes > 0)");
    size_t s = c->cap->add_host_input(data, bytes);
    if (slot) *slot = s;
  });
}

encore_status encore_capture_add_output(encore_capture cap, encore_buffer buf) {
  return guard(__func__, [&] {
    auto c = get<CaptureObj>(cap, "cap");
    c->cap->add_output(get<BufferObj>(buf, "buf")->buf);
  });
}

encore_status encore_capture_check_against(encore_capture cap, encore_unit previous) {
  return guard(__func__, [&] {
    auto c = get<CaptureObj>(cap, "cap");
    c->cap->check_against(get<UnitObj>(previous, "previous")->unit);
  });
}

encore_status encore_capture_end(encore_capture cap, encore_unit* out) {
  return guard(__func__, [&] {
    if (out) *out = nullptr;
    check_not_in_native("end a capture");
    auto c = std::static_pointer_cast<CaptureObj>(remove_object(raw(cap), Kind::capture, "cap"));
    need(out, "out");  // cap is consumed either way (its capture abandoned)
    ExecutionUnit u = c->cap->end();
    put(make_unit(std::move(u)), out);
  });
}

encore_status encore_capture_destroy(encore_capture cap) {
  // the capture in progress records the launch that runs the callback, after the callback
  encore_status s = guard(__func__, [&] { check_not_in_native("destroy a capture"); });
  return s != ENCORE_OK ? s : destroy<CaptureObj>(__func__, cap);
}

// ---- units

encore_status encore_unit_destroy(encore_unit unit) { return destroy<UnitObj>(__func__, unit); }

encore_status encore_unit_counts(encore_unit unit, size_t* num_inputs, size_t* num_variables) {
  return guard(__func__, [&] {
    auto u = get<UnitObj>(unit, "unit");
    need(num_inputs, "num_inputs");
    need(num_variables, "num_variables");
    *num_inputs = u->unit.num_inputs();
    *num_variables = u->unit.num_variables();
  });
}

encore_status encore_unit_variable_slot(encore_unit unit, encore_variable var, size_t* slot) {
  return guard(__func__, [&] {
    auto u = get<UnitObj>(unit, "unit");
    auto v = get<VariableObj>(var, "var");
    need(slot, "slot");
    *slot = u->unit.variable_slot(v->var);
  });
}

encore_status encore_unit_bind_input(encore_unit unit, size_t slot, encore_buffer buf) {
  return guard(__func__, [&] {
    check_not_in_native("bind a unit's inputs");
    auto u = get<UnitObj>(unit, "unit");
    check_slot(slot, u->unit.num_inputs(), "input");
    u->unit.bind_input(slot, get<BufferObj>(buf, "buf")->buf);
  });
}

encore_status encore_unit_bind_host_input(encore_unit unit, size_t slot, const void* data, size_t bytes) {
  return guard(__func__, [&] {
    check_not_in_native("bind a unit's host inputs");
    auto u = get<UnitObj>(unit, "unit");
    check_slot(slot, u->unit.num_host_inputs(), "host input");
    if (bytes) need(data, "data (with bytes > 0)");
    u->unit.bind_host_input(slot, data, bytes);
  });
}

encore_status encore_unit_bind_var_int(encore_unit unit, size_t slot, int64_t value) {
  return guard(__func__, [&] {
    check_not_in_native("bind a unit's variables");
    auto u = get<UnitObj>(unit, "unit");
    check_slot(slot, u->unit.num_variables(), "variable");
    u->unit.bind_var(slot, value);
  });
}

encore_status encore_unit_bind_var_float(encore_unit unit, size_t slot, double value) {
  return guard(__func__, [&] {
    check_not_in_native("bind a unit's variables");
    auto u = get<UnitObj>(unit, "unit");
    check_slot(slot, u->unit.num_variables(), "variable");
    u->unit.bind_var_f(slot, value);
  });
}

encore_status encore_unit_run(encore_unit unit, const encore_event* wait_list, size_t num_wait, encore_event* done_out) {
  return guard(__func__, [&] {
    if (done_out) *done_out = nullptr;
    check_not_in_native("run a unit");
    auto u = get<UnitObj>(unit, "unit");
    const std::vector<Event>& waits = wait_events(wait_list, num_wait);
    if (!done_out) {
      if (waits.empty())
        u->unit();  // no event asked for: no marker made
      else
        u->unit.run(waits);
      return;
    }
    auto ev = std::make_shared<EventObj>();
    ev->parts.push_back(u->unit.run(waits));
    put(std::move(ev), done_out);
  });
}

encore_status encore_unit_run_and_wait(encore_unit unit, double* seconds) {
  return guard(__func__, [&] {
    check_not_in_native("run a unit");
    double s = get<UnitObj>(unit, "unit")->unit.run_and_wait();
    if (seconds) *seconds = s;
  });
}

encore_status encore_unit_free_intermediates(encore_unit unit) {
  return guard(__func__, [&] {
    check_not_in_native("free a unit's intermediates");
    get<UnitObj>(unit, "unit")->unit.free_intermediates();
  });
}

encore_status encore_unit_get_stats(encore_unit unit, encore_unit_stats* out) {
  return guard(__func__, [&] {
    auto u = get<UnitObj>(unit, "unit");
    need(out, "out");
    fill_stats(u->unit.stats(), out);
  });
}

encore_status encore_unit_get_plan_stats(encore_unit unit, encore_unit_plan_stats* out) {
  return guard(__func__, [&] {
    auto u = get<UnitObj>(unit, "unit");
    need(out, "out");
    fill_plan_stats(u->unit.stats(), out);
  });
}

encore_status encore_unit_buffer(encore_unit unit, const char* name, encore_buffer* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto u = get<UnitObj>(unit, "unit");
    need(name, "name");
    for (const auto& [n, b] : u->named)
      if (n == name) {
        auto o = std::make_shared<BufferObj>();
        o->buf = b;
        put(std::move(o), out);
        return;
      }
    std::string known;
    for (const auto& nb : u->named) known += (known.empty() ? "" : ", ") + nb.first;
    fail(ENCORE_ERROR_INVALID_ARGUMENT,
         "the unit has no buffer named \"" + std::string(name) + "\" (" +
             (known.empty() ? "it names none: a captured unit's buffers are the caller's own handles; encore_unit_load names a saved file's"
                            : "its buffers: " + known + "; temporaries belong to the unit") +
             ")");
  });
}

encore_status encore_unit_concat(encore_unit a, encore_unit b, encore_unit* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    auto ua = get<UnitObj>(a, "a");
    auto ub = get<UnitObj>(b, "b");
    put(make_unit(ua->unit + ub->unit), out);
  });
}

// ---- events

encore_status encore_event_wait(encore_event ev) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");  // held: another thread may destroy the handle meanwhile
    for (const Event& p : e->parts) p.wait();
  });
}

encore_status encore_event_done(encore_event ev, int* done) {
  return guard(__func__, [&] {
    auto e = get<EventObj>(ev, "ev");
    need(done, "done");
    int all = 1;
    for (const Event& p : e->parts) all &= p.done() ? 1 : 0;
    *done = all;
  });
}

encore_status encore_event_destroy(encore_event ev) { return destroy<EventObj>(__func__, ev); }

encore_status encore_buffer_read_async(encore_buffer buf, size_t offset, void* dst, size_t count, encore_event* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    check_not_in_native("enqueue a read");
    auto b = get<BufferObj>(buf, "buf");
    const size_t es = size(b->buf.dtype());
    size_t off = 0, n = 0, end = 0;
    if (count == 0 || __builtin_mul_overflow(offset, es, &off) || __builtin_mul_overflow(count, es, &n) || __builtin_add_overflow(off, n, &end) ||
        end > b->buf.nbytes())
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " + std::to_string(count) +
                                              ") do not fit in " + b->buf.describe() + " (" + std::to_string(b->buf.count()) + " elements)");
    need(dst, "dst");
    auto ev = std::make_shared<EventObj>();
    if (Event e = b->buf.copyout_async_bytes(dst, n, off)) ev->parts.push_back(std::move(e));
    put(std::move(ev), out);  // (a failure here: the event goes, waiting for the read)
  });
}

// ---- jit

encore_status encore_jit_options_init(encore_jit_options* opt, size_t size) {
  return guard(__func__, [&] {
    need(opt, "opt");
    write_sized(opt, size, kJitOptionsSizes, jit_defaults(), "encore_jit_options");
  });
}

encore_status encore_jit_create(encore_step_fn fn, void* userdata, size_t num_outputs, const encore_jit_options* opt,
                                encore_jit* out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    if (!fn) fail(ENCORE_ERROR_INVALID_ARGUMENT, "fn is NULL");
    if (num_outputs > kMaxOutputs)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "num_outputs: at most " + std::to_string(kMaxOutputs) + ", found " + std::to_string(num_outputs));
    JitOptions jo = to_jit_options(read_sized(opt, kJitOptionsSizes, jit_defaults(), "encore_jit_options"));
    auto j = std::make_shared<JitObj>();
    j->fn = fn;
    j->userdata = userdata;
    j->num_outputs = num_outputs;
    JitObj* self = j.get();  // the object outlives its TinyJit (a member)
    j->jit.emplace(JitObj::Fn([self](const std::vector<Buffer>&, const std::vector<BoundVar>&, const JitObj::Hosts&) { return self->step(); }),
                   jo);
    put(std::move(j), out);
  });
}

encore_status encore_jit_destroy(encore_jit jit) {
  encore_status s = guard(__func__, [&] { check_not_running(*get<JitObj>(jit, "jit"), "destroyed"); });
  if (s != ENCORE_OK) return s;
  return destroy<JitObj>(__func__, jit);
}

// Both call forms; `func` names the one called in messages.
static encore_status jit_call(const char* func, encore_jit jit, const encore_buffer* inputs, size_t num_inputs, const encore_host_input* hosts,
                              size_t num_hosts, const encore_bound_var* vars, size_t num_vars, encore_buffer* outputs, size_t num_outputs,
                              const encore_event* wait_list, size_t num_wait, encore_event* done_out) {
  return guard(func, [&] {
    if (done_out) *done_out = nullptr;
    check_not_in_native("call a jit");
    auto j = get<JitObj>(jit, "jit");
    check_not_running(*j, "called");
    check_call_arrays(inputs, num_inputs, hosts, num_hosts, vars, num_vars);
    if (outputs && num_outputs != j->num_outputs)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "num_outputs: expected " + std::to_string(j->num_outputs) +
                                              " (as given to encore_jit_create), found " + std::to_string(num_outputs));
    std::lock_guard<std::mutex> lock(j->mu);
    const std::vector<Event>& waits = wait_events(wait_list, num_wait);
    to_call_args(inputs, num_inputs, hosts, num_hosts, vars, num_vars, j->in_bufs, j->var_vals, j->hosts);

    // TinyJit's answer: the unit this call replays (its slot lives on while the jit does), or null
    const ExecutionUnit* replaying = j->jit->unit_for(j->in_bufs, j->var_vals, j->hosts);
    if (replaying) {
      for (const Device& d : replaying->devices()) d.wait_for(waits);  // on the queues: no host wait
    } else {
      for (const Event& e : waits) e.wait();  // eager work may go to any device: wait here
    }

    j->cur_inputs = inputs;
    j->cur_num_inputs = num_inputs;
    j->cur_vars = vars;
    j->cur_num_vars = num_vars;
    jits_running.push_back(j.get());
    struct Pop {
      ~Pop() { jits_running.pop_back(); }
    } pop;
    std::vector<Buffer> outs = (*j->jit)(j->in_bufs, j->var_vals, j->hosts);
    publish_outputs(*j, outs, outputs);
    if (done_out) put(markers(replaying ? replaying->devices() : std::span<const Device>(j->eager_devices)), done_out);
  });
}

encore_status encore_jit_call(encore_jit jit, const encore_buffer* inputs, size_t num_inputs, const encore_bound_var* vars, size_t num_vars,
                              encore_buffer* outputs, size_t num_outputs, const encore_event* wait_list, size_t num_wait, encore_event* done_out) {
  return jit_call(__func__, jit, inputs, num_inputs, nullptr, 0, vars, num_vars, outputs, num_outputs, wait_list, num_wait, done_out);
}

encore_status encore_jit_call_hosts(encore_jit jit, const encore_buffer* inputs, size_t num_inputs, const encore_host_input* hosts,
                                    size_t num_hosts, const encore_bound_var* vars, size_t num_vars, encore_buffer* outputs,
                                    size_t num_outputs, const encore_event* wait_list, size_t num_wait, encore_event* done_out) {
  return jit_call(__func__, jit, inputs, num_inputs, hosts, num_hosts, vars, num_vars, outputs, num_outputs, wait_list, num_wait, done_out);
}

encore_status encore_jit_calls(encore_jit jit, uint64_t* calls) {
  return guard(__func__, [&] {
    auto j = get<JitObj>(jit, "jit");
    need(calls, "calls");
    auto lock = lock_idle(*j, "queried");
    *calls = j->jit->calls();
  });
}

encore_status encore_jit_reset(encore_jit jit) {
  return guard(__func__, [&] {
    check_not_in_native("reset a jit");
    auto j = get<JitObj>(jit, "jit");
    auto lock = lock_idle(*j, "reset");
    j->jit->reset();
  });
}

encore_status encore_jit_drop(encore_jit jit, const encore_buffer* inputs, size_t num_inputs, const encore_host_input* hosts, size_t num_hosts,
                              const encore_bound_var* vars, size_t num_vars, int* dropped) {
  return guard(__func__, [&] {
    if (dropped) *dropped = 0;
    check_not_in_native("drop a jit's unit");
    auto j = get<JitObj>(jit, "jit");
    check_call_arrays(inputs, num_inputs, hosts, num_hosts, vars, num_vars);
    auto lock = lock_idle(*j, "asked to drop a unit");
    std::vector<Buffer> bufs;
    std::vector<BoundVar> vals;
    JitObj::Hosts hs;  // (the signature reads the sizes only)
    to_call_args(inputs, num_inputs, hosts, num_hosts, vars, num_vars, bufs, vals, hs);
    // the last call's arguments, held until the next call: let go with the unit
    j->in_bufs.clear();
    j->var_vals.clear();
    j->hosts.clear();
    const bool d = j->jit->drop(bufs, vals, hs);
    if (dropped) *dropped = d ? 1 : 0;
  });
}

encore_status encore_jit_get_stats(encore_jit jit, encore_unit_stats* out) {
  return guard(__func__, [&] {
    auto j = get<JitObj>(jit, "jit");
    need(out, "out");
    auto lock = lock_idle(*j, "queried");
    if (const ExecutionUnit& u = j->jit->unit()) {  // the last call's signature, from its call 2 on
      fill_stats(u.stats(), out);
      return;
    }
    fail(ENCORE_ERROR_JIT, "the jit has no captured unit yet (" + std::to_string(j->jit->calls()) +
                               " calls; the capture is call 1, so stats exist from call 2 on)");
  });
}

encore_status encore_jit_get_plan_stats(encore_jit jit, encore_unit_plan_stats* out) {
  return guard(__func__, [&] {
    auto j = get<JitObj>(jit, "jit");
    need(out, "out");
    auto lock = lock_idle(*j, "queried");
    if (const ExecutionUnit& u = j->jit->unit()) {
      fill_plan_stats(u.stats(), out);
      return;
    }
    fail(ENCORE_ERROR_JIT, "the jit has no captured unit yet (" + std::to_string(j->jit->calls()) +
                               " calls; the capture is call 1, so stats exist from call 2 on)");
  });
}

}  // extern "C"
