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
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/detail/jit_args.hpp"
#include "encore/detail/jit_units.hpp"
#include "encore/device.hpp"
#include "encore/error.hpp"
#include "encore/execution_unit.hpp"
#include "encore/jit_options.hpp"
#include "encore/variable.hpp"

namespace encore {

template <class F> class TinyJit {
 public:
  explicit TinyJit(F fn, JitOptions opt = JitOptions::from_env()) : fn_(std::move(fn)), units_((opt.validate(), opt)) {}
  TinyJit(TinyJit&&) noexcept = default;
  TinyJit& operator=(TinyJit&&) = default;

  // Runs one call: eager (calls 0, 1 of its signature, or when disabled) or replay (2+). Returns the
  // callable's outputs by value (handles: no allocation unless the result holds a std::vector); on
  // replay these are the SAME buffers as the capture's, overwritten in place.
  template <class... A> std::invoke_result_t<F&, A&&...> operator()(A&&... a) {
    using R = std::invoke_result_t<F&, A&&...>;
    detail::JitUnits::Guard lock(units_, "called");
    args_.clear();
    (detail::flatten(args_, a), ...);
    // eager runs of this call see this call's BoundVars, and only those (a Variable the call was
    // not passed is a JitError: replay could not see it). A replay opens that scope only where it
    // runs code of the user's (JitCore::needs_binding_scope): the scope is a thread-local, and from
    // a shared library it and its __tls_get_addr lookups missed 7 of the ~100 cache lines a replayed
    // call missed after memory was swept between calls (bench-replay stencil_null_cold under
    // cachegrind; the call's time did not change measurably).
    if (!units_.options().enabled || detail::JitCore::capture_active()) {
      BindingScope scope(args_.vars, true);
      return std::invoke(fn_, std::forward<A>(a)...);
    }
    detail::JitCore& core = units_.select(args_);  // this call's arguments are core.args() from here
    if constexpr (std::is_void_v<R>) call<R>(core, std::forward<A>(a)...);
    else return call<R>(core, std::forward<A>(a)...);
  }

  // Drops the unit of the signature these arguments have (the one a call with them would use, or
  // warm up): its captured inputs, state, outputs and temporaries are let go (see the top of this
  // file). Returns whether there was one; the next call with that signature is its call 0 again.
  // The other signatures' units stay. The arguments are only looked at (their signature), never run.
  template <class... A> bool drop(const A&... a) {
    detail::JitUnits::Guard lock(units_, "asked to drop a unit");
    probe(a...);
    args_.clear();  // the last call's arguments (when it ran eagerly): held only until the next call, let go now
    const bool had = units_.drop(probe_args_);
    probe_args_.clear();
    return had;
  }

  // Drops every unit: the next call is call 0 again.
  void reset() {
    detail::JitUnits::Guard lock(units_, "reset");
    units_.reset();
  }
  // Calls of the last call's signature that completed (0 after reset, or after a failed capture
  // check: that signature starts over).
  uint64_t calls() const { return units_.last() ? units_.last()->calls() : 0; }
  // The unit of the last call's signature (empty before its call 2).
  const ExecutionUnit& unit() const { return units_.last() ? units_.last()->unit() : empty_; }
  ExecutionUnit& unit() { return units_.last() ? units_.last()->unit() : empty_; }
  const JitOptions& options() const { return units_.options(); }
  // Whether a call with these arguments would replay a captured unit (its signature's call 2 or
  // later, the jit on, no capture recording on this thread); false when it would run eagerly (a
  // warm-up, a capture, or the jit off). Verify mode replays and also runs the callable eagerly.
  template <class... A> bool next_call_replays(const A&... a) const { return unit_for(a...) != nullptr; }
  // The unit a call with these arguments would replay, or null when it would run eagerly (as
  // next_call_replays): for callers that order the call after events on the unit's queues
  // (ExecutionUnit::devices).
  template <class... A> const ExecutionUnit* unit_for(const A&... a) const {
    detail::JitUnits::Guard lock(units_, "asked which unit a call replays");
    if (!units_.options().enabled || detail::JitCore::capture_active()) return nullptr;
    probe(a...);
    const detail::JitCore* c = units_.find(probe_args_);
    probe_args_.clear();
    return c && c->calls() >= 2 ? &c->unit() : nullptr;
  }
  // The units held, most recently used first: each signature ("f32[1024] on CL:0, ...") with its
  // calls so far and its unit (empty until that signature's call 2).
  using UnitEntry = JitUnitEntry;
  std::vector<UnitEntry> units() const { return units_.entries(); }

 private:
  template <class... A> void probe(const A&... a) const {
    probe_args_.clear();
    (detail::flatten(probe_args_, a), ...);
  }

  template <class R, class... A> R call(detail::JitCore& core, A&&... a) {
    std::optional<BindingScope> scope;
    if (core.needs_binding_scope()) scope.emplace(core.args().vars, true);
    if (core.calls() == 0) return warm_up<R>(core, std::forward<A>(a)...);
    if (core.calls() == 1) return capture<R>(core, std::forward<A>(a)...);
    core.check_and_bind();
    if (core.verify_next()) {
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
    core.completed();
    units_.replayed();
    if constexpr (!std::is_void_v<R>) return deliver<R>(core);
  }

  // Call 0: eager, recorded for the capture check.
  template <class R, class... A> R warm_up(detail::JitCore& core, A&&... a) {
    core.begin_warmup();
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn_, std::forward<A>(a)...);
        core.end_warmup({});
        core.completed();
      } else {
        R r = std::invoke(fn_, std::forward<A>(a)...);
        if (core.records_outputs_at_warmup()) {
          std::vector<Buffer> outs;
          detail::collect_outputs(outs, r);
          core.end_warmup(outs);
        }
        core.completed();
        return r;
      }
    } catch (...) {
      core.abandon_warmup();
      throw;
    }
  }

  // Call 1: eager, recorded into the unit later calls replay.
  template <class R, class... A> R capture(detail::JitCore& core, A&&... a) {
    core.begin_capture();
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn_, std::forward<A>(a)...);
        core.end_capture({});
      } else {
        core.result = std::invoke(fn_, std::forward<A>(a)...);
        std::vector<Buffer> outs;
        detail::collect_outputs(outs, std::any_cast<R&>(core.result));
        core.end_capture(outs);
      }
    } catch (...) {
      core.abandon_capture();
      throw;
    }
    core.completed();
    if constexpr (!std::is_void_v<R>) {
      if (core.outputs_follow_inputs()) core.captured = core.result;
      return deliver<R>(core);
    }
  }

  // The outputs of a capture or replay call: outputs that are inputs follow this call's inputs;
  // with fresh_outputs, copies (the capture call too, so feeding a result back never aliases).
  template <class R> R deliver(detail::JitCore& core) {
    R& r = std::any_cast<R&>(core.result);
    if (core.outputs_follow_inputs()) {
      size_t k = 0;
      auto now = [&](const Buffer&) { return core.output_now(k++); };
      r = detail::map_outputs(std::any_cast<R&>(core.captured), now);
    }
    if (core.fresh_outputs()) {
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
  detail::JitUnits units_;
  detail::CallArgs args_;
  mutable detail::CallArgs probe_args_;  // drop's and unit_for's (under the lock; capacity reused)
  ExecutionUnit empty_;
};

}  // namespace encore
