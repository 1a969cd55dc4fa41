#pragma once
// Every environment variable encore reads, and the only place that reads them (README
// "Environment"). Engines and build systems set variables of their own (DEBUG, PROFILE, ...):
// encore reads nothing without the ENCORE_ prefix except where the cache folder defaults to.
//   ENCORE_DEVICE      Device::open(""): CL, CL:N or NULL (default CL)          each open
//   ENCORE_CACHE       program cache folder; 0 disables (default below)        each compile
//   XDG_CACHE_HOME     the cache's default: $XDG_CACHE_HOME/encore, else        each compile
//   HOME                 $HOME/.cache/encore, else no disk cache
//   ENCORE_JIT=0       TinyJit calls run eagerly (JitOptions::from_env)         each from_env
//   ENCORE_VERIFY=N    check the first N replays against eager runs (from_env)  each from_env
//   ENCORE_PROFILING=1 OpenCL queues with profiling                             each queue made
//   ENCORE_INFER_ACCESS=0  pointers without const count as inout, as before     each compile
//                      access was inferred from kernel bodies (for comparing)
//   ENCORE_DEBUG=1|2   capture summaries / one line per item run                once per process
//   ENCORE_LOG=off|error|warn|info|debug  what is printed (default warn; info
//                      under ENCORE_DEBUG=1, debug under 2); when set it also
//                      filters what a log sink receives                          once per process
//   ENCORE_PROFILE=f   a Chrome trace of the whole process, written at exit     once per process
//   ENCORE_CHECK_SIGNATURES=1  every OpenCL program also gets a metadata build, and its
//                      parameter types must equal the source reader's (tests)  once per process
// ENCORE_DEBUG, ENCORE_LOG and ENCORE_PROFILE are read once: replay checks them on its hot path, and a trace covers a whole
// process. The others are read at each use, so a program (or a test) may set them in between:
// encore-bench --trace sets ENCORE_PROFILING before it opens a device.
// (Tests read ENCORE_TEST_DEVICE_SPLIT, ENCORE_REQUIRE_CL and others themselves: not the library.)
#include <string>
#include <string_view>

namespace encore::detail::env {

std::string device();             // ENCORE_DEVICE; "" when unset or empty
std::string cache_dir();          // the program cache folder; "" when off (ENCORE_CACHE=0, or no HOME)
bool jit();                       // ENCORE_JIT: false only for "0" (default true)
int verify();                     // ENCORE_VERIFY: N >= 0 (default 0; not a number: 0)
bool profiling();                 // ENCORE_PROFILING set and not "0", or ENCORE_PROFILE set
int debug();                      // ENCORE_DEBUG: 0, 1 or 2 (a larger number counts as 2)
const std::string& profile();     // ENCORE_PROFILE: the trace file; "" when unset
bool check_signatures();          // ENCORE_CHECK_SIGNATURES set and not "0" (default false)
bool infer_access();              // ENCORE_INFER_ACCESS: false only for "0" (default true)

// ENCORE_LOG: the most verbose LogLevel printed (0 error, 1 warning, 2 info, 3 debug; -1 off).
struct LogSetting {
  int level = 1;
  bool set = false;    // ENCORE_LOG was given (and understood): it filters a sink too
  bool valid = true;   // false: a value that is none of the names (the default applies)
};
const LogSetting& log_setting();  // read once per process (a bad value says so once on stderr)
// The setting for ENCORE_LOG=`v` (empty: unset) under ENCORE_DEBUG=`debug` (pure: for tests).
LogSetting parse_log(std::string_view v, int debug);

}  // namespace encore::detail::env
