#pragma once
// Workload files (`encore.workload/1`, see docs/workload-format.md): a step function described in JSON, run
// eagerly and through TinyJit by `encore-bench` and checked for equal results.
//   encore::workload::Workload w = encore::workload::load("heat.json");   // WorkloadError if invalid
//   encore::Device dev = encore::Device::open();
//   encore::workload::Report r = encore::workload::run(w, dev, {});
//   std::cout << r.table();
// Every WorkloadError names the JSON path of the problem: `step[3].args[1]: unknown buffer "w9"`.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "encore/device.hpp"
#include "encore/dtype.hpp"
#include "encore/error.hpp"
#include "encore/execution_unit.hpp"
#include "encore/export.hpp"
#include "encore/jit.hpp"
#include "encore/program.hpp"
#include "encore/variable.hpp"

namespace encore {

// An invalid workload file (encore-bench exits 2). path() is the JSON path ("" = top level).
class ENCORE_API WorkloadError : public Error {
 public:
  WorkloadError(std::string path, const std::string& message);
  const std::string& path() const noexcept { return path_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string path_, message_;
};

namespace workload {

enum class Role : uint8_t { input, state, const_, temp, output };
ENCORE_API const char* name(Role r);

// A JSON number as written: integers exact (within 64 bits), anything else as a double.
struct Number {
  enum class Kind : uint8_t { sint, uint, real } kind = Kind::sint;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool integral() const { return kind != Kind::real; }
};

struct Init {
  enum class Kind : uint8_t { zeros, fill, uniform, arange, file } kind = Kind::zeros;
  Number fill;                          // fill
  double lo = 0, hi = 0;                // uniform
  uint64_t seed = 0;                    //   (mod 2^64)
  Number start, step;                   // arange
  // file (resolved against the workload's directory): "file" gives one, "files" several, rotated
  // like generated input sets (set k reads files[k % files.size()])
  std::vector<std::filesystem::path> files;
};

struct BufferSpec {
  std::string name;
  DType dtype = DType::f32;
  size_t count = 0;
  Role role = Role::temp;
  Init init;
};

struct VariableSpec {
  std::string name;
  VarType type = VarType::i64;          // "int" is i64 here; `as` picks the argument type
  int64_t min = 0, max = 0;             // int bounds
  double fmin = -1e300, fmax = 1e300;   // float bounds
  std::vector<int64_t> ivalues;         // int: values[call % size]
  std::vector<double> fvalues;          // float
  size_t size() const { return type == VarType::i64 ? ivalues.size() : fvalues.size(); }
};

// m·var + a, or the literal a when var < 0; or, when `expr` is set, that expression's text (the
// form encore::Size::parse reads) over the variables `vars` (their indexes, each once).
struct SizeExpr {
  int var = -1;
  int64_t mul = 1, add = 0;
  std::string expr;
  std::vector<int> vars;
  // The affine form, for values the parser checked: the result fits int64 even where mul·v alone
  // does not (2n - 10 at n = 2^62 + 3), so it is computed modulo 2^64, which is then exact.
  int64_t eval(int64_t v) const {
    return var < 0 ? add : static_cast<int64_t>(static_cast<uint64_t>(mul) * static_cast<uint64_t>(v) + static_cast<uint64_t>(add));
  }
};

struct ArgSpec {
  enum class Kind : uint8_t { buffer, scalar, variable, local, bytes } kind = Kind::buffer;
  int buffer = -1;                      // buffer
  Access access = Access::none;         //   none: from the kernel's qualifiers
  bool view = false;                    //   offset/count given
  size_t offset = 0, count = 0;         //   elements; count resolved against the buffer
  DType dtype = DType::i32;             // scalar type, or the variable's argument type
  bool as_given = false;                //   variable: "as" fixes dtype; without it an int variable takes an integer parameter's type
  uint64_t bits = 0;                    // scalar value, little-endian in the low bytes
  int variable = -1;                    // variable
  size_t local_bytes = 0;               // local
  std::vector<unsigned char> bytes;     // bytes: a by-value vector or struct ({"bytes": "<hex>"}; per call: entry 0)
  std::vector<std::vector<unsigned char>> per_call;  // {"bytes": ["<hex>", ...]}: call i passes per_call[i % size] (a host input)
};

struct ItemSpec {
  enum class Kind : uint8_t { launch, copy } kind = Kind::launch;
  int program = -1;                     // launch
  std::string kernel;
  std::vector<ArgSpec> args;
  std::vector<SizeExpr> global, local;  // local empty: encore chooses
  std::string name;
  double est_ops = 0, est_bytes = 0;
  int src = -1, dst = -1;               // copy
};

struct ProgramSpec {
  std::string name, source, options;
  std::filesystem::path source_file;    // empty when given inline
  // "binary" (save_workload writes it): the device binary, used instead of compiling where its key
  // equals Device::binary_key(source, options) on the device and its bytes hash to `binary_sum`
  std::filesystem::path binary_file;    // empty: none
  std::string binary_key, binary_sum;   // binary_sum: 64-bit FNV-1a of the file's bytes, 16 hex digits
};

struct ENCORE_API Workload {
  std::string name;
  bool has_tolerance = false;
  double rtol = 0, atol = 0;
  std::vector<ProgramSpec> programs;
  std::vector<BufferSpec> buffers;
  std::vector<VariableSpec> variables;
  std::vector<ItemSpec> step;
  std::filesystem::path base_dir;       // source_file and init files are relative to it
  // "shapes" (see README, "The harness"): the workload at each set of shape values, every
  // {"shape"} reference resolved; this Workload is sets[0]. Empty without "shapes".
  std::vector<std::string> shape_names;
  std::vector<std::vector<int64_t>> shape_values;  // [shape][set]
  std::vector<Workload> sets;

  int find_buffer(std::string_view n) const;
  int find_variable(std::string_view n) const;
  bool bitwise() const { return !has_tolerance || (rtol == 0 && atol == 0); }
};

// Parses and validates everything that needs no device. WorkloadError names the JSON path.
// `root` (encore-bench --root): when given, every file the workload names (source_file, file,
// files) must lie inside it once resolved (no absolute path or `..` out of it): a WorkloadError
// otherwise. Without it a workload file is trusted like a script (docs/workload-format.md, Trust).
ENCORE_API Workload parse(std::string_view json, const std::filesystem::path& base_dir = ".", const std::filesystem::path& root = {});
ENCORE_API Workload load(const std::filesystem::path& file, const std::filesystem::path& root = {});

// The device-dependent checks: compiles the programs (a build failure is a WorkloadError with the
// log), checks each launch's arguments against its kernel's parameters (count, kind, scalar type,
// const buffers the kernel may write) and views against the device's base-address alignment.
struct Compiled {
  std::vector<Program> programs;   // per workload program
  std::vector<Kernel> kernels;     // per step item (empty Kernel for copies)
  std::vector<std::vector<Access>> access;  // per step item, per arg: resolved buffer access
};
ENCORE_API Compiled validate(const Workload& w, const Device& dev);
// validate() of every shape set (of w itself without "shapes"); an error names the set.
ENCORE_API std::vector<Compiled> validate_sets(const Workload& w, const Device& dev);

// Initial contents of buffer `b` (input set `set`: uniform seeds advance by the set index).
ENCORE_API std::vector<unsigned char> initial_bytes(const Workload& w, size_t b, uint64_t set = 0);
// The generators, exposed for golden tests.
ENCORE_API uint64_t splitmix64(uint64_t x);
ENCORE_API double uniform_value(double lo, double hi, uint64_t seed, uint64_t i);
ENCORE_API uint16_t f16_from_double(double v);  // round to nearest even; overflow gives inf
ENCORE_API double f16_to_double(uint16_t bits);
ENCORE_API uint16_t bf16_from_double(double v);  // round to nearest even; overflow gives inf
ENCORE_API double bf16_to_double(uint16_t bits);

// Element comparison under the workload's tolerance (bitwise when it has none).
struct Tolerance {
  bool bitwise = true;
  double rtol = 0, atol = 0;
};
// Index of the first element that disagrees and how many do; both buffers hold `count` elements.
struct Diff {
  size_t first = 0, count = 0;
};
ENCORE_API Diff compare(DType t, const unsigned char* a, const unsigned char* b, size_t count, const Tolerance& tol);
// One element formatted for messages ("1.5", "-3", "nan").
ENCORE_API std::string format_element(DType t, const unsigned char* p);

struct RunOptions {
  int calls = 20;                   // compared calls; also the minimum number of timed calls
  int rotate = 3;                   // input sets
  JitOptions jit = JitOptions::from_env();
  std::filesystem::path dump_dir;   // empty: no dump
  bool progress = false;            // a progress line on stderr
  // For tests: runs after each compared jit call, before its outputs are read back.
  std::function<void(size_t call, const std::vector<Buffer>& outputs)> after_jit_call;
};

// One shape set's figures (a workload with "shapes"): its own unit and medians.
struct SetReport {
  std::string shape;                // "shape set 1 (n = 128)"
  double eager_step_us = 0, replay_step_us = 0, speedup = 0, capture_ms = 0;
  size_t items_pruned = 0, planned_temps = 0;
  uint64_t temp_bytes_naive = 0, temp_bytes_planned = 0, temp_bytes_lower_bound = 0;
};

struct ENCORE_API Report {
  std::string name, device;
  int calls = 0, rotate = 0, timed_calls = 0;
  bool prune = true, plan = true, concurrent = false;
  size_t items = 0, items_replayed = 0, items_pruned = 0;
  size_t chains = 0;                // UnitStats::chains of set 0's unit: independent work for --concurrent
  size_t longest_chain = 0;         // UnitStats::longest_chain of that unit (chains rounds up)
  double eager_step_us = 0, replay_step_us = 0, speedup = 0, capture_ms = 0;
  double eager_item_us = 0, replay_item_us = 0;  // per step item
  double eager_cpu_us = 0, replay_cpu_us = 0;    // calling thread's CPU time per timed call (mean)
  uint64_t temp_bytes_naive = 0, temp_bytes_planned = 0, temp_bytes_lower_bound = 0;
  size_t planned_temps = 0;
  bool compared = true;             // false on the NULL device: it computes nothing
  uint64_t mismatches = 0;          // elements that differ, over every compared call and the final state
  std::string first_mismatch;       // "call 3, buffer "e", index 0: eager 1.5, jit 1.25"
  // With "shapes": one entry per set; the figures above are over all calls (times) and set 0's
  // unit (items and bytes). Empty otherwise.
  std::vector<SetReport> sets;

  std::string table() const;
  std::string json() const;
};

// Runs calls eagerly, then through TinyJit from the same initial state, compares, then times both.
ENCORE_API Report run(const Workload& w, const Device& dev, const RunOptions& opt);

// Saving a captured ExecutionUnit as a workload file, so a frame captured inside an engine can be
// replayed and measured by encore-bench:
//   encore::workload::save_workload(unit, "frame.json", {.name = "frame"});
//   // writes frame.json and frame.data/*.bin (raw little-endian initial contents, referenced as
//   // {"file": "frame.data/NAME.bin"}); then: encore-bench run frame.json --rotate 1
// Mapping (one workload buffer per storage; views become {"buf", "offset", "count"} arguments):
//  - each input slot -> role "input", initialised with the bytes of the input currently bound;
//  - storages created in the capture and returned (the unit's outputs) -> "output";
//  - internal storages (planned temps and other internal roots) -> "temp";
//  - every other storage the items touch -> "state" (written by some item) or "const" (never
//    written), initialised with its current bytes;
//  - each upload (copyin during capture) -> a "const" buffer `uploadN` holding the snapshot plus a
//    copy item into the destination;
//  - a copy the format cannot express (a view on either side) -> a launch of a byte-copy kernel
//    (program `encore_save`, kernel `encore_copy_bytes`), so every unit item is one step item;
//  - variables -> "variables" with the unit's bounds and its current value as the only value.
// Buffer access is always written explicitly (as captured). Throws WorkloadError (naming the step
// item) for what the format cannot hold: scalar arguments of types other than i32/u32/i64/u64/
// f32/f64, non-finite float scalars, size multipliers or offsets outside 32 bits, views whose
// offset or length is not a whole number of the storage's elements, overlapping input slots.
struct SaveOptions {
  std::string name;            // the workload's name; empty: the file's stem
  bool has_tolerance = false;  // write "tolerance" (rtol, atol)
  double rtol = 0, atol = 0;
  // write each program's device binary as NAME.data/PROGRAM.clbin with its key and checksum
  // (Program::binary after the queue drained, Program::binary_key), so load_unit and encore-bench
  // build the programs without compiling on a device the key fits (none on NULL)
  bool binaries = true;
};
ENCORE_API void save_workload(const ExecutionUnit& unit, const std::filesystem::path& path, const SaveOptions& opt = {});

// A saved step loaded as a unit that replays at its first call: no compile where the saved binaries
// fit the device (their key: device name, driver and OpenCL version, build options, source; and
// their checksum), no warm-up call (the step is recorded without running, CaptureOptions::
// record_only; the first run also runs the items a replay prunes, once). Engines load their frame
// this way at start-up:
//   encore::workload::LoadedUnit frame = encore::workload::load_unit(dev, "frame.json");
//   frame.unit();                                      // the first call: a replay
//   frame.unit.bind_input(0, next_input).bind_var(0, 17)();
//   std::vector<float> out = frame.buffer("out").copyout<float>();
// What it gives: the unit, with input slot k bound to buffers[k] (the first names: inputs in slot
// order, holding the saved bytes), then the state and const buffers its items use (holding theirs),
// then its outputs (written by each run, in place); temps are the unit's own. Variables keep their
// saved values until bound (unit.variable(slot).name() is the saved name). A program whose binary
// does not fit (another device or driver, edited options or source, a damaged or missing file) is
// compiled from source instead, never used: from_source names it and ENCORE_DEBUG=1 says why.
// WorkloadError for what the format or the device refuses, and for a file with "shapes"; JitError
// for a step a record-only capture cannot hold. The buffers are made on a thread of their own while
// the programs build (where no thread can start: on the calling thread after the build, and not at
// all when the build fails); an error of the build is reported before one of the buffers'.
struct ENCORE_API LoadedUnit {
  ExecutionUnit unit;
  std::vector<std::string> names;        // per buffer: its name in the file
  std::vector<Buffer> buffers;           // inputs (by slot), state and const, outputs
  // programs not built from their binary: compiled from source, or, in a process that holds the same
  // program already (same source, options and includes), that program reused, which compiles nothing
  // and is named here when it was itself built from source
  std::vector<std::string> from_source;
  // The buffer of that name; ArgumentError listing the names when there is none.
  Buffer buffer(std::string_view name) const;
};
ENCORE_API LoadedUnit load_unit(const Device& dev, const std::filesystem::path& file, const UnitOptions& opt = {});

// `encore-bench start`: a new process's way to its first replayed step, timed: opening the device,
// then either loading the saved unit (load_unit) or, with from_source, what a program does
// (compile from source with its buffers made beside it, as load_unit makes them, TinyJit's warm-up
// and capture calls), then the first replay to completion.
// After the timing, the calls made are run eagerly from the same initial state and compared.
struct ENCORE_API StartReport {
  std::string name, device, path;
  bool from_source = false;
  double open_ms = 0, build_ms = 0, first_ms = 0, total_ms = 0;  // total: from before opening the device
  size_t programs = 0, compiled = 0;  // compiled: programs built from source
  bool compared = true;               // false on NULL
  uint64_t mismatches = 0;
  std::string first_mismatch;
  std::string table() const;
};
ENCORE_API StartReport start(const std::filesystem::path& file, const std::string& device, bool from_source);

}  // namespace workload
}  // namespace encore
