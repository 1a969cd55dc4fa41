#pragma once
// Seeded generator of random step functions for the property tests (DESIGN.md rules 1-3), with
// three independent interpreters of the same generated program:
//   - run_device(): the step as a plain C++ function issuing encore work (eager, or through TinyJit),
//   - run_host():   the same kernels computed in plain C++ (no OpenCL), bit for bit,
//   - reference_one_time(): the one-time fixpoint of DESIGN rule 2 written from the rule text.
// Nothing here shares code with src/unit/prune.cpp or src/unit/memory_planner.cpp.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "encore/device.hpp"
#include "encore/jit.hpp"

namespace prop {

enum class Ty : uint8_t { f32, i32, u32 };

// The fixed kernel library (one OpenCL program, compiled once per device and process).
enum class KId : uint8_t { affine, add, mulc, max2, tern, sel, inplace, counter, from_counter, rng, table, var_add, vprefix, var_scale, count_ };

struct Value {
  enum Src : uint8_t { input, state, temp, view } src = temp;
  int index = -1;  // input / state index
  int base = -1;   // view: the viewed value (never itself a view)
  int off = 0;     // view: element offset (a multiple of 32: 128 bytes)
  int count = 0;
  Ty ty = Ty::f32;
  int dev = 0;     // the device the value lives on (a view: its base's); see GenOptions::devices
};

struct Op {
  enum Kind : uint8_t { alloc, view, kernel, copy, upload, fill } kind = kernel;
  int v = -1;    // alloc / view: the value defined; copy / upload / fill: the destination
  int src = -1;  // copy: the source (on another device than `v` for a cross-device copy)
  int dev = 0;   // the device that runs it: a kernel's buffers' device, a copy's or upload's destination's
  KId k = KId::affine;
  std::vector<int> bufs;              // kernel buffer arguments, in parameter order
  std::vector<encore::Access> acc;    // per buffer argument: Access::none (from qualifiers) or stated
  float f0 = 0, f1 = 0;               // float scalars where the kernel takes them
  bool var_scalar = false;            // var_add: the int scalar is the Variable `sv`; var_scale: the float Variable `fv`
  bool var_size = false;              // global size is the Variable `len`
  int gsize = 0;                      // literal global size
  std::vector<uint32_t> data;         // upload; fill: one word, the value
};

// A kernel op: k over `bufs` with their accesses (the missing ones Access::none) and its float
// scalars; the caller sets the global size and the device.
inline Op kernel_op(KId k, std::vector<int> bufs, std::vector<encore::Access> acc, float f0, float f1) {
  Op op;
  op.kind = Op::kernel;
  op.k = k;
  op.bufs = std::move(bufs);
  op.acc = std::move(acc);
  op.acc.resize(op.bufs.size(), encore::Access::none);
  op.f0 = f0;
  op.f1 = f1;
  return op;
}

struct HostEvent {
  int before_call = 0;
  int state = 0;
  std::vector<uint32_t> data;
};

struct Features {
  bool table = false, table_late_state = false, counter = false, rng = false, cycle = false, var_scalar = false,
       var_size = false, input_written = false, upload = false, copy = false, view = false, loop_carried = false,
       host_update = false, host_update_replay = false, edit_output = false, feedback = false, cross_copy = false,
       fill = false;
};

struct Prog {
  uint64_t seed = 0;
  int N = 0, M = 0;
  int devices = 1;                          // values spread over devices 0..devices-1
  int align = 32;                           // view offsets are multiples of this many elements
  std::vector<Value> values;
  std::vector<int> input_vals, state_vals;  // value ids per input / state
  std::vector<Op> ops;
  std::vector<int> outputs;                 // value ids returned
  bool has_sv = false, has_len = false, has_fv = false;  // Variables used
  int64_t sv_lo = -8, sv_hi = 8, len_lo = 1, len_hi = 1;
  std::vector<std::pair<int64_t, int64_t>> var_vals;     // per call: (sv, len)
  std::vector<float> fv_vals;                            // per call: fv
  std::vector<std::vector<std::vector<uint32_t>>> input_sets;  // [set][input] words
  std::vector<std::vector<uint32_t>> state_init;             // [state] words
  std::vector<HostEvent> events;
  std::vector<int> edit_after;              // calls after which returned temps are overwritten by the host
  int fb_input = -1, fb_output = -1;        // from call 1 on, input fb_input is the previous call's output fb_output
  bool ring_inputs = false;                 // each input's 3 sets are views at different offsets of one buffer
  int free_after = -1;
  bool dup_input = false;                   // the last input slot gets the same buffer as slot 0, every call                      // jit: unit().free_intermediates() after this call
  Features f;

  int add_temp(int count, Ty ty = Ty::f32, int dev = 0);  // appends a temporary and its alloc op; returns its value id
  int add_view(int base, int off, int count);  // appends a view of `base` and its view op; returns its value id
  size_t device_items() const;              // ops that become ExecItems (kernel, copy, upload, fill)
  std::string describe() const;             // one line per op, for failure messages
};

constexpr int kCalls = 6, kSets = 3;

struct GenOptions {
  int min_ops = 5, max_ops = 16;
  bool allow_views = true;
  // 2: every input, state and temporary lives on device 0 or 1 at random; a kernel runs on the
  // device of its buffers (all on one device), and data moves between devices by cross-device
  // copies (items too). 1: everything on one device (the same programs as before for a seed).
  int devices = 1;
  // View offsets are multiples of this many 4-byte elements: the device's base alignment / 4 (32
  // on PoCL's 128 bytes; GPUs report 512 or more). 32 gives the same programs as before for a seed.
  int view_align = 32;
};
Prog generate(uint64_t seed, const GenOptions& o = {});
// GenOptions::view_align for views on `d` (32 for a null Device).
int view_align(const encore::Device& d);

// ---- results ------------------------------------------------------------------------------------
using Words = std::vector<uint32_t>;
struct RunResult {
  std::vector<std::vector<Words>> outs;  // [call][output]
  std::vector<Words> states;             // after the last call
  std::vector<std::vector<Words>> inputs;  // [set][input] after the last call
  // jit only
  std::vector<bool> one_time;
  encore::UnitStats stats;
  size_t unit_items = 0;
  std::string error;                     // an exception escaped (message)
};

// First difference between two runs, "" when equal bit for bit.
std::string compare(const Prog& p, const RunResult& expect, const RunResult& got, const char* expect_name, const char* got_name);

// The step run on `dev`: jit == nullptr: every call eager; otherwise through a TinyJit with these
// options. `foreign`: the kernels are built without `const` (as code written for plain OpenCL often
// is), so their access comes from the reader's inference and the capture's access check.
RunResult run_device(const Prog& p, const encore::Device& dev, const encore::JitOptions* jit, bool foreign = false);
// The same over several devices: value device d runs on devs[d % devs.size()].
RunResult run_device(const Prog& p, const std::vector<encore::Device>& devs, const encore::JitOptions* jit, bool foreign = false);
// The kernel library as `foreign` runs build it: every `__global const` is `__global`.
std::string foreign_source();
// The kernels computed on the host.
RunResult run_host(const Prog& p);

// `a + b`: calls 0 and 1 are explicit captures (sets 0 and 1), concatenated; the concatenation then
// replays calls 2+3 and 4+5 in one run each. Needs a step without Variables, feedback, output edits,
// free_intermediates or host updates before odd calls (pair_program() makes one).
Prog pair_program(const Prog& p);
RunResult run_device_concat(const Prog& p, const encore::Device& dev, const encore::UnitOptions& opt);
// The step twice in a row, as the concatenation sees it (second copy: its own inputs and temps).
Prog doubled(const Prog& p);

// ---- structure ----------------------------------------------------------------------------------
struct RefAccess {
  int storage;
  uint64_t lo, hi;
  bool read, write;
};
struct RefItem {
  std::vector<RefAccess> acc;
  bool touches_input = false, uses_variable = false;
};
// Items in capture order (one per kernel / copy / upload op) with their storage accesses, the first
// access to storage created in the step counted as a pure write.
std::vector<RefItem> reference_items(const Prog& p);
// DESIGN rule 2 written plainly: start from every item, remove violators until nothing changes.
std::vector<bool> reference_one_time(const std::vector<RefItem>& items);
// An item reads closure bytes that a later item writes.
bool has_loop_carried(const Prog& p, const std::vector<RefItem>& items);

}  // namespace prop
