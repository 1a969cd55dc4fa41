#pragma once
// The encore-bench command line (src/tools/encore_bench.cpp is its main; the tests call it in
// process). Internal to the harness library.
#include <functional>

#include "encore/workload.hpp"

namespace encore::workload {

// Returns the exit code (0 agree, 1 differ, 2 invalid/device error). `adjust` (for tests) may
// change the run options after the command line is parsed.
int bench_main(int argc, const char* const* argv, const std::function<void(RunOptions&)>& adjust = {});

}  // namespace encore::workload
