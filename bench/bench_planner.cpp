// Planner speed and quality on synthetic step graphs: random DAGs, a chain and a U-net-like graph.
//   bench_planner --benchmark_min_time=0.05
// Counters: temps, planned/lower (arena over the peak of live bytes: 1.0 is optimal), naive/planned.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "encore/memory_planner.hpp"

namespace {

struct Graph {
  std::vector<uint64_t> bytes;
  std::vector<encore::TempUse> uses;
};

// Odd sizes from 100 B to ~4 MB, log-uniform, so alignment padding and size mismatch both matter.
uint64_t odd_size(std::mt19937_64& rng) {
  return uint64_t(std::exp(std::uniform_real_distribution<double>(std::log(100.0), std::log(4e6))(rng))) | 1;
}

// Item i writes temp i and reads 1-3 earlier temps, mostly recent ones, sometimes any (a long life).
Graph random_graph(uint32_t items, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  for (uint32_t i = 0; i < items; ++i) {
    g.bytes.push_back(odd_size(rng));
    g.uses.push_back({i, i});
    for (int r = int(rng() % 3) + 1; i > 0 && r > 0; --r) {
      const uint32_t back = rng() % 20 == 0 ? uint32_t(rng() % i) + 1 : std::min<uint32_t>(i, uint32_t(rng() % 4) + 1);
      g.uses.push_back({i, i - back});
    }
  }
  return g;
}

Graph chain(uint32_t items, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  for (uint32_t i = 0; i < items; ++i) {
    g.bytes.push_back(odd_size(rng));
    g.uses.push_back({i, i});
    if (i) g.uses.push_back({i, i - 1});
  }
  return g;
}

// Encoder halves the activation per level, decoder doubles it back and reads the skip from its level,
// so the skips live long and stack up: the classic shape a planner must not fragment on.
Graph unet(uint32_t items, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  uint32_t item = 0;
  auto temp = [&](uint64_t bytes) { g.bytes.push_back(bytes | 1); return uint32_t(g.bytes.size() - 1); };
  while (item < items) {
    const int depth = 4 + int(rng() % 3);
    uint64_t bytes = 1u << 22;
    uint32_t cur = temp(bytes + rng() % 4096);
    g.uses.push_back({item++, cur});
    std::vector<uint32_t> skips;
    for (int d = 0; d < depth; ++d) {
      const uint32_t mid = temp(bytes + rng() % 4096);  // conv
      g.uses.push_back({item, cur}), g.uses.push_back({item++, mid});
      skips.push_back(mid);
      bytes /= 2;
      cur = temp(bytes + rng() % 4096);  // pool
      g.uses.push_back({item, mid}), g.uses.push_back({item++, cur});
    }
    for (int d = depth - 1; d >= 0; --d) {
      bytes *= 2;
      const uint32_t up = temp(bytes + rng() % 4096);
      g.uses.push_back({item, cur}), g.uses.push_back({item++, up});
      cur = temp(bytes + rng() % 4096);  // concat + conv with the skip
      g.uses.push_back({item, up}), g.uses.push_back({item, skips[size_t(d)]}), g.uses.push_back({item++, cur});
    }
    g.uses.push_back({item++, cur});
  }
  return g;
}

template <Graph (*Make)(uint32_t, uint64_t)>
void run(benchmark::State& state) {
  const Graph g = Make(uint32_t(state.range(0)), 42);
  encore::MemoryPlan plan;
  for (auto _ : state) {
    plan = encore::plan_memory(g.bytes, g.uses, 256);
    benchmark::DoNotOptimize(plan.arena_bytes);
  }
  if (const std::string bad = encore::check_plan(g.bytes, g.uses, 256, plan); !bad.empty()) state.SkipWithError(bad.c_str());
  state.counters["temps"] = double(g.bytes.size());
  state.counters["planned/lower"] = double(plan.arena_bytes) / double(plan.lower_bound_bytes);
  state.counters["naive/planned"] = double(plan.naive_bytes) / double(plan.arena_bytes);
}

void check(benchmark::State& state) {
  const Graph g = random_graph(uint32_t(state.range(0)), 42);
  const encore::MemoryPlan plan = encore::plan_memory(g.bytes, g.uses, 256);
  for (auto _ : state) benchmark::DoNotOptimize(encore::check_plan(g.bytes, g.uses, 256, plan));
}

}  // namespace

BENCHMARK(run<random_graph>)->Name("plan/random")->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(run<chain>)->Name("plan/chain")->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(run<unet>)->Name("plan/unet")->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(check)->Name("check/random")->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
