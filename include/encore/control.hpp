#pragma once
// Steps that decide: a host item (a few device bytes read back mid-step set Variables that later
// items use), a branch (one of several child sequences, picked by a Variable), and loops (a child
// sequence run a Variable's number of times, or until a host condition says stop), all inside one
// captured step and replayed as one unit, exactly as eager execution runs them.
//
//   encore::Variable q{"q0sqr*1e6", 0, 1 << 30}, live{"live", 0, 1 << 20};
//   dev.launch(reduce, {n}, {256}, img, sums);
//   dev.host({sums.view(0, 2)}, {q}, [n](encore::HostCtx& c) {          // one round trip
//     float s = c.read<float>(0, 0), s2 = c.read<float>(0, 1);
//     c.set(q, static_cast<int64_t>((s2 / n - (s / n) * (s / n)) * 1e6));
//   });
//   dev.launch(srad, {n}, {}, img, q);                                    // sees this call's value
//   dev.when(decay, [&] { dev.launch(scale, {1}, {}, lr_buf, 0.5f); });   // decay: a bound Variable
//   dev.repeat(substeps, [&] { dev.launch(step, {n}, {}, x, y); dev.launch(step, {n}, {}, y, x); });
//   dev.loop_while(200, {resid}, [&] { dev.launch(jacobi, {n}, {}, a, b); ... },
//                  [tol](encore::HostCtx& c) { return c.read<float>(0) > tol; });
//
// The rules (each enforced; see docs/control-flow.md):
// - Functions given to host items and loop conditions are KEPT by the unit and called at every
//   replay, long after the step function returned: capture by value ([=], [n]), never a step's
//   local by reference. They reach device data only through HostCtx (reads by index: the
//   buffers bound on replay), and Variables only through set().
// - A Variable a host item sets is declared in its `sets`; setting another is an ArgumentError.
//   Items may use it only after the host item, in the same child sequence or one nested inside
//   it (a JitError at capture otherwise: on replay an earlier or sibling item would see a stale value).
//   A value outside the Variable's bounds is an ArgumentError naming both, raised before anything
//   later in the step is enqueued (the replay stops there; the unit stays usable).
// - A branch or a loop body is a child sequence. At capture every alternative of a branch (and a
//   loop body that runs zero times) is traced once without running its work on the device (its
//   function runs, its launches are recorded, nothing executes): keep host side effects out of
//   those functions. Only the taken alternative runs, eagerly and on replay.
// - A loop body must do the same work every iteration: it is recorded once. Iterations after the
//   first are compared with it at capture (buffers allocated inside the body pair by allocation
//   order); a body that alternates buffers across iterations (std::swap(a, b)) is a JitError:
//   ping-pong inside one iteration (step a->b, then b->a) instead.
// - A buffer allocated inside a branch alternative or a loop body is that body's own: using it
//   after the branch or loop is a JitError at capture (allocate it before).
// - Cost on replay: one blocking read of the declared bytes per host item (no whole-queue finish),
//   a loop_while condition the same per iteration; a branch or a counted loop costs no round trip.
// - One device per step that decides (host items, branches and loops over several devices are a
//   JitError at capture in this version), and no split-phase native calls (collectives) in it.
// - None of them may be added from inside a host function or a native callback
//   (encore::opencl::enqueue_native): a JitError, as that callback runs again at every replay.
// - The trace (encore/profile.hpp) and ENCORE_DEBUG=2 show what each replay decided.
// Host values that only pick which work runs (every 10th step) may instead be passed to the
// TinyJit call as a key (encore::key): each value then gets its own unit.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#include "encore/error.hpp"
#include "encore/export.hpp"
#include "encore/variable.hpp"

namespace encore {

namespace detail {
struct HostFrame;
}

// What a host function sees: the bytes of the buffers it declared it reads (by index, in the order
// given), and the Variables it declared it sets.
//   [](encore::HostCtx& c) { if (c.read<int32_t>(0) > 0) c.set(live, c.read<int32_t>(0)); }
class ENCORE_API HostCtx {
 public:
  explicit HostCtx(detail::HostFrame& f) : f_(&f) {}
  size_t reads() const noexcept;
  // Bytes of read `r` (ArgumentError when r is not a declared read).
  size_t bytes(size_t r) const;
  const void* data(size_t r) const;
  // Element `index` of read `r` as a T (ArgumentError past its end).
  template <class T> T read(size_t r, size_t index = 0) const {
    static_assert(std::is_trivially_copyable_v<T>, "HostCtx::read: T must be trivially copyable");
    check_read(r, index, sizeof(T));
    T v;
    std::memcpy(&v, static_cast<const unsigned char*>(data(r)) + index * sizeof(T), sizeof(T));
    return v;
  }
  // Sets a declared Variable for the rest of the step (checked against its bounds here).
  void set(const Variable& v, int64_t value);
  void set(const Variable& v, double value);
  template <std::integral T> void set(const Variable& v, T value) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
      if (value > static_cast<T>(INT64_MAX)) detail::variable_value_too_large(v, value);
    set(v, static_cast<int64_t>(value));
  }
  void set(const Variable& v, float value) { set(v, static_cast<double>(value)); }

 private:
  void check_read(size_t r, size_t index, size_t elem) const;
  detail::HostFrame* f_;
};

// A host item's function; a loop condition (true: run the body again).
using HostFn = std::function<void(HostCtx&)>;
using HostCond = std::function<bool(HostCtx&)>;

}  // namespace encore
