#pragma once
// A Chrome trace-event file of what ran, for Perfetto (ui.perfetto.dev) and chrome://tracing:
// capture phases (record, plan, bind) on a host track; every eager and replayed item on a track per
// device, with device start and end from OpenCL profiling events where the queue profiles
// (ENCORE_PROFILE and ENCORE_PROFILING=1 give such queues), else with host enqueue times.
//   encore::profile::start();
//   for (int i = 0; i < 100; ++i) step(x);
//   encore::profile::stop("trace.json");
// ENCORE_PROFILE=trace.json records from the first device opened until the process exits.
// Events are created only while recording; recording costs nothing when off.
#include <string>

#include "encore/export.hpp"

namespace encore::profile {

// Starts recording (again: drops what was recorded and not written).
ENCORE_API void start();
// Stops recording, waits for the recorded work and writes the trace to `path` (Error when the
// file cannot be written).
ENCORE_API void stop(const std::string& path);
ENCORE_API bool active();

}  // namespace encore::profile
