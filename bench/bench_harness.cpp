// The workload harness on large untrusted files (issue 28 item 8): `check`'s parse of a file with
// many shape sets (each set one parse; the sets' distinct-inputs check was pairwise: 177 s for
// 50k sets) and of size expressions whose variables cycle through 2^20 calls (each expression was
// re-parsed per call: ~10 s for a 10 KB file).
//   bench-harness --benchmark_min_time=0.01
#include <benchmark/benchmark.h>

#include <string>

#include "encore/workload.hpp"

namespace {

std::string head(const std::string& variables) {
  return R"({"format": "encore.workload/1", "name": "b",
    "programs": {"p": {"source": "__kernel void k(__global const float* a, __global float* b, int n) { }"}},
    "variables": {)" + variables + "},";
}

// `sets` shape sets of one input buffer, each of its own count.
std::string shape_sets(int sets) {
  std::string q;
  for (int k = 0; k < sets; ++k) q += (k ? "," : "") + std::to_string(k + 1);
  return head(R"("n": {"min": 0, "max": 10, "values": [1]})") + R"("shapes": {"q": [)" + q + R"(]},
    "buffers": {"a": {"dtype": "f32", "count": {"shape": "q"}, "role": "input"},
                "b": {"dtype": "f32", "count": {"shape": "q"}, "role": "output"}},
    "step": [{"launch": "p.k", "args": ["a", "b", {"var": "n"}], "global": [{"shape": "q"}]}]})";
}

// `items` launches, each with a size expression over two variables whose value lists cycle in
// 1024 * 1023 calls (check evaluates each expression for a full cycle, at most 2^20 calls).
std::string long_cycles(int items) {
  std::string a, b;
  for (int k = 0; k < 1024; ++k) a += (k ? "," : "") + std::to_string(k % 7 + 1);
  for (int k = 0; k < 1023; ++k) b += (k ? "," : "") + std::to_string(k % 5 + 1);
  std::string step;
  for (int k = 0; k < items; ++k)
    step += std::string(k ? "," : "") + R"J({"launch": "p.k", "args": ["a", "b", {"var": "n"}], "global": [{"expr": "min(max(n * 2 + m, 1), 64)"}]})J";
  return head(R"("n": {"min": 0, "max": 10, "values": [)" + a + R"(]}, "m": {"min": 0, "max": 10, "values": [)" + b + "]}") +
         R"("buffers": {"a": {"dtype": "f32", "count": 64, "role": "input"}, "b": {"dtype": "f32", "count": 64, "role": "output"}},
    "step": [)" + step + "]}";
}

void BM_ShapeSets(benchmark::State& st) {
  const std::string json = shape_sets(static_cast<int>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(encore::workload::parse(json));
  st.counters["sets"] = static_cast<double>(st.range(0));
}
BENCHMARK(BM_ShapeSets)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_LongCycleExpressions(benchmark::State& st) {
  const std::string json = long_cycles(static_cast<int>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(encore::workload::parse(json));
  st.counters["file_bytes"] = static_cast<double>(json.size());
}
BENCHMARK(BM_LongCycleExpressions)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
