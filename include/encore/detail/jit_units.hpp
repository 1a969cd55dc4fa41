#pragma once
// TinyJit's machinery, in the library: JitCore is one input signature's calls (warm-up, capture,
// replay, verify), JitUnits the jit's set of them (found by signature, least recently used dropped,
// the warnings about signatures that never replay) and its lock. Not for direct use (encore/jit.hpp).
#include <any>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "encore/buffer.hpp"
#include "encore/detail/jit_args.hpp"
#include "encore/execution_unit.hpp"
#include "encore/export.hpp"
#include "encore/jit_options.hpp"

namespace encore {

// One unit a TinyJit holds (TinyJit::units()): its signature ("f32[1024] on CL:0, ..."), its calls
// so far and its unit (empty until that signature's call 2).
struct JitUnitEntry {
  std::string signature;
  uint64_t calls;
  const ExecutionUnit* unit;
};

namespace detail {

struct ArenaPool;  // the arenas the units of one TinyJit share (src/unit/unit.hpp)

// One input signature's calls. TinyJit runs the callable; this does the rest of each call.
class ENCORE_API JitCore {
 public:
  JitCore(const JitOptions& o, std::shared_ptr<ArenaPool> pool);
  ~JitCore();
  JitCore(JitCore&&) noexcept;
  JitCore& operator=(JitCore&&) noexcept;
  static bool capture_active();   // a capture (or a warm-up's recording) is recording on this thread

  // Calls of this signature that completed (0 again after a failed capture check).
  uint64_t calls() const { return calls_; }
  void completed() { ++calls_; }
  bool records_outputs_at_warmup() const { return check_closure_; }
  bool fresh_outputs() const { return fresh_outputs_; }
  bool outputs_follow_inputs() const { return input_outputs_; }  // some output is (a view of) an input
  // This call's flattened arguments (TinyJit swaps each call's in).
  CallArgs& args() { return args_; }
  const ExecutionUnit& unit() const { return unit_; }
  ExecutionUnit& unit() { return unit_; }
  // The capture's outputs as the callable returned them (a std::any of its result type), and that
  // value kept apart when some outputs follow the inputs.
  std::any result, captured;

  // Call 0: records its items for the capture check (CaptureOptions::check_closure; else no-ops).
  void begin_warmup();
  void end_warmup(const std::vector<Buffer>& outputs);
  void abandon_warmup() noexcept;
  void begin_capture();
  // Checks call 1 against call 0 (a failed check starts the jit over at call 0), then builds the
  // unit from the arguments and the outputs.
  void end_capture(const std::vector<Buffer>& outputs);
  void abandon_capture() noexcept;
  void check_and_bind();          // validates the arguments against the capture and binds slots
  void replay() { unit_(); }
  // Verify mode: whether this replay is checked (counts one down), then snapshot external state,
  // let the caller run eagerly, compare.
  bool verify_next() {
    if (verify_left_ <= 0) return false;
    --verify_left_;
    return true;
  }
  // Whether the next call runs with the call's BindingScope open: calls 0 and 1 and a verified
  // replay run the callable eagerly, and a replay of a step that runs code of the user's on the host
  // (a native call, a host item, a branch or loop) lets that code read Variable values and set a
  // host item's values for the rest of the call. A replay of any other step reads no Variable
  // through the scope.
  bool needs_binding_scope() const { return calls_ < 2 || verify_left_ > 0 || host_code_; }
  void verify_begin();
  void verify_after_eager(const std::vector<Buffer>& eager_outputs);
  void verify_finish();  // compares with what this call returns
  // Replay: the buffer to return as output k. An output that is (a view of) an input follows the
  // input bound this call; every other output is the captured buffer.
  Buffer output_now(size_t k);

 private:
  uint64_t calls_ = 0;
  int64_t verify_left_ = 0;
  bool check_closure_ = true, fresh_outputs_ = false, input_outputs_ = false;
  bool host_code_ = true;  // the captured step runs code of the user's on the host (set at capture)
  CallArgs args_;
  ExecutionUnit unit_;
  struct State;
  std::unique_ptr<State> s_;
};

// A TinyJit's units, one per input signature, and its lock.
class ENCORE_API JitUnits {
 public:
  explicit JitUnits(const JitOptions& o);  // o already validated
  ~JitUnits();
  JitUnits(JitUnits&&) noexcept;
  JitUnits& operator=(JitUnits&&) noexcept;

  struct Lock;
  // Holds the jit's lock. Its step runs under it, so a step that calls its own jit again (a call,
  // reset, unit_for) on the same thread would deadlock: that is a JitError naming `op` instead.
  class ENCORE_API Guard {
   public:
    Guard(const JitUnits& u, const char* op);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Lock& l_;
  };

  const JitOptions& options() const;
  // The unit of `args`'s signature (the last call's again without building a signature, another
  // held one, or a new one, dropping the least recently used past max_units; max_units 1 keeps the
  // one unit, which refuses other inputs itself). `args` is handed to it, and takes its last
  // arguments back, let go: both keep their capacity.
  JitCore& select(CallArgs& args);
  void replayed() { ++replays_; }  // for the warning's count of calls that replayed
  // The held unit of `args`'s signature, or null (unit_for, drop).
  const JitCore* find(const CallArgs& args) const;
  bool drop(const CallArgs& args);  // whether there was one
  void reset();
  const JitCore* last() const;  // the last call's signature's, or null
  JitCore* last() { return const_cast<JitCore*>(std::as_const(*this).last()); }
  std::vector<JitUnitEntry> entries() const;  // most recently used first

 private:
  uint64_t replays_ = 0;
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace detail
}  // namespace encore
