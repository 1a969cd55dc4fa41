#pragma once
// One home per item kind. Everything the core needs to know about a kind (the buffers an item
// touches, the queue that runs it, how it is named, run eagerly, bound and replayed) is one table
// of plain functions, filled in by the kind's own file (src/exec/<kind>_item.cpp) and listed in
// src/exec/kinds.cpp. Eager execution, the capture check, the plan, sync, the binding, the replay
// loop, tracing and debug output reach a kind only through its table, so adding a kind means one
// file and one table entry.
//   const KindOps& k = kind_of(item);
//   k.operands(item, ops);  // the buffers it touches, with their access
//   k.run_eager(item);
#include <chrono>
#include <string>
#include <vector>

#include "trace/trace.hpp"
#include "exec/bound.hpp"

namespace encore::detail {

// One buffer an item touches: its handle inside the item (a kernel's argument, a copy's source),
// the access, and its place in the item (`arg`: the index in item.args for kinds whose buffers are
// arguments, else the operand's own position).
struct Operand {
  Buffer* buf;
  Access access;
  uint32_t arg;
};

struct KindOps {
  const char* name;  // "kernel", "copy", ...
  // Appends the buffers the item touches to `out`, always in the same order for one item.
  void (*operands)(const ExecItem& it, std::vector<Operand>& out);
  // What operand `k` (its position in operands()) is called in messages: "argument 2 (float* y)".
  std::string (*operand_name)(const ExecItem& it, uint32_t k);
  // The device whose queue runs the item.
  const std::shared_ptr<DeviceImpl>& (*queue)(const ExecItem& it);
  // The item in a word or two: the kernel's or the call's name, else the kind (debug, traces).
  std::string (*label)(const ExecItem& it);
  // The item in messages: "kernel add", "copy", "native call allreduce".
  std::string (*title)(const ExecItem& it);
  // One line with its arguments (ExecItem::describe).
  std::string (*describe)(const ExecItem& it);
  // Whether its arguments or launch sizes use a Variable.
  bool (*uses_variables)(const ExecItem& it);
  // Its effects are not all visible in its operands (native code may keep state): never one-time.
  bool opaque;
  // Its bound form takes each operand's kernel-argument handle (a sub-buffer for a view), not the
  // storage and offset.
  bool handles;
  // Runs it at once, arguments already checked, and bumps the versions of what it writes
  // (traced and printed when those are on).
  void (*run_eager)(const ExecItem& it);
  // Runs it as new eager work through the public, checked entry point (Device::run).
  void (*submit)(const ExecItem& it);
  // Fills bound item `x` for plan step `st`: the entries' current buffers are c.b.current[st.ops[k]];
  // records each operand's use in c.b.uses so a rebinding reaches it through point().
  void (*bind)(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x);
  // Re-points operand `k` (argument `arg`) of bound item `x` at `to` (`handle`: its kernel-argument
  // handle, set when the kind takes handles).
  void (*point)(BoundItem& x, uint32_t k, uint32_t arg, BufferImpl* to, NativeMem* handle);
  // The replay of a bound item (copied into BoundItem::replay: the replay loop's one call; `bind`
  // may replace it with one chosen for the item, as the copy kind does per variant).
  void (*replay)(Binding& b, BoundItem& x);
  // Replays it with a completion event of its own (traces; the end of a device's replay): false
  // when it ran nothing (an empty launch: nothing to trace, nothing to wait for), else true with
  // `*ev` set to the event (the caller owns it), or to null where the device completes work as it
  // is enqueued (NULL). A null function: the kind has no event of its own.
  bool (*replay_event)(BoundItem& x, NativeEvent** ev);
  // Its replay leaves host memory for the device to read after the call returns (an upload's
  // snapshot or staging copy): a unit with such an item must know when each replay completed, so
  // each takes its events (InFlight never groups its replays). Opaque kinds count as reading too.
  bool host_reads = false;
  // The launch sizes a bound item runs with (traces, ENCORE_DEBUG=2): null for kinds without.
  const LaunchDims* (*launch)(const BoundItem& x) = nullptr;
};

// A split-phase native call's two replay items (src/unit/sync.cpp places them): the begin at the
// call's place, the finish where its results are first needed.
void replay_begin(Binding& b, BoundItem& x);
void replay_finish(Binding& b, BoundItem& x);

const KindOps& kind_of(ItemKind k);
inline const KindOps& kind_of(const ExecItem& it) { return kind_of(it.kind); }

// The kinds' tables (one per file).
extern const KindOps kernel_kind, copy_kind, upload_kind, native_kind, fill_kind, host_kind, branch_kind, loop_kind;

// Shared by the kinds' files.
// Bumps the version of every buffer argument the item may write.
void bump_written(const std::vector<Arg>& args);
// "(x in, y out, n scalar)": arguments in describe().
std::string args_str(const std::vector<Arg>& args);
// Records an item that ran eagerly into this thread's capture, if one is active.
void record_item(ExecItem&& item);
// Eager kernel launch from checked arguments (launch_args' fast path and the kernel kind): sets
// them on the kernel's eager object and enqueues; false when the launch was empty (a zero global
// size). `ld`/`ns` report what ran; `traced` set: a trace event for that item.
bool run_kernel_eager(KernelImpl& k, const std::vector<Arg>& args, const Sizes& global, const Sizes& local, LaunchDims& ld,
                      uint64_t* ns, const ExecItem* traced = nullptr);
// What the trace and ENCORE_DEBUG=2 see of an item (trace/trace.hpp), and their calls for one.
ItemView item_view(const ExecItem& it);
void trace_item(DeviceImpl& dev, OwnedEvent ev, const ExecItem& it, const char* phase, uint32_t dims, const size_t* gws);
void debug_print_item(const ExecItem& it, uint32_t dims, const size_t* gws, const size_t* lws, uint64_t device_ns, double host_us);
// Host microseconds since `t0` (debug lines).
double micros_since(std::chrono::steady_clock::time_point t0);
// When an eager item starts, read only for ENCORE_DEBUG=2's line (otherwise every recorded item
// read the clock for a line that is off).
std::chrono::steady_clock::time_point eager_start();
// After an item without launch sizes ran eagerly on `dev`: its trace event and ENCORE_DEBUG=2 line.
void after_eager(const ExecItem& it, DeviceImpl& dev, std::chrono::steady_clock::time_point t0);

}  // namespace encore::detail
