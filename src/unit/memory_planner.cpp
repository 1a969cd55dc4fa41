#include "encore/memory_planner.hpp"

#include "testing.hpp"

#include <algorithm>
#include <bit>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>

namespace encore {

namespace {

// ---- planner -------------------------------------------------------------------------------------------

struct Problem {
  std::vector<uint64_t> size;          // aligned
  std::vector<uint32_t> first, last;   // inclusive life in item order
};

Problem make_problem(std::span<const uint64_t> temp_bytes, std::span<const TempUse> uses, uint64_t alignment) {
  if (alignment == 0) throw std::invalid_argument("plan_memory: alignment 0");
  const size_t n = temp_bytes.size();
  Problem p{std::vector<uint64_t>(n), std::vector<uint32_t>(n, std::numeric_limits<uint32_t>::max()),
            std::vector<uint32_t>(n, 0)};
  std::vector<bool> used(n);
  for (const TempUse& u : uses) {
    if (u.temp >= n)
      throw std::invalid_argument("plan_memory: item " + std::to_string(u.item) + " uses temp " +
                                  std::to_string(u.temp) + " of " + std::to_string(n));
    used[u.temp] = true;
    p.first[u.temp] = std::min(p.first[u.temp], u.item);
    p.last[u.temp] = std::max(p.last[u.temp], u.item);
  }
  uint64_t total = 0;
  for (size_t t = 0; t < n; ++t) {
    if (!used[t]) throw std::invalid_argument("plan_memory: temp " + std::to_string(t) + " has no use");
    if (temp_bytes[t] == 0) throw std::invalid_argument("plan_memory: temp " + std::to_string(t) + " has size 0");
    uint64_t padded;
    // Overflow here would let two temps wrap onto each other; refuse rather than plan garbage.
    if (__builtin_add_overflow(temp_bytes[t], alignment - 1, &padded) ||
        __builtin_add_overflow(total, padded / alignment * alignment, &total))
      throw std::invalid_argument("plan_memory: temp sizes overflow 64 bits");
    p.size[t] = padded / alignment * alignment;
  }
  return p;
}

std::vector<uint32_t> sorted_by(size_t n, auto less) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  std::sort(v.begin(), v.end(), less);
  return v;
}

uint64_t peak_live(const Problem& p, const std::vector<uint32_t>& by_first, const std::vector<uint32_t>& by_last) {
  uint64_t live = 0, peak = 0;
  size_t e = 0;
  for (uint32_t t : by_first) {
    for (; e < by_last.size() && p.last[by_last[e]] < p.first[t]; ++e) live -= p.size[by_last[e]];
    peak = std::max(peak, live += p.size[t]);
  }
  return peak;
}

// Best-fit in allocation order: free blocks indexed by offset (to coalesce) and by size (to pick the
// tightest). Within a roomier block the temp goes to the end whose neighbour dies closer to its own death,
// so the two free up together and leave one hole rather than two. A miss extends the top free block rather
// than leaving it as a hole below the new temp.
void best_fit(const Problem& p, const std::vector<uint32_t>& order, const std::vector<uint32_t>& by_last,
              std::vector<uint64_t>& off, bool by_neighbour) {
  std::map<uint64_t, uint64_t> by_off;              // free: offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size;  // free: (size, offset)
  std::map<uint64_t, uint32_t> held;                // allocated: offset -> temp
  uint64_t top = 0;
  auto erase = [&](std::map<uint64_t, uint64_t>::iterator it) {
    by_size.erase({it->second, it->first});
    return by_off.erase(it);
  };
  auto add = [&](uint64_t o, uint64_t s) { by_off.emplace(o, s), by_size.emplace(s, o); };
  auto release = [&](uint64_t o, uint64_t s) {
    auto next = by_off.lower_bound(o);
    if (next != by_off.end() && next->first == o + s) s += next->second, next = erase(next);
    if (next != by_off.begin())
      if (auto prev = std::prev(next); prev->first + prev->second == o) o = prev->first, s += prev->second, erase(prev);
    add(o, s);
  };
  auto distance = [&](uint32_t t, uint64_t neighbour_at, bool below) -> uint64_t {
    auto it = below ? held.lower_bound(neighbour_at) : held.find(neighbour_at);
    if (below) {
      if (it == held.begin()) return UINT64_MAX;
      --it;
    }
    if (it == held.end()) return UINT64_MAX;
    const uint32_t u = it->second;
    return p.last[u] > p.last[t] ? p.last[u] - p.last[t] : p.last[t] - p.last[u];
  };
  size_t e = 0;
  for (uint32_t t : order) {
    for (; e < by_last.size() && p.last[by_last[e]] < p.first[t]; ++e)
      release(off[by_last[e]], p.size[by_last[e]]), held.erase(off[by_last[e]]);
    const uint64_t s = p.size[t];
    if (auto it = by_size.lower_bound({s, 0}); it != by_size.end()) {
      auto [bs, bo] = *it;
      erase(by_off.find(bo));
      if (bs > s && by_neighbour && distance(t, bo + bs, false) < distance(t, bo, true))
        add(bo, bs - s), off[t] = bo + bs - s;
      else if (bs > s)
        add(bo + s, bs - s), off[t] = bo;
      else
        off[t] = bo;
    } else if (!by_off.empty() && std::prev(by_off.end())->first + std::prev(by_off.end())->second == top) {
      off[t] = std::prev(by_off.end())->first;
      erase(std::prev(by_off.end()));
      top = off[t] + s;
    } else {
      off[t] = top;
      top += s;
    }
    held.emplace(off[t], t);
  }
}

// Offset assignment over the interval graph of lives (as in TFLite / tinygrad): temps in a given order,
// each at the lowest offset clear of the already-placed temps whose lives overlap. Overlapping temps are
// found as "live at my first item" (stabbing a segment tree over compressed item indices) plus "starting
// later within my life" (a range of the by-first order), so one pass costs O(pairs log) where pairs is
// the number of overlapping lives: quadratic when many lives are long, hence `pairs` to decide upfront.
struct Overlaps {
  const Problem& p;
  const std::vector<uint32_t>& by_first;
  std::vector<uint32_t> times;          // distinct first/last items: the leaves
  std::vector<uint32_t> start, ids;     // CSR: node k holds the temps whose life covers its whole range
  uint64_t pairs = 0;                   // sum over temps of overlapping temps (itself included)

  Overlaps(const Problem& p_, const std::vector<uint32_t>& by_first_, const std::vector<uint32_t>& by_last)
      : p(p_), by_first(by_first_) {
    const size_t n = p.size.size();
    std::vector<uint32_t> firsts(n), lasts(n);
    for (size_t i = 0; i < n; ++i) firsts[i] = p.first[by_first[i]], lasts[i] = p.last[by_last[i]];
    for (size_t t = 0; t < n; ++t)
      pairs += uint64_t(std::upper_bound(firsts.begin(), firsts.end(), p.last[t]) - firsts.begin()) -
               uint64_t(std::lower_bound(lasts.begin(), lasts.end(), p.first[t]) - lasts.begin());
    std::merge(firsts.begin(), firsts.end(), lasts.begin(), lasts.end(), std::back_inserter(times));
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }
  size_t slot(uint32_t item) const { return size_t(std::lower_bound(times.begin(), times.end(), item) - times.begin()); }
  void index() {
    const size_t leaves = times.size(), n = p.size.size();
    auto cover = [&](auto&& visit) {
      for (uint32_t t = 0; t < n; ++t)
        for (size_t l = slot(p.first[t]) + leaves, r = slot(p.last[t]) + leaves + 1; l < r; l >>= 1, r >>= 1) {
          if (l & 1) visit(l++, t);
          if (r & 1) visit(--r, t);
        }
    };
    start.assign(2 * leaves + 1, 0);
    cover([&](size_t k, uint32_t) { ++start[k + 1]; });
    std::partial_sum(start.begin(), start.end(), start.begin());
    ids.resize(start.back());
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    cover([&](size_t k, uint32_t t) { ids[fill[k]++] = t; });
  }
  void for_each(uint32_t t, auto&& visit) const {
    for (size_t k = slot(p.first[t]) + times.size(); k >= 1; k >>= 1)
      for (uint32_t i = start[k]; i < start[k + 1]; ++i) visit(ids[i]);
    auto it = std::upper_bound(by_first.begin(), by_first.end(), p.first[t], [&](uint32_t f, uint32_t u) { return f < p.first[u]; });
    for (; it != by_first.end() && p.first[*it] <= p.last[t]; ++it) visit(*it);
  }
};

void place_in_order(const Problem& p, const Overlaps& ov, const std::vector<uint32_t>& order, std::vector<uint64_t>& off) {
  std::vector<bool> placed(p.size.size());
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // (offset, end) of placed overlapping temps
  for (uint32_t t : order) {
    busy.clear();
    ov.for_each(t, [&](uint32_t u) { if (placed[u]) busy.emplace_back(off[u], off[u] + p.size[u]); });
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [b, e] : busy) {
      if (b >= at + p.size[t]) break;
      at = std::max(at, e);
    }
    off[t] = at;
    placed[t] = true;
  }
}

// ---- checker: deliberately shares nothing with the planner above ----------------------------------------

std::string name(size_t t) { return "temp " + std::to_string(t); }

}  // namespace

MemoryPlan plan_memory(std::span<const uint64_t> temp_bytes, std::span<const TempUse> uses, uint64_t alignment) {
  const Problem p = make_problem(temp_bytes, uses, alignment);
  const size_t n = p.size.size();
  MemoryPlan plan;
  plan.offsets.resize(n);
  if (n == 0) return plan;
  // Allocation order: by first use; at one item the biggest first, so small ones fill its leftovers.
  const auto by_first = sorted_by(n, [&](uint32_t a, uint32_t b) {
    return p.first[a] != p.first[b] ? p.first[a] < p.first[b] : p.size[a] != p.size[b] ? p.size[a] > p.size[b] : a < b;
  });
  const auto by_last = sorted_by(n, [&](uint32_t a, uint32_t b) { return p.last[a] < p.last[b]; });
  plan.naive_bytes = std::accumulate(p.size.begin(), p.size.end(), uint64_t(0));
  plan.lower_bound_bytes = peak_live(p, by_first, by_last);
  // Where nothing is live between two items the step splits into independent parts; each part keeps the
  // offsets of whichever strategy packed it tightest.
  std::vector<uint32_t> part(n);
  uint32_t parts = 0;
  for (uint32_t i = 0, reach = 0; i < n; ++i) {
    const uint32_t t = by_first[i];
    if (i == 0 || p.first[t] > reach) ++parts;
    part[t] = parts - 1, reach = std::max(reach, p.last[t]);
  }
  std::vector<uint64_t> best(parts, UINT64_MAX), end(parts), off(n);
  auto keep = [&] {
    std::fill(end.begin(), end.end(), 0);
    for (size_t t = 0; t < n; ++t) end[part[t]] = std::max(end[part[t]], off[t] + p.size[t]);
    for (size_t t = 0; t < n; ++t)
      if (end[part[t]] < best[part[t]]) plan.offsets[t] = off[t];
    for (uint32_t c = 0; c < parts; ++c) best[c] = std::min(best[c], end[c]);
    plan.arena_bytes = *std::max_element(best.begin(), best.end());
  };
  best_fit(p, by_first, by_last, off, true), keep();
  best_fit(p, by_first, by_last, off, false), keep();
  // Offset assignment (greedy by size) is usually tighter; run it only while the overlapping pairs keep it
  // near n log n. Which size order wins depends on the graph, so try three.
  Overlaps ov(p, by_first, by_last);
  if (plan.arena_bytes > plan.lower_bound_bytes && ov.pairs <= 8 * uint64_t(n) + (uint64_t(1) << 18)) {
    ov.index();
    place_in_order(p, ov, sorted_by(n, [&](uint32_t a, uint32_t b) {
      return p.size[a] != p.size[b] ? p.size[a] > p.size[b] : p.first[a] != p.first[b] ? p.first[a] < p.first[b] : a < b;
    }), off), keep();
    // Sizes within a factor of two are a near tie, broken by life: else a short temp that is larger by a
    // hair takes the low slot a long skip connection needed (U-nets).
    auto by_class = [&](auto&& before) {
      return sorted_by(n, [&](uint32_t a, uint32_t b) {
        const int ca = std::bit_width(p.size[a]), cb = std::bit_width(p.size[b]);
        return ca != cb ? ca > cb : before(a, b) ? true : before(b, a) ? false : a < b;
      });
    };
    place_in_order(p, ov, by_class([&](uint32_t a, uint32_t b) { return p.last[a] - p.first[a] > p.last[b] - p.first[b]; }), off), keep();
    place_in_order(p, ov, by_class([&](uint32_t a, uint32_t b) { return p.last[a] > p.last[b]; }), off), keep();
    // Greedy orders are brittle on small irregular graphs: while the pair budget lasts, retry with sizes
    // jittered by +-30% (seeded by n, so plans stay deterministic).
    std::mt19937_64 rng(n);
    std::vector<double> w(n);
    // Small steps (a few dozen temps) can afford more passes, every other one in a random order: sizes
    // that differ by one alignment unit never swap under jitter, yet the tight packing may need it.
    const uint64_t passes = n <= 64 ? 64 : 16;
    for (uint64_t pass = 0; pass < passes && plan.arena_bytes > plan.lower_bound_bytes &&
                            (pass + 4) * ov.pairs <= 8 * uint64_t(n) + (uint64_t(1) << 18); ++pass) {
      for (size_t t = 0; t < n; ++t)
        w[t] = pass % 2 ? std::uniform_real_distribution<double>(0, 1)(rng)
                        : double(p.size[t]) * std::uniform_real_distribution<double>(0.7, 1.3)(rng);
      place_in_order(p, ov, sorted_by(n, [&](uint32_t a, uint32_t b) { return w[a] != w[b] ? w[a] > w[b] : a < b; }), off), keep();
    }
  }
  if (ENCORE_TESTING_IS(break_planner) && n >= 2) {
    auto alloc = sorted_by(n, [&](uint32_t a, uint32_t b) { return p.first[a] != p.first[b] ? p.first[a] < p.first[b] : a < b; });
    plan.offsets[alloc[1]] = plan.offsets[alloc[0]];
    plan.arena_bytes = 0;
    for (size_t t = 0; t < n; ++t) plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[t] + p.size[t]);
  }
  return plan;
}

std::string check_plan(std::span<const uint64_t> temp_bytes, std::span<const TempUse> uses, uint64_t alignment,
                       const MemoryPlan& plan) {
  const size_t n = temp_bytes.size();
  if (alignment == 0) return "alignment is 0";
  if (plan.offsets.size() != n)
    return std::to_string(plan.offsets.size()) + " offsets for " + std::to_string(n) + " temps";
  struct Span { bool seen = false; uint32_t from = 0, to = 0; uint64_t bytes = 0; };
  std::vector<Span> life(n);
  for (const TempUse& u : uses) {
    if (u.temp >= n) return "a use names " + name(u.temp) + " out of range";
    Span& s = life[u.temp];
    if (!s.seen) s = {true, u.item, u.item, 0};
    if (u.item < s.from) s.from = u.item;
    if (u.item > s.to) s.to = u.item;
  }
  uint64_t naive = 0, top = 0;
  for (size_t t = 0; t < n; ++t) {
    if (!life[t].seen) return name(t) + " has no use";
    const uint64_t rem = temp_bytes[t] % alignment;
    if (temp_bytes[t] == 0 || (rem && temp_bytes[t] > UINT64_MAX - (alignment - rem))) return name(t) + " has a bad size";
    life[t].bytes = rem ? temp_bytes[t] + (alignment - rem) : temp_bytes[t];
    if (plan.offsets[t] % alignment)
      return name(t) + " at offset " + std::to_string(plan.offsets[t]) + " is not aligned to " + std::to_string(alignment);
    if (plan.offsets[t] > UINT64_MAX - life[t].bytes) return name(t) + " at offset " + std::to_string(plan.offsets[t]) + " wraps";
    const uint64_t end = plan.offsets[t] + life[t].bytes;
    if (end > plan.arena_bytes)
      return name(t) + " at offset " + std::to_string(plan.offsets[t]) + " ends at " + std::to_string(end) +
             ", past arena_bytes " + std::to_string(plan.arena_bytes);
    top = top > end ? top : end;
    naive += life[t].bytes;
  }
  if (plan.arena_bytes != top)
    return "arena_bytes " + std::to_string(plan.arena_bytes) + " but the temps end at " + std::to_string(top);
  if (plan.naive_bytes != naive)
    return "naive_bytes " + std::to_string(plan.naive_bytes) + " but the aligned sizes sum to " + std::to_string(naive);

  // Sweep lives by start; `mem` holds the live temps by offset. Live temps are pairwise disjoint by
  // induction, so a newcomer need only be checked against its two neighbours in memory.
  std::vector<size_t> starts(n);
  for (size_t t = 0; t < n; ++t) starts[t] = t;
  std::stable_sort(starts.begin(), starts.end(), [&](size_t a, size_t b) { return life[a].from < life[b].from; });
  std::priority_queue<std::pair<uint32_t, size_t>, std::vector<std::pair<uint32_t, size_t>>, std::greater<>> ending;
  std::multimap<uint64_t, size_t> mem;
  std::vector<std::multimap<uint64_t, size_t>::iterator> where(n);
  uint64_t live = 0, peak = 0;
  for (size_t t : starts) {
    while (!ending.empty() && ending.top().first < life[t].from) {
      const size_t gone = ending.top().second;
      ending.pop();
      mem.erase(where[gone]);
      live -= life[gone].bytes;
    }
    const uint64_t lo = plan.offsets[t], hi = lo + life[t].bytes;
    auto above = mem.lower_bound(lo);
    if (above != mem.end() && above->first < hi)
      return name(t) + " and " + name(above->second) + " are live together but overlap at offset " + std::to_string(above->first);
    if (above != mem.begin()) {
      auto below = std::prev(above);
      if (below->first + life[below->second].bytes > lo)
        return name(below->second) + " and " + name(t) + " are live together but overlap at offset " + std::to_string(lo);
    }
    where[t] = mem.emplace(lo, t);
    ending.emplace(life[t].to, t);
    live += life[t].bytes;
    if (live > peak) peak = live;
  }
  if (plan.lower_bound_bytes != peak)
    return "lower_bound_bytes " + std::to_string(plan.lower_bound_bytes) + " but live bytes peak at " + std::to_string(peak);
  return "";
}

}  // namespace encore
