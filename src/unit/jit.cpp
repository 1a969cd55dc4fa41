// TinyJit's non-template half and explicit capture scopes.
#include "encore/jit.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/env.hpp"
#include "exec/access_check.hpp"
#include "exec/kind.hpp"
#include "unit/capture_check.hpp"
#include "unit/unit.hpp"
#include "core/recorder.hpp"
#include "core/scalar.hpp"
#include "trace/trace.hpp"

namespace encore {

using namespace detail;

JitOptions JitOptions::from_env() {
  JitOptions o;
  o.enabled = env::jit();
  o.verify = env::verify();
  return o;
}

void JitOptions::validate() const {
  // the LRU keeps max_units slots and the thrash count max_units + 1 call numbers: 0 would index an
  // empty ring, UINT32_MAX would wrap max_units + 1 to 0
  constexpr uint32_t kMaxUnits = 1024;
  if (max_units < 1 || max_units > kMaxUnits)
    throw ArgumentError("JitOptions::max_units: expected 1 to " + std::to_string(kMaxUnits) + " units (one per input signature), found " +
                        std::to_string(max_units));
  if (verify < 0) throw ArgumentError("JitOptions::verify: expected a count of replays to check, 0 or more, found " + std::to_string(verify));
  check_unit_options(unit, "JitOptions::unit.max_in_flight");
  capture.validate();
  if (capture.record_only)
    throw ArgumentError("JitOptions::capture.record_only: a TinyJit's warm-up and capture calls run the step, so they cannot record only "
                        "(it is for an explicit Capture of a step described elsewhere)");
}

namespace detail {

namespace {

std::string scalar_str(const ScalarSeen& s) {
  if (s.kind == 'f') {
    double d;
    std::memcpy(&d, &s.bits, 8);
    return std::to_string(d);
  }
  if (s.kind == 'u') return std::to_string(s.bits);
  int64_t v = 0;
  if (s.size == 8) std::memcpy(&v, &s.bits, 8);
  else if (s.size == 4) { int32_t x; std::memcpy(&x, &s.bits, 4); v = x; }
  else if (s.size == 2) { int16_t x; std::memcpy(&x, &s.bits, 2); v = x; }
  else { int8_t x; std::memcpy(&x, &s.bits, 1); v = x; }
  return (s.kind == 'e' ? "enum value " : "") + std::to_string(v);
}


std::vector<unsigned char> read_all(const Buffer& b) {
  std::vector<unsigned char> v(b.nbytes());
  BufferImpl& i = *b.impl();
  i.ensure_allocated();
  i.dev->read(i.root()->mem, i.offset, v.data(), v.size());
  return v;
}

// Puts back bytes read_all took, without a version bump: verify restores versions itself.
void write_all(const Buffer& b, const std::vector<unsigned char>& v) {
  BufferImpl& i = *b.impl();
  i.dev->write(i.root()->mem, i.offset, v.data(), v.size(), true);
}

// First differing element of two host copies of `b`, or "" when equal.
std::string first_difference(const Buffer& b, const std::vector<unsigned char>& expect, const std::vector<unsigned char>& got) {
  if (expect == got) return {};
  size_t es = size(b.dtype());
  for (size_t i = 0; i < expect.size() / es; ++i)
    if (std::memcmp(expect.data() + i * es, got.data() + i * es, es) != 0)
      return "element " + std::to_string(i) + ": eager " + value_str(b.dtype(), expect.data() + i * es) + ", replay " + value_str(b.dtype(), got.data() + i * es);
  return "bytes differ";
}

}  // namespace

}  // namespace detail

// A capture in progress. TinyJit's capture (call 1) is one of these too, with its inputs, its
// arena pool and its check of call 1 against call 0 filled in by JitCore.
struct Capture::State {
  std::shared_ptr<Recorder> rec;
  UnitOptions opt;
  std::vector<Buffer> inputs, outputs;
  std::shared_ptr<ArenaPool> pool;  // a TinyJit's shared arenas (null: the unit's own)
  const char* nothing_recorded = "Capture::end: no device work was issued on this thread during the capture";
  bool active = true;
  bool record_only = false;  // CaptureOptions::record_only: nothing ran, the first run runs every item
  std::shared_ptr<const CallRecord> previous;  // Capture::check_against's recording
};

namespace detail {

struct CaptureAccess {
  static Capture::State& state(Capture& c) { return *c.s_; }
  // The one way a capture ends: stop recording, refuse an empty step, let `check` see the recorded
  // items (TinyJit's comparison with call 0; it throws to refuse them), then plan and bind.
  using Check = std::function<void(const std::vector<ExecItem>& items, uint64_t capture_id)>;
  static ExecutionUnit end(Capture& c, const Check* check) {
    Capture::State& s = state(c);
    if (!s.active) throw JitError("Capture::end called twice");
    if (current_recorder() != s.rec.get()) throw JitError("Capture::end must be called on the thread that began the capture");
    stop_recording(s.rec.get());
    trace_span("record", s.rec->started_us);
    s.active = false;
    finish_access_checks(*s.rec);  // (before call 0's comparison: as if each launch had thrown its own)
    std::vector<ExecItem> items = std::move(s.rec->items);
    if (items.empty()) throw JitError(s.nothing_recorded);
    if (check) (*check)(items, s.rec->id);
    if (s.record_only)
      for (const ExecItem& it : items)
        if (it.kind == ItemKind::host || it.kind == ItemKind::branch || it.kind == ItemKind::loop)
          throw JitError("Capture (record_only): " + it.describe() + " is a host item, branch or loop, which must run to be captured: "
                         "capture this step with record_only off");
    // an explicit capture keeps its compact form for the next one to compare with
    std::shared_ptr<const CallRecord> recorded;
    if (!check) recorded = std::make_shared<const CallRecord>(summarize_call(items, s.inputs, s.outputs, s.rec->id));
    if (s.previous) check_same_step(*s.previous, *recorded, items, s.outputs, kCaptureWords);
    std::vector<BufferImpl*> internal = find_internal(items, s.rec->id);
    std::vector<std::vector<unsigned char>> hosts;  // each host input's bytes now: its first binding
    for (auto [p, n] : s.rec->hosts) hosts.emplace_back(p, p + n);
    ExecutionUnit u = UnitAccess::wrap(
        make_unit(std::move(items), s.inputs, s.outputs, s.opt, std::move(internal), {s.rec->id}, s.pool, std::move(hosts)));
    UnitImpl::of(u).recorded = std::move(recorded);
    if (s.record_only) {
      // nothing ran: the first run runs the one-time items too (versions taken from now on, or
      // already at the bind make_unit did, read as changed)
      UnitImpl& ui = UnitImpl::of(u);
      ui.once_unrun = true;
      for (auto& [r, ver] : ui.once_versions) ver = ~r->version.load(std::memory_order_acquire);
    }
    return u;
  }
};

struct JitCore::State {
  JitOptions opt;
  std::shared_ptr<ArenaPool> pool;    // shared with the jit's other units (null: an arena of its own)
  std::vector<Buffer> outputs;        // captured outputs, in collect_outputs order
  std::unique_ptr<Capture> cap;       // call 1's, while it runs
  std::shared_ptr<Recorder> warm;     // call 0's recording, while it runs
  std::optional<CallRecord> call0;    // call 0 as recorded, until call 1 has been checked against it
  std::vector<ScalarSeen> scalars;
  std::vector<Variable> vars;         // captured BoundVar order
  std::vector<int64_t> var_slot;      // unit slot per BoundVar, -1 when the items do not use it
  // outputs that are (views of) inputs: slot, byte offset into it; slot -1 for other outputs
  struct OutSrc {
    int64_t slot = -1;
    size_t rel = 0;
    ViewCache views;  // the output as a view of recent inputs
  };
  std::vector<OutSrc> out_src;
  // verify mode
  std::vector<Buffer> state;          // non-internal storages the unit touches (roots)
  std::vector<std::vector<unsigned char>> before, eager_state, eager_out;
  std::vector<uint64_t> versions;     // of `state` then the inputs' roots, before the eager run
};

JitCore::JitCore(const JitOptions& o, std::shared_ptr<ArenaPool> pool)
    : verify_left_(o.verify), check_closure_(o.capture.check_closure), fresh_outputs_(o.fresh_outputs),
      s_(std::make_unique<State>()) {
  s_->opt = o;
  s_->pool = std::move(pool);
}
JitCore::~JitCore() {
  if (s_) stop_recording(s_->warm.get());  // a capture in progress stops with its Capture
}
JitCore::JitCore(JitCore&&) noexcept = default;
JitCore& JitCore::operator=(JitCore&&) noexcept = default;

bool JitCore::capture_active() { return current_recorder() != nullptr; }

void JitCore::begin_capture() {
  s_->cap = std::make_unique<Capture>(s_->opt.unit, s_->opt.capture);
  auto& c = CaptureAccess::state(*s_->cap);  // (Capture::State is private to Capture and its access)
  c.inputs = args_.buffers;
  for (const HostSpan& h : args_.hosts) c.rec->hosts.emplace_back(static_cast<const unsigned char*>(h.data), h.bytes());
  c.pool = s_->pool;
  c.nothing_recorded =
      "TinyJit: the callable issued no device work during capture (no launch, copy or copyin on this thread); there is nothing to replay";
  if (s_->call0) c.rec->items.reserve(s_->call0->items.size());  // call 1 is likely the same size
}

void JitCore::abandon_capture() noexcept { s_->cap.reset(); }

// Call 0 is eager; its recording only keeps what it enqueued (a copyout is fine here: nothing of
// call 0 is replayed).
void JitCore::begin_warmup() {
  s_->call0.reset();
  if (!s_->opt.capture.check_closure) return;
  s_->warm = start_recording(true);
  for (const HostSpan& h : args_.hosts) s_->warm->hosts.emplace_back(static_cast<const unsigned char*>(h.data), h.bytes());
}

void JitCore::end_warmup(const std::vector<Buffer>& outs) {
  std::shared_ptr<Recorder> warm = std::move(s_->warm);
  if (!warm) return;
  stop_recording(warm.get());
  // The compact form holds no handles: call 0's temporaries are freed when `warm` goes.
  s_->call0 = summarize_call(warm->items, args_.buffers, outs, warm->id);
}

void JitCore::abandon_warmup() noexcept {
  stop_recording(s_->warm.get());
  s_->warm.reset();
  s_->call0.reset();
}

void JitCore::end_capture(const std::vector<Buffer>& outs) {
  std::unique_ptr<Capture> cap = std::move(s_->cap);
  CaptureAccess::state(*cap).outputs = outs;
  CaptureAccess::Check check = [&](const std::vector<ExecItem>& items, uint64_t id) {
    if (!s_->call0) return;
    std::optional<CallRecord> call0 = std::move(s_->call0);
    s_->call0.reset();
    try {
      check_same_step(*call0, summarize_call(items, args_.buffers, outs, id), items, outs);
    } catch (...) {
      calls_ = 0;  // start over: the next call is a warm-up again, checked against the capture after it
      throw;
    }
  };
  unit_ = CaptureAccess::end(*cap, &check);
  const Plan& plan = UnitImpl::of(unit_).plan;
  host_code_ = plan.flow || std::any_of(plan.items.begin(), plan.items.end(), [](const ExecItem& it) { return kind_of(it).opaque; });
  s_->outputs = outs;
  s_->out_src.assign(outs.size(), {});
  input_outputs_ = false;
  for (size_t k = 0; k < outs.size(); ++k) {
    const Buffer& o = outs[k];
    if (!o) continue;
    for (size_t s = 0; s < args_.buffers.size(); ++s) {
      const Buffer& in = args_.buffers[s];
      BufferImpl &oi = *o.impl(), &ii = *in.impl();
      if (oi.root() != ii.root() || oi.offset < ii.offset || oi.offset + oi.nbytes > ii.offset + ii.nbytes) continue;
      auto& src = s_->out_src[k];
      src.slot = static_cast<int64_t>(s);
      src.rel = oi.offset - ii.offset;
      input_outputs_ = true;
      break;
    }
  }
  s_->scalars = args_.scalars;
  s_->vars.clear();
  s_->var_slot.clear();
  for (const BoundVar& v : args_.vars) {
    s_->vars.push_back(v.var);
    int64_t slot = -1;
    for (size_t i = 0; i < unit_.num_variables(); ++i)
      if (unit_.variable(i) == v.var) slot = static_cast<int64_t>(i);
    s_->var_slot.push_back(slot);
  }
  // verify mode: the storages to snapshot. A device that computes nothing (NULL) has nothing to
  // compare: verify is skipped there, with one line saying so.
  s_->state.clear();
  if (verify_left_ > 0) {
    for (const ExecItem& it : unit_.items())
      if (it.device().is_null()) {
        log(LogLevel::warning,
            "TinyJit verify skipped: " + it.device().id() + " computes nothing, so replay and eager results cannot be compared");
        verify_left_ = 0;
        break;
      }
    if (verify_left_ > 0) s_->state = unit_state_storages(unit_);
  }
}

void JitCore::check_and_bind() {
  if (args_.buffers.size() != unit_.num_inputs())
    throw JitError("TinyJit: the capture had " + std::to_string(unit_.num_inputs()) + " input buffers, this call passes " +
                   std::to_string(args_.buffers.size()));
  if (args_.scalars.size() != s_->scalars.size())
    throw JitError("TinyJit: the capture had " + std::to_string(s_->scalars.size()) + " scalar arguments, this call passes " +
                   std::to_string(args_.scalars.size()));
  for (size_t i = 0; i < args_.scalars.size(); ++i)
    if (!(args_.scalars[i] == s_->scalars[i]))
      throw JitError("TinyJit: scalar argument " + std::to_string(i) + " was " + scalar_str(s_->scalars[i]) + " at capture, this call passes " +
                     scalar_str(args_.scalars[i]) + ". Replay cannot see host values: pass a value that varies as a Variable (var.bind(x))");
  if (args_.vars.size() != s_->vars.size())
    throw JitError("TinyJit: the capture had " + std::to_string(s_->vars.size()) + " variables, this call passes " + std::to_string(args_.vars.size()));
  for (size_t i = 0; i < args_.vars.size(); ++i)
    if (!(args_.vars[i].var == s_->vars[i]))
      throw JitError("TinyJit: variable argument " + std::to_string(i) + " is \"" + args_.vars[i].var.name() + "\", the capture had \"" +
                     s_->vars[i].name() + "\"");
  if (args_.hosts.size() != unit_.num_host_inputs())
    throw JitError("TinyJit: the capture had " + std::to_string(unit_.num_host_inputs()) + " host span arguments, this call passes " +
                   std::to_string(args_.hosts.size()));
  for (size_t i = 0; i < args_.hosts.size(); ++i) unit_.bind_host_input(i, args_.hosts[i].data, args_.hosts[i].bytes());
  take_inputs(unit_, args_.buffers);  // moved in: this call's arguments are not read again
  for (size_t i = 0; i < args_.vars.size(); ++i) {
    int64_t slot = s_->var_slot[i];
    if (slot < 0) continue;
    const BoundVar& v = args_.vars[i];
    if (v.var.is_float()) unit_.bind_var_f(static_cast<size_t>(slot), v.f);
    else unit_.bind_var(static_cast<size_t>(slot), v.i);
  }
}

Buffer JitCore::output_now(size_t k) {
  State::OutSrc& src = s_->out_src[k];
  if (src.slot < 0) return s_->outputs[k];
  const Buffer& o = s_->outputs[k];
  return src.views.get(unit_.input(static_cast<size_t>(src.slot)), o.dtype(), src.rel, o.count());
}

void JitCore::verify_begin() {
  s_->before.clear();
  s_->versions.clear();
  auto take = [&](const Buffer& b) {
    s_->before.push_back(read_all(b));
    s_->versions.push_back(b.impl()->root()->version.load(std::memory_order_acquire));
  };
  for (const Buffer& b : s_->state) take(b);
  for (size_t i = 0; i < unit_.num_inputs(); ++i) take(unit_.input(i).base());
}

void JitCore::verify_after_eager(const std::vector<Buffer>& eager_outputs) {
  s_->eager_state.clear();
  s_->eager_out.clear();
  for (const Buffer& b : s_->state) s_->eager_state.push_back(read_all(b));
  for (size_t i = 0; i < unit_.num_inputs(); ++i) s_->eager_state.push_back(read_all(unit_.input(i).base()));
  for (const Buffer& b : eager_outputs) s_->eager_out.push_back(read_all(b));
  // Restore what the eager run changed, so the replay starts from the same state, and the versions
  // too: the eager run's writes bump them, and a replay that saw them bumped would re-run its
  // one-time items. A wrongly pruned item (encore::out on a buffer the kernel accumulates into)
  // would then run in exactly the verified replays and be skipped from the first unverified one.
  size_t k = 0;
  auto put = [&](const Buffer& b) {
    write_all(b, s_->before[k]);
    b.impl()->root()->version.store(s_->versions[k++], std::memory_order_release);
  };
  for (const Buffer& b : s_->state) put(b);
  for (size_t i = 0; i < unit_.num_inputs(); ++i) put(unit_.input(i).base());
}

void JitCore::verify_finish() {
  size_t k = 0;
  auto fail = [](const std::string& what, const Buffer& b, const std::string& diff, const char* cause) {
    throw JitError("TinyJit verify: replay differs from eager execution in " + what + " " + b.describe() + ", " + diff + ". " + cause);
  };
  static const char* frozen =
      "The callable's host code ran only at capture: a value it computed or read on the host after call 1 (a branch, a closure "
      "value, a host read) is frozen in the replay. Pass what varies as arguments passed to the call: buffers as inputs, numbers "
      "as Variables bound for each call (jit(x, v.bind(value)))";
  for (const Buffer& b : s_->state) {
    std::string d = first_difference(b, s_->eager_state[k++], read_all(b));
    if (!d.empty()) fail("state buffer", b, d, frozen);
  }
  for (size_t i = 0; i < unit_.num_inputs(); ++i) {
    const Buffer& b = unit_.input(i);
    std::string d = first_difference(b.base(), s_->eager_state[k++], read_all(b.base()));
    // an input that is this step's own output (a decode loop) is overwritten in place by replay
    // where eager execution returns a new buffer: its bytes are checked as the output
    if (!d.empty() && !unit_.is_fresh_output(b)) fail("input " + std::to_string(i), b, d, frozen);
  }
  std::vector<Buffer> replay_outputs;  // what this call returns (outputs that are inputs follow the inputs)
  for (size_t i = 0; i < s_->outputs.size(); ++i) replay_outputs.push_back(output_now(i));
  if (replay_outputs.size() != s_->eager_out.size())
    throw JitError("TinyJit verify: the eager run returned " + std::to_string(s_->eager_out.size()) + " buffers, the capture " +
                   std::to_string(replay_outputs.size()));
  for (size_t i = 0; i < replay_outputs.size(); ++i) {
    std::vector<unsigned char> got = read_all(replay_outputs[i]);
    if (got.size() != s_->eager_out[i].size())
      fail("output " + std::to_string(i), replay_outputs[i], "sizes differ",
           "The callable returned buffers of other sizes than at capture: host code steers its shapes, and replay cannot follow");
    std::string d = first_difference(replay_outputs[i], s_->eager_out[i], got);
    if (!d.empty()) fail("output " + std::to_string(i), replay_outputs[i], d, frozen);
  }
}

// A bound unit holds its arena (and views of it) in its binding: an arena only the pool still holds
// is bound to no unit, and goes back to its device's allocator. The units bound to none rebind
// before their next run (bind_unit) and take a new one; the others keep theirs.
void ArenaPool::release_unused() {
  std::erase_if(arenas, [](const Buffer& a) { return a.shared_impl().use_count() == 1; });
}

}  // namespace detail

Capture::Capture(UnitOptions unit, CaptureOptions capture) : s_(std::make_unique<State>()) {
  unit.validate();
  capture.validate();
  s_->opt = unit;
  s_->rec = start_recording(capture.allow_copyout);
  s_->rec->check_access = capture.check_access;
  if (capture.record_only) {
    s_->record_only = true;
    s_->rec->dry = 1;  // the eager side records only, as for an alternative a branch does not take
  }
}

// On the recording thread this stops the recording; on another thread it closes it, and the
// recording thread lets go of it at its next launch (the recorder lives until then).
Capture::~Capture() {
  if (s_ && s_->active) stop_recording(s_->rec.get());
}

size_t Capture::add_input(const Buffer& b) {
  if (!b) throw JitError("Capture::add_input: null buffer");
  s_->inputs.push_back(b);
  return s_->inputs.size() - 1;
}

size_t Capture::add_host_input(const void* data, size_t bytes) {
  if (!data && bytes) throw JitError("Capture::add_host_input: null data for " + std::to_string(bytes) + " bytes");
  s_->rec->hosts.emplace_back(static_cast<const unsigned char*>(data), bytes);
  return s_->rec->hosts.size() - 1;
}

void Capture::add_output(const Buffer& b) {
  if (!b) throw JitError("Capture::add_output: null buffer");
  s_->outputs.push_back(b);
}

size_t Capture::items_recorded() const { return s_->rec->items.size(); }

ExecutionUnit Capture::end() { return CaptureAccess::end(*this, nullptr); }

void Capture::check_against(const ExecutionUnit& previous) {
  if (!previous) throw JitError("Capture::check_against: null unit");
  const std::shared_ptr<const CallRecord>& r = UnitImpl::of(previous).recorded;
  if (!r)
    throw JitError("Capture::check_against: the unit was not made by Capture::end (a TinyJit's unit, or a concatenation): there is "
                   "no recording of its step to compare with");
  s_->previous = r;
  // the same step again, most likely as long: its record grows once (at 100k items the record's
  // regrowth, moves and fresh pages, was an eighth of a capture)
  if (s_->active && s_->rec->items.empty()) s_->rec->items.reserve(r->items.size());
}


}  // namespace encore
