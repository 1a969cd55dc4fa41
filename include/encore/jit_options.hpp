#pragma once
// What a TinyJit is told: JitOptions (how it calls, captures and replays) and Key (a host value that
// picks the step's path). encore/jit.hpp includes this; a header that only passes options along can
// include it alone.
//   encore::JitOptions o = encore::JitOptions::from_env();
#include <cstdint>

#include "encore/execution_unit.hpp"
#include "encore/export.hpp"

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

}  // namespace encore
