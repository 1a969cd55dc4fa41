#pragma once
// TinyJit: wrap a step function; call 0 runs eagerly (warm-up), call 1 runs eagerly and records,
// calls 2+ replay the recorded ExecutionUnit with the new call's inputs.
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
// FOOTGUNS (see tests/test_footguns.cpp):
// - Replay returns the SAME output buffers every call, overwritten in place. Copy what you keep, or
//   set JitOptions::fresh_outputs.
// - Host code in the callable runs only during calls 0 and 1: branches, host-computed values and
//   closure values read on the host are frozen at capture. Use Variables for values that vary;
//   the capture check (below) catches what changes between calls 0 and 1, and ENCORE_VERIFY=N
//   (JitOptions::verify) checks the first N replays against eager execution.
// - A call to another TinyJit inside a warm-up (call 0) or a capture runs that callable eagerly, so
//   its work is recorded into the outer recordings; the inner jit's own call count does not advance.
//
// Capture check (JitOptions::check_closure, on by default): call 0 is recorded too (recorded only:
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
#include <any>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/error.hpp"
#include "encore/execution_unit.hpp"
#include "encore/variable.hpp"

namespace encore {

struct JitOptions {
  bool enabled = true;          // ENCORE_JIT=0: every call runs eagerly
  bool prune = true;
  bool plan = true;
  bool batch = false;           // command-buffer batches: not implemented yet, true is a JitError at capture
  bool allow_copyout = false;   // copyout during capture is a JitError unless set
  bool fresh_outputs = false;   // replay returns new copies of the outputs
  int verify = 0;               // ENCORE_VERIFY=N: check the first N replays against eager runs (skipped on NULL)
  // Call 0 is recorded too, and at the end of call 1 compared with it: a kernel scalar, launch size
  // or closure buffer that changed is a JitError at capture (see the header comment). Off: for a
  // jit whose step is meant to change once after call 0 (the capture then keeps call 1's step).
  bool check_closure = true;
  ENCORE_API static JitOptions from_env();
  uint32_t max_in_flight = 3;   // replays in flight at most (UnitOptions::max_in_flight)
  uint32_t min_items_in_flight = 64;  // short steps keep more replays in flight (UnitOptions::min_items_in_flight)
  UnitOptions unit() const {
    UnitOptions u;
    u.prune = prune;
    u.plan = plan;
    u.batch = batch;
    u.allow_copyout = allow_copyout;
    u.max_in_flight = max_in_flight;
    u.min_items_in_flight = min_items_in_flight;
    return u;
  }
};

namespace detail {

// A plain scalar argument as seen at capture.
struct ScalarSeen {
  uint64_t bits = 0;
  uint8_t size = 0;
  char kind = 'i';  // 'i' signed, 'u' unsigned, 'f' floating, 'e' enum: for messages
  bool operator==(const ScalarSeen&) const = default;
};

// The flattened arguments of one call: reused between calls, so flattening allocates nothing once
// the vectors have grown.
struct CallArgs {
  std::vector<Buffer> buffers;
  std::vector<BoundVar> vars;
  std::vector<ScalarSeen> scalars;
  void clear() { buffers.clear(); vars.clear(); scalars.clear(); }
};

template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_std_span : std::false_type {};
template <class T, size_t N> struct is_std_span<std::span<T, N>> : std::true_type {};
template <class T> struct is_tuple_like : std::false_type {};
template <class... T> struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class T> void flatten(CallArgs& out, const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Buffer>) {
    out.buffers.push_back(v);
  } else if constexpr (std::is_same_v<U, BoundVar>) {
    out.vars.push_back(v);
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
                  "TinyJit arguments must be Buffers, BoundVars, arithmetic values or enums, or "
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

// Non-template parts of TinyJit, in the library.
class ENCORE_API JitCore {
 public:
  explicit JitCore(JitOptions o);
  ~JitCore();
  JitCore(JitCore&&) noexcept;
  JitCore& operator=(JitCore&&) noexcept;
  static bool capture_active();   // a capture (or a warm-up's recording) is recording on this thread
  // Call 0: records its items for the capture check (JitOptions::check_closure; else no-ops).
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

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace detail

// An eager whole-buffer copy on dst's device (fresh_outputs).
ENCORE_API void copy_buffer_eager(const Buffer& dst, const Buffer& src);

template <class F> class TinyJit {
 public:
  explicit TinyJit(F fn, JitOptions opt = JitOptions::from_env()) : fn_(std::move(fn)), core_(opt) {}
  TinyJit(TinyJit&&) noexcept = default;
  TinyJit& operator=(TinyJit&&) = default;

  // Runs one call: eager (calls 0, 1, or when disabled) or replay (2+). Returns the callable's
  // outputs by value (handles: no allocation unless the result holds a std::vector); on replay these
  // are the SAME buffers as the capture's, overwritten in place.
  template <class... A> std::invoke_result_t<F&, A&&...> operator()(A&&... a) {
    using R = std::invoke_result_t<F&, A&&...>;
    std::lock_guard<std::mutex> lock(*mu_);
    core_.args.clear();
    (detail::flatten(core_.args, a), ...);
    // eager runs of this call see this call's BoundVars, and only those (a Variable the call was
    // not passed is a JitError: replay could not see it)
    BindingScope scope(core_.args.vars, true);
    if (!core_.opt.enabled || detail::JitCore::capture_active()) return eager<R>(std::forward<A>(a)...);
    if (core_.calls == 0) {
      core_.begin_warmup();
      try {
        if constexpr (std::is_void_v<R>) {
          eager<R>(std::forward<A>(a)...);
          core_.end_warmup({});
          ++core_.calls;
          return;
        } else {
          R r = eager<R>(std::forward<A>(a)...);
          if (core_.opt.check_closure) {
            std::vector<Buffer> outs;
            detail::collect_outputs(outs, r);
            core_.end_warmup(outs);
          }
          ++core_.calls;
          return r;
        }
      } catch (...) {
        core_.abandon_warmup();
        throw;
      }
    }
    if (core_.calls == 1) {
      core_.begin_capture();
      try {
        if constexpr (std::is_void_v<R>) {
          std::invoke(fn_, std::forward<A>(a)...);
          core_.end_capture({});
        } else {
          result_ = std::invoke(fn_, std::forward<A>(a)...);
          std::vector<Buffer> outs;
          detail::collect_outputs(outs, std::any_cast<R&>(result_));
          core_.end_capture(outs);
        }
      } catch (...) {
        core_.abandon_capture();
        throw;
      }
      ++core_.calls;
      if constexpr (!std::is_void_v<R>) {
        if (core_.input_outputs) captured_ = result_;
        return deliver<R>();
      } else {
        return;
      }
    }
    core_.check_and_bind();
    if (core_.verify_left > 0) {
      --core_.verify_left;
      core_.verify_begin();
      std::vector<Buffer> eager_outs;
      if constexpr (!std::is_void_v<R>) {
        R r = std::invoke(fn_, std::forward<A>(a)...);
        detail::collect_outputs(eager_outs, r);
      } else {
        std::invoke(fn_, std::forward<A>(a)...);
      }
      core_.verify_after_eager(eager_outs);
      core_.replay();
      core_.verify_finish();
    } else {
      core_.replay();
    }
    ++core_.calls;
    if constexpr (!std::is_void_v<R>) return deliver<R>();
  }

  // Drops the capture: the next call is call 0 again.
  void reset() {
    std::lock_guard<std::mutex> lock(*mu_);
    core_.reset();
    result_.reset();
    captured_.reset();
  }
  uint64_t calls() const { return core_.calls; }
  // The captured unit (empty before call 2).
  const ExecutionUnit& unit() const { return core_.unit; }
  ExecutionUnit& unit() { return core_.unit; }
  const JitOptions& options() const { return core_.opt; }

 private:
  template <class R, class... A> R eager(A&&... a) { return std::invoke(fn_, std::forward<A>(a)...); }
  // The outputs of a capture or replay call: outputs that are inputs follow this call's inputs;
  // with fresh_outputs, copies (the capture call too, so feeding a result back never aliases).
  template <class R> R deliver() {
    R& r = std::any_cast<R&>(result_);
    if (core_.input_outputs) {
      size_t k = 0;
      auto now = [&](const Buffer&) { return core_.output_now(k++); };
      r = detail::map_outputs(std::any_cast<R&>(captured_), now);
    }
    if (core_.opt.fresh_outputs) {
      auto copy = [](const Buffer& b) {
        Buffer c(b.device(), b.dtype(), b.count());
        copy_buffer_eager(c, b);
        return c;
      };
      return detail::map_outputs(r, copy);
    }
    return r;
  }

  F fn_;
  detail::JitCore core_;
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();  // behind a pointer: TinyJit moves
  std::any result_, captured_;  // the capture's outputs; captured_ kept when some are inputs
};


}  // namespace encore
