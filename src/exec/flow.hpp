#pragma once
// Steps that decide (encore/control.hpp): what host, branch and loop items hold, the host item's
// frame, and the eager side's thread state (dry tracing of alternatives not taken).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encore/control.hpp"
#include "encore/exec_item.hpp"
#include "core/native_fn_guard.hpp"
#include "core/var_state.hpp"

namespace encore::detail {

struct DeviceImpl;

struct Flow {
  std::shared_ptr<DeviceImpl> dev;
  std::string name;
  // host: fn; a loop_while's own condition item: cond sets its Variable (args[reads]) to 1 or 0
  HostFn fn;
  HostCond cond;               // a loop_while's condition item (the last item of its body)
  uint32_t reads = 0;          // host: args[0, reads) are the buffers read, the rest the Variables set
  // branch: the lengths of its alternatives (when: then, else); loop: one entry, the body's length
  std::vector<uint32_t> spans;
  bool when = false;           // branch: non-zero picks alternative 0 (else 1); else the value is the index
  bool counted = false;        // loop: args[0] is the count (repeat); else the condition (loop_while)
  int64_t max_iterations = 0;  // loop_while
  // allocations made inside the children ([lo, hi) of BufferImpl::serial, in capture `capture_id`):
  // none may be used after the item's children
  uint64_t serial_lo = 0, serial_hi = 0, capture_id = 0;
};

// A host item's state while its function runs: the bytes read, the declared Variables and the
// values given so far (committed only after the function returns).
struct HostFrame {
  const Flow* flow = nullptr;
  const unsigned char* const* data = nullptr;
  const size_t* bytes = nullptr;
  size_t n_reads = 0;
  const Arg* sets = nullptr;  // the declared Variables (variable arguments)
  size_t n_sets = 0;
  VarValue* values = nullptr;  // per declared Variable
  uint8_t* given = nullptr;
};

// The items' descriptions ("host srad.q0", "branch decay (2 alternatives)").
std::string flow_title(const ExecItem& it);

// A host function or loop condition running on this thread: it may read and set through its
// HostCtx, never issue device work (that work would not be part of the step, or would run once per
// replay outside it). check_not_in_host throws a JitError naming `what` inside one.
struct HostCall {
  HostCall() noexcept;
  ~HostCall();
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;
};
void check_not_in_host(const char* what);

// Also refuses inside a native callback (core/native_fn_guard.hpp): it runs again at every replay,
// outside the unit's flow, so a host item, branch or loop it adds would be neither recorded nor replayed.
void check_not_in_native_fn(const char* what);

// Eager: while > 0 on this thread, work is recorded but not run (an alternative not taken, traced
// at capture so that replay knows it). Set only inside a capture.
bool dry_tracing();

}  // namespace encore::detail
