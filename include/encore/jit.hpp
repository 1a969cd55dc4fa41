#pragma once
// TinyJit: wrap a step function; call 0 runs eagerly (warm-up), call 1 runs eagerly and records,
// calls 2+ replay the recorded ExecutionUnit with the new call's inputs.
// One unit per input signature: each Buffer argument's dtype, element count, device and whether it
// is a view, and which Variables (and their kinds) the call passes. A call with a new signature
// warms up and captures a unit of its own (calls are counted per signature); a known one replays
// its unit. At most JitOptions::max_units units (default 8; the least recently used is dropped);
// max_units = 1 is strict: inputs unlike the capture's are a JitError. The units of one jit share
// one arena per device (only one of them runs at a time): memory is the largest unit's, not the sum.
// Warnings (encore/log.hpp: stderr by default, each once per jit): calls that each bring a new
// signature, so nothing replays; more new signatures than max_units within 100 calls (units dropped
// and captured again); the first captured unit the LRU drops (later drops: info level).
// What a unit keeps alive, until the LRU drops it, drop(args...) drops it, reset() or the jit goes:
// the buffers its signature's last call passed (inputs stay bound to its slots), every buffer its
// items reach through the closure (state), the buffers it returned (overwritten by each replay),
// its temporaries that are not planned into the shared arena, its kernels and recorded uploads.
// The shared arena stays sized by the largest unit until reset() or the jit is destroyed.
//   jit.drop(old_state, t.bind(0));   // the unit a call with these arguments would use: let go
// A size that varies call to call belongs in a Variable, which never captures again.
//
//   auto step = encore::TinyJit([&](encore::Buffer x, encore::BoundVar t) {
//     encore::Buffer y = dev.alloc(encore::DType::f32, x.count());
//     dev.launch(k, {x.count()}, {}, x, y, t.var);
//     return y;
//   });
//   for (int i = 0; i < 100; ++i) encore::Buffer y = step(inputs[i % 3], t.bind(i));
//
// Inputs are the Buffer arguments (also inside std::vector, std::array, std::span, std::tuple,
// std::pair); BoundVar arguments set variables; other arguments must be arithmetic or enums and
// must keep their captured value. Buffers reached through the closure are state: replay uses them.
//
// Host inputs: a std::span of an arithmetic type (std::span<const int> of indices, a per-step
// constant) is a host input. A copyin inside the step whose source lies inside that span (the span
// or a subspan of it) replays from the span passed to each call: the bytes it holds then, copied
// during the call (staging made at bind, no allocation per call), so the caller may reuse it once
// the call returns. Its element count and size are part of the signature, like a buffer's: another
// size captures its own unit (max_units 1: a JitError naming the host input and both sizes).
//   auto step = encore::TinyJit([&](encore::Buffer x, std::span<const int> idx) {
//     encore::Buffer i = dev.alloc<int>(idx.size());
//     i.copyin(idx);                                   // replayed with each call's idx
//     ...
//   });
//   step(x, std::span<const int>(indices));
// A span of trivially copyable structs is a host input too (counted in bytes in the signature):
// a by-value kernel argument made from it with encore::bytes_from (or encore::bytes of one of its
// elements) passes each call's bytes on replay, the per-call form of a struct parameter:
//   auto step = encore::TinyJit([&](encore::Buffer x, std::span<const Params> p) {
//     dev.launch(k, {n}, {}, x, encore::bytes_from(p));   // replayed with each call's *p
//   });
//   step(x, std::span<const Params>(&params, 1));
// Any other copyin is frozen: replay uploads the bytes it had at capture (from a closure vector, or
// a host copy of the span), and so is any other by-value argument. A std::vector<float> argument is no host input: its elements are scalar
// arguments, which must keep their captured values. The capture check reports a copyin whose bytes
// or source differ between calls 0 and 1.
//
// FOOTGUNS (see tests/public/test_footguns.cpp):
// - Replay returns the SAME output buffers every call, overwritten in place. Copy what you keep, or
//   set JitOptions::fresh_outputs.
// - Host code in the callable runs only during calls 0 and 1: branches, host-computed values and
//   closure values read on the host are frozen at capture. Use Variables for values that vary;
//   the capture check (below) catches what changes between calls 0 and 1, and ENCORE_VERIFY=N
//   (JitOptions::verify) checks the first N replays against eager execution.
// - A call to another TinyJit inside a warm-up (call 0) or a capture runs that callable eagerly, so
//   its work is recorded into the outer recordings; the inner jit's own call count does not advance.
//
// Capture check (JitOptions::capture.check_closure, on by default): call 0 is recorded too (recorded only:
// nothing extra runs) and at the end of call 1 compared with it item by item. A kernel scalar, a
// launch size, a closure buffer (neither an input nor allocated during the call), copyin data or a
// returned buffer that differs is a JitError at capture, before any replay, naming the item, the
// argument, both values and the fix. Storage allocated during a call differs by construction: the
// two calls' are paired in the order the aligned items first use them, and the pairing must hold.
// Items pair by kernel (copies, uploads, native calls by kind and name) in order: the common
// suffix, then the common prefix, then a longest common subsequence of what is left (up to 2^20
// item pairs; a larger middle is not compared); an item without a partner is skipped, so a lazy
// initialisation that ran only in call 0, or work a flag switched on after call 0, passes. A value
// that changes once after call 0 and then stays is reported too: when that is meant, switch the
// check off for that jit. Only calls 0 and 1 are compared: a value that changes later is still
// frozen silently, and only verify mode finds it. A failed check starts the jit over at call 0.
// Call 0 keeps its temporaries alive until it returns (as the capture does), for the comparison.
//
// Variables: every eager run of the callable (warm-up, capture, verify, disabled) sees the
// BoundVars passed to that call, on the calling thread only; replay binds them into the unit.
// A launch that uses a Variable the call was not passed is a JitError on every path (variable.hpp).
// Verify on a device that computes nothing (NULL) is skipped with one line on stderr.
// Threads: one TinyJit serialises its calls (a mutex); different TinyJits run concurrently.
// A call counts only when it completed: a call 0 that throws is not the warm-up.
// Movable (not while a call runs); not copyable.
// Events: a call is ordinary work on its device's queue: dev.wait_for(events) before it orders it
// after an engine's work, dev.marker() after it is its completion (ExecutionUnit::run does both).
#include <algorithm>
#include <any>
#include <atomic>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/device.hpp"
#include "encore/error.hpp"
#include "encore/execution_unit.hpp"
#include "encore/variable.hpp"

namespace encore {

// How a TinyJit calls, captures and replays: JitOptions::from_env() (the default) applies ENCORE_JIT
// and ENCORE_VERIFY.
//   encore::TinyJit step(fn, encore::JitOptions{.unit = {.prune = false}, .capture = {.allow_copyout = true}});
struct JitOptions {
  bool enabled = true;          // ENCORE_JIT=0: every call runs eagerly
  UnitOptions unit = {};        // how each captured unit replays (prune, plan, work in flight)
  CaptureOptions capture = {};  // what a capture accepts and checks (allow_copyout, check_closure)
  bool fresh_outputs = false;   // replay returns new copies of the outputs
  int verify = 0;               // ENCORE_VERIFY=N: check the first N replays against eager runs (skipped on NULL)
  // One unit per input signature (see TinyJit), at most this many: past it the least recently used
  // is dropped. 1: the strict behaviour, a call whose inputs differ from the capture is a JitError.
  uint32_t max_units = 8;
  ENCORE_API static JitOptions from_env();
  // Throws ArgumentError naming the field, what is allowed and what was found: max_units 1 to 1024
  // (one unit per input signature), verify not negative, and unit's and capture's own bounds
  // (UnitOptions::validate). TinyJit's constructor and the C API's encore_jit_create call it.
  ENCORE_API void validate() const;
};

// A host value that only picks which work the step does (every 10th step decays the learning
// rate, an evaluation every N steps), passed to the TinyJit call as a key: it is part of the call's
// signature, so each value gets its own unit (up to JitOptions::max_units, least recently used
// dropped), captured from a step that took that path. The step receives it like any argument.
//   auto step = [&](Buffer w, encore::Key decay) { ...; if (decay.value) dev.launch(scale, {1}, {}, lr, 0.5f); };
//   jit(w, encore::key(i % 10 == 0));
// For a value the device computes mid-step, or one with many values, use Device::when/select.
struct Key {
  int64_t value = 0;
};
inline Key key(int64_t value) { return Key{value}; }

namespace detail {

// A plain scalar argument as seen at capture.
struct ScalarSeen {
  uint64_t bits = 0;
  uint8_t size = 0;
  char kind = 'i';  // 'i' signed, 'u' unsigned, 'f' floating, 'e' enum: for messages
  bool operator==(const ScalarSeen&) const = default;
};

// A host span argument: host input `slot` of the call, in argument order.
struct HostSpan {
  const void* data = nullptr;
  size_t count = 0;     // elements
  uint8_t elem = 0;     // bytes per element
  size_t bytes() const { return count * elem; }
};

// The flattened arguments of one call: reused between calls, so flattening allocates nothing once
// the vectors have grown.
struct CallArgs {
  std::vector<Buffer> buffers;
  std::vector<BoundVar> vars;
  std::vector<ScalarSeen> scalars;
  std::vector<HostSpan> hosts;
  std::vector<int64_t> keys;
  void clear() { buffers.clear(); vars.clear(); scalars.clear(); hosts.clear(); keys.clear(); }
  // member by member (std::swap would move each vector three times)
  void swap(CallArgs& o) noexcept {
    buffers.swap(o.buffers);
    vars.swap(o.vars);
    scalars.swap(o.scalars);
    hosts.swap(o.hosts);
    keys.swap(o.keys);
  }
};

template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_std_span : std::false_type {};
template <class T, size_t N> struct is_std_span<std::span<T, N>> : std::true_type {};
// A span of host numbers: a host input (TinyJit's header comment).
template <class T> struct is_host_span : std::false_type {};
// a struct of plain bytes (per-call parameters for encore::bytes_from; never a Buffer or a BoundVar)
template <class T>
inline constexpr bool is_host_struct = std::is_class_v<T> && std::is_trivially_copyable_v<T> && !std::is_same_v<T, Key> && !is_std_span<T>::value;
template <class T, size_t N>
struct is_host_span<std::span<T, N>> : std::bool_constant<std::is_arithmetic_v<std::remove_cv_t<T>> || is_host_struct<std::remove_cv_t<T>>> {};
template <class T> struct is_tuple_like : std::false_type {};
template <class... T> struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class T> void flatten(CallArgs& out, const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    out.buffers.push_back(v);
  } else if constexpr (std::is_same_v<U, BoundVar>) {
    out.vars.push_back(v);
  } else if constexpr (std::is_same_v<U, Key>) {
    out.keys.push_back(v.value);
  } else if constexpr (is_host_span<U>::value) {
    using E = std::remove_cv_t<typename U::element_type>;
    if constexpr (std::is_arithmetic_v<E>) out.hosts.push_back(HostSpan{v.data(), v.size(), static_cast<uint8_t>(sizeof(E))});
    else out.hosts.push_back(HostSpan{v.data(), v.size_bytes(), 1});  // structs: counted in bytes
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value || is_std_span<U>::value) {
    for (const auto& e : v) flatten(out, e);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (flatten(out, e), ...); }, v);
  } else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    ScalarSeen s;
    if constexpr (std::is_floating_point_v<U>) {
      double d = static_cast<double>(v);  // long double too: compared as double
      std::memcpy(&s.bits, &d, 8);
      s.kind = 'f';
    } else {
      std::memcpy(&s.bits, &v, sizeof(U));
      s.kind = std::is_enum_v<U> ? 'e' : std::is_signed_v<U> ? 'i' : 'u';
    }
    s.size = static_cast<uint8_t>(sizeof(U));
    out.scalars.push_back(s);
  } else if constexpr (std::is_same_v<U, Variable>) {
    static_assert(!std::is_same_v<U, Variable>, "pass variables to a TinyJit bound: var.bind(value)");
  } else {
    static_assert(std::is_arithmetic_v<U>,
                  "TinyJit arguments must be Buffers, BoundVars, Keys, arithmetic values or enums, or "
                  "std::vector/array/span/tuple/pair of them; capture anything else in the closure");
  }
}

template <class T> void collect_outputs(std::vector<Buffer>& out, const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    out.push_back(v);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    for (const auto& e : v) collect_outputs(out, e);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (collect_outputs(out, e), ...); }, v);
  } else {
    static_assert(std::is_same_v<U, Buffer>, "a TinyJit callable returns Buffers: one, a tuple/pair, a vector or array, or nothing");
  }
}

// Rebuilds an output value with every Buffer replaced by f(buffer), in collect_outputs order.
template <class T, class Fn> T map_outputs(const T& v, Fn& f) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    return f(v);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    U r = v;
    for (auto& e : r) e = map_outputs(e, f);
    return r;
  } else {
    return std::apply([&](const auto&... e) { return U{map_outputs(e, f)...}; }, v);
  }
}

// One input slot (or one Variable passed) of a call's signature: what a unit replays only for.
struct SigPart {
  const void* what = nullptr;  // buffers: the device; Variables: the variable
  uint64_t count = 0;          // buffers, host spans: elements; Variables: 1 for a float variable
  uint8_t dtype = 0, kind = 0; // kind: 0 a buffer, 1 a view, 2 a Variable, 3 a host span (dtype: bytes per element), 4 a key (count: its value)
  bool operator==(const SigPart&) const = default;
};
// `a`'s signature into `out` (reused: no allocation once it has grown), and its description.
ENCORE_API void signature_of(const CallArgs& a, std::vector<SigPart>& out);
// Whether `a`'s signature is `sig`, without writing one (the common call: the last call's signature).
ENCORE_API bool has_signature(const CallArgs& a, const std::vector<SigPart>& sig);
ENCORE_API std::string describe_signature(const std::vector<SigPart>& sig);
struct ArenaPool;  // the arenas the units of one TinyJit share (src/unit/unit.hpp)
ENCORE_API std::shared_ptr<ArenaPool> make_arena_pool();
// A TinyJit's unit cache notes: a warning, or an info line (encore/log.hpp).
ENCORE_API void jit_note(bool warning, const std::string& line);

// Non-template parts of TinyJit, in the library.
// A TinyJit's lock. Its step runs under it, so a step that calls its own jit again (operator(),
// reset, unit_for) on the same thread would deadlock: that is a JitError naming the call instead.
struct JitLock {
  std::mutex mu;
  std::atomic<std::thread::id> holder{};
};
class ENCORE_API JitLockGuard {
 public:
  JitLockGuard(JitLock& l, const char* op);  // JitError when this thread holds `l` already
  ~JitLockGuard();
  JitLockGuard(const JitLockGuard&) = delete;
  JitLockGuard& operator=(const JitLockGuard&) = delete;

 private:
  JitLock& l_;
};

class ENCORE_API JitCore {
 public:
  explicit JitCore(JitOptions o);
  ~JitCore();
  JitCore(JitCore&&) noexcept;
  JitCore& operator=(JitCore&&) noexcept;
  static bool capture_active();   // a capture (or a warm-up's recording) is recording on this thread
  // Call 0: records its items for the capture check (CaptureOptions::check_closure; else no-ops).
  void begin_warmup();
  void end_warmup(const std::vector<Buffer>& outputs);
  void abandon_warmup() noexcept;
  void begin_capture();
  // Checks call 1 against call 0 (a failed check starts the jit over at call 0), then builds the
  // unit from args and the outputs.
  void end_capture(const std::vector<Buffer>& outputs);
  void abandon_capture() noexcept;
  void check_and_bind();          // validates args_ against the capture and binds slots
  void replay();
  // Verify mode: snapshot external state, let the caller run eagerly, compare.
  void verify_begin();
  void verify_after_eager(const std::vector<Buffer>& eager_outputs);
  void verify_finish();  // compares with what this call returns
  void reset();
  // Replay: the buffer to return as output k. An output that is (a view of) an input follows the
  // input bound this call; every other output is the captured buffer.
  Buffer output_now(size_t k);

  JitOptions opt;
  uint64_t calls = 0;
  int64_t verify_left = 0;
  CallArgs args;
  std::vector<Buffer> outputs;   // captured outputs, in collect_outputs order
  bool input_outputs = false;    // some output is (a view of) an input
  ExecutionUnit unit;
  std::shared_ptr<ArenaPool> pool;  // shared with the jit's other units (null: an arena of its own)

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace detail

template <class F> class TinyJit {
 public:
  explicit TinyJit(F fn, JitOptions opt = JitOptions::from_env())
      : fn_(std::move(fn)), opt_((opt.validate(), opt)), pool_(detail::make_arena_pool()), capture_calls_(opt_.max_units + 1, 0),
        capture_replays_(capture_calls_.size(), 0) {}
  TinyJit(TinyJit&&) noexcept = default;
  TinyJit& operator=(TinyJit&&) = default;

  // Runs one call: eager (calls 0, 1 of its signature, or when disabled) or replay (2+). Returns the
  // callable's outputs by value (handles: no allocation unless the result holds a std::vector); on
  // replay these are the SAME buffers as the capture's, overwritten in place.
  template <class... A> std::invoke_result_t<F&, A&&...> operator()(A&&... a) {
    using R = std::invoke_result_t<F&, A&&...>;
    detail::JitLockGuard lock(*mu_, "called");
    args_.clear();
    (detail::flatten(args_, a), ...);
    // eager runs of this call see this call's BoundVars, and only those (a Variable the call was
    // not passed is a JitError: replay could not see it)
    BindingScope scope(args_.vars, true);
    if (!opt_.enabled || detail::JitCore::capture_active()) return eager<R>(std::forward<A>(a)...);
    Slot& s = select();
    // handed over, not copied (no reference count touched per buffer); args_ takes the slot's last
    // arguments, let go now, and both keep their capacity
    s.core.args.swap(args_);
    args_.clear();
    if constexpr (std::is_void_v<R>) call<R>(s, std::forward<A>(a)...);
    else return call<R>(s, std::forward<A>(a)...);
  }

  // Drops the unit of the signature these arguments have (the one a call with them would use, or
  // warm up): its captured inputs, state, outputs and temporaries are let go (see the top of this
  // file). Returns whether there was one; the next call with that signature is its call 0 again.
  // The other signatures' units stay. The arguments are only looked at (their signature), never run.
  template <class... A> bool drop(const A&... a) {
    detail::JitLockGuard lock(*mu_, "asked to drop a unit");
    probe_args_.clear();
    (detail::flatten(probe_args_, a), ...);
    detail::signature_of(probe_args_, probe_sig_);
    probe_args_.clear();
    args_.clear();  // the last call's arguments: held only until the next call, let go now
    auto it = std::find_if(slots_.begin(), slots_.end(), [&](const auto& s) { return s->sig == probe_sig_; });
    if (it == slots_.end()) return false;
    if (last_ == it->get()) last_ = nullptr;
    slots_.erase(it);
    return true;
  }

  // Drops every unit: the next call is call 0 again.
  void reset() {
    detail::JitLockGuard lock(*mu_, "reset");
    slots_.clear();
    last_ = nullptr;
    calls_ = 0;
  }
  // Calls of the last call's signature that completed (0 after reset, or after a failed capture
  // check: that signature starts over).
  uint64_t calls() const { return last_ ? last_->core.calls : 0; }
  // The unit of the last call's signature (empty before its call 2).
  const ExecutionUnit& unit() const { return last_ ? last_->core.unit : empty_; }
  ExecutionUnit& unit() { return last_ ? last_->core.unit : empty_; }
  const JitOptions& options() const { return opt_; }
  // Whether a call with these arguments would replay a captured unit (its signature's call 2 or
  // later, the jit on, no capture recording on this thread); false when it would run eagerly (a
  // warm-up, a capture, or the jit off). Verify mode replays and also runs the callable eagerly.
  template <class... A> bool next_call_replays(const A&... a) const { return unit_for(a...) != nullptr; }
  // The unit a call with these arguments would replay, or null when it would run eagerly (as
  // next_call_replays): for callers that order the call after events on the unit's queues
  // (ExecutionUnit::devices).
  template <class... A> const ExecutionUnit* unit_for(const A&... a) const {
    detail::JitLockGuard lock(*mu_, "asked which unit a call replays");
    if (!opt_.enabled || detail::JitCore::capture_active() || slots_.empty()) return nullptr;
    probe_args_.clear();
    (detail::flatten(probe_args_, a), ...);
    detail::signature_of(probe_args_, probe_sig_);
    const Slot* s = find(probe_sig_);
    return s && s->core.calls >= 2 ? &s->core.unit : nullptr;
  }
  // The units held, most recently used first: each signature ("f32[1024] on CL:0, ...") with its
  // calls so far and its unit (empty until that signature's call 2).
  struct UnitEntry {
    std::string signature;
    uint64_t calls;
    const ExecutionUnit* unit;
  };
  std::vector<UnitEntry> units() const {
    std::vector<const Slot*> order;
    for (const auto& s : slots_) order.push_back(s.get());
    std::sort(order.begin(), order.end(), [](const Slot* x, const Slot* y) { return x->last_used > y->last_used; });
    std::vector<UnitEntry> out;
    for (const Slot* s : order) out.push_back({detail::describe_signature(s->sig), s->core.calls, &s->core.unit});
    return out;
  }

 private:
  // One input signature's capture: its own call count, unit and outputs.
  struct Slot {
    explicit Slot(const JitOptions& o) : core(o) {}
    detail::JitCore core;
    std::vector<detail::SigPart> sig;
    uint64_t last_used = 0;
    std::any result, captured;  // the capture's outputs; captured kept when some are inputs
  };

  // The slot of this call's signature: found (a short linear search, no allocation), or a new one,
  // dropping the least recently used past max_units. max_units 1 keeps the one slot: its unit
  // refuses other inputs with a JitError naming what differs.
  // The slot that serves signature `sig`, or null (a new signature): the one call() and
  // unit_for() both use.
  Slot* find(const std::vector<detail::SigPart>& sig) const {
    if (opt_.max_units <= 1) return slots_.empty() ? nullptr : slots_[0].get();
    for (const auto& s : slots_)
      if (s->sig == sig) return s.get();
    return nullptr;
  }

  Slot& select() {
    ++tick_;
    ++calls_;  // counted here, so a call that throws counts too (the warnings' "within N calls")
    // the last call's slot again (or the one slot of max_units 1): found without building sig_
    if (last_ && (opt_.max_units <= 1 || detail::has_signature(args_, last_->sig))) {
      new_streak_ = 0;
      return touch(*last_);
    }
    detail::signature_of(args_, sig_);
    if (Slot* s = find(sig_)) {
      new_streak_ = 0;
      return touch(*s);
    }
    ++new_streak_;
    capture_calls_[capture_next_] = calls_;
    capture_replays_[capture_next_] = replays_;
    capture_next_ = (capture_next_ + 1) % capture_calls_.size();
    const bool warned_now = warn_signatures();  // before the drop, whose note it then covers
    if (!slots_.empty() && slots_.size() >= opt_.max_units) {
      auto lru = std::min_element(slots_.begin(), slots_.end(), [](const auto& x, const auto& y) { return x->last_used < y->last_used; });
      const uint64_t had = (*lru)->core.calls;
      const bool warn = had >= 2 && !warned_drop_ && !warned_now;  // a captured unit, dropped for the first time
      warned_drop_ = warned_drop_ || warn;
      detail::jit_note(warn, "TinyJit: " + std::to_string(slots_.size()) + " units held (max_units): dropped the least recently used, for " +
                                 detail::describe_signature((*lru)->sig) +
                                 (had >= 2 ? " (captured, " + std::to_string(had) + " calls: a call with that signature warms up and captures again)"
                                           : std::string(" (never captured)")) +
                                 (warn ? "; raise max_units if it comes back. Later drops by this jit are logged at info level" : ""));
      if (last_ == lru->get()) last_ = nullptr;
      slots_.erase(lru);
    }
    auto s = std::make_unique<Slot>(opt_);
    s->sig = sig_;
    s->core.pool = pool_;
    slots_.push_back(std::move(s));
    return touch(*slots_.back());
  }
  // At a new signature: warns once per jit when the last calls all brought new signatures (nothing
  // replays), or when more new signatures than max_units came within 100 calls (units are dropped
  // and captured again). Returns whether it warned now.
  bool warn_signatures() {
    if (opt_.max_units <= 1 || warned_thrash_) return false;
    const uint64_t call = calls_;  // this call, counted from 1
    const uint32_t streak_limit = std::min<uint32_t>(opt_.max_units + 1, 16);
    if (!warned_never_ && new_streak_ >= streak_limit) {
      warned_never_ = warned_thrash_ = warned_drop_ = true;  // the same cause: said once
      detail::jit_note(true, "TinyJit: the last " + std::to_string(new_streak_) + " calls each brought an input signature not seen before (now " +
                                 detail::describe_signature(sig_) + "), so none of them replayed: each ran eagerly as a warm-up. An input "
                                 "size that changes every call belongs in a Variable (a size in a Variable never captures again)");
      return true;
    }
    const uint64_t oldest = capture_calls_[capture_next_];
    if (oldest && call - oldest < 100) {
      warned_thrash_ = warned_drop_ = true;
      const uint64_t replayed = replays_ - capture_replays_[capture_next_];
      detail::jit_note(true, "TinyJit: " + std::to_string(capture_calls_.size()) + " new input signatures within " + std::to_string(call - oldest + 1) +
                                 " calls, more than max_units (" + std::to_string(opt_.max_units) + "): units are dropped, then warmed up and captured "
                                 "again (" + std::to_string(replayed) + " of those calls replayed). An input size that changes belongs in a "
                                 "Variable (a size in a Variable never captures again); or raise max_units");
      return true;
    }
    return false;
  }
  Slot& touch(Slot& s) {
    s.last_used = tick_;
    last_ = &s;
    return s;
  }

  template <class R, class... A> R call(Slot& s, A&&... a) {
    detail::JitCore& core = s.core;
    if (core.calls == 0) {
      core.begin_warmup();
      try {
        if constexpr (std::is_void_v<R>) {
          eager<R>(std::forward<A>(a)...);
          core.end_warmup({});
          ++core.calls;
          return;
        } else {
          R r = eager<R>(std::forward<A>(a)...);
          if (core.opt.capture.check_closure) {
            std::vector<Buffer> outs;
            detail::collect_outputs(outs, r);
            core.end_warmup(outs);
          }
          ++core.calls;
          return r;
        }
      } catch (...) {
        core.abandon_warmup();
        throw;
      }
    }
    if (core.calls == 1) {
      core.begin_capture();
      try {
        if constexpr (std::is_void_v<R>) {
          std::invoke(fn_, std::forward<A>(a)...);
          core.end_capture({});
        } else {
          s.result = std::invoke(fn_, std::forward<A>(a)...);
          std::vector<Buffer> outs;
          detail::collect_outputs(outs, std::any_cast<R&>(s.result));
          core.end_capture(outs);
        }
      } catch (...) {
        core.abandon_capture();
        throw;
      }
      ++core.calls;
      if constexpr (!std::is_void_v<R>) {
        if (core.input_outputs) s.captured = s.result;
        return deliver<R>(s);
      } else {
        return;
      }
    }
    core.check_and_bind();
    if (core.verify_left > 0) {
      --core.verify_left;
      core.verify_begin();
      std::vector<Buffer> eager_outs;
      if constexpr (!std::is_void_v<R>) {
        R r = std::invoke(fn_, std::forward<A>(a)...);
        detail::collect_outputs(eager_outs, r);
      } else {
        std::invoke(fn_, std::forward<A>(a)...);
      }
      core.verify_after_eager(eager_outs);
      core.replay();
      core.verify_finish();
    } else {
      core.replay();
    }
    ++core.calls;
    ++replays_;
    if constexpr (!std::is_void_v<R>) return deliver<R>(s);
  }

  template <class R, class... A> R eager(A&&... a) { return std::invoke(fn_, std::forward<A>(a)...); }
  // The outputs of a capture or replay call: outputs that are inputs follow this call's inputs;
  // with fresh_outputs, copies (the capture call too, so feeding a result back never aliases).
  template <class R> R deliver(Slot& s) {
    R& r = std::any_cast<R&>(s.result);
    if (s.core.input_outputs) {
      size_t k = 0;
      auto now = [&](const Buffer&) { return s.core.output_now(k++); };
      r = detail::map_outputs(std::any_cast<R&>(s.captured), now);
    }
    if (s.core.opt.fresh_outputs) {
      auto copy = [](const Buffer& b) {
        Buffer c(b.device(), b.dtype(), b.count());
        c.device().copy(c, b);
        return c;
      };
      return detail::map_outputs(r, copy);
    }
    return r;
  }

  F fn_;
  JitOptions opt_;
  std::unique_ptr<detail::JitLock> mu_ = std::make_unique<detail::JitLock>();  // behind a pointer: TinyJit moves
  std::shared_ptr<detail::ArenaPool> pool_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Slot* last_ = nullptr;
  detail::CallArgs args_;
  std::vector<detail::SigPart> sig_;
  mutable detail::CallArgs probe_args_;  // unit_for's (under the lock; capacity reused)
  mutable std::vector<detail::SigPart> probe_sig_;
  uint64_t calls_ = 0, tick_ = 0;
  // the call numbers (1-based) of the last max_units + 1 new signatures, and replays_ at each
  std::vector<uint64_t> capture_calls_, capture_replays_;
  size_t capture_next_ = 0;
  uint64_t replays_ = 0;     // calls that replayed
  uint32_t new_streak_ = 0;  // calls in a row that brought a new signature
  bool warned_never_ = false, warned_thrash_ = false, warned_drop_ = false;  // each cause warns once
  ExecutionUnit empty_;
};

}  // namespace encore
