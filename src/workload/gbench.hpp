#pragma once
// Reports of several workloads as one table, and as Google Benchmark JSON (what the benchmark
// library's `--benchmark_out_format=json` writes), so `compare.py benchmarks a.json b.json` from
// libbenchmark-tools compares two encore-bench runs.
#include <string>
#include <vector>

#include "encore/workload.hpp"

namespace encore::workload {

// One row per workload: items, pruned, eager µs, replay µs, speedup, planned/naive temp bytes.
std::string summary_table(const std::vector<Report>& reports);

// Two entries per workload, "NAME/eager" and "NAME/replay", times in µs per step, with counters
// (items, items_replayed, items_pruned, temp_bytes_naive, temp_bytes_planned, planned_temps,
// mismatches); the context describes this machine and `executable`.
std::string gbench_json(const std::vector<Report>& reports, const std::string& executable);

}  // namespace encore::workload
