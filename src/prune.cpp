#include "prune.hpp"

#include <algorithm>
#include <unordered_map>

namespace encore::testing {
bool prune_like_tinygrad = false;
bool ignore_versions = false;
}

namespace encore::detail {

namespace {
struct Touch {
  uint32_t item;
  uint64_t lo, hi;
  bool write;
};
}  // namespace

std::vector<bool> one_time_items(std::span<const PruneItem> items) {
  const size_t n = items.size();
  std::unordered_map<uint32_t, std::vector<Touch>> by_storage;
  for (uint32_t i = 0; i < n; ++i)
    for (const PruneAccess& a : items[i].accesses)
      if (a.write) by_storage[a.storage].push_back({i, a.lo, a.hi, true});

  // writers[i]: items writing bytes that item i reads (itself included for read-modify-write)
  std::vector<std::vector<uint32_t>> writers(n);
  std::vector<bool> one(n);
  for (uint32_t i = 0; i < n; ++i) {
    bool ok = !items[i].volatile_;
    for (const PruneAccess& a : items[i].accesses) {
      auto it = by_storage.find(a.storage);
      if (it == by_storage.end()) continue;
      for (const Touch& w : it->second) {
        if (w.lo >= a.hi || a.lo >= w.hi) continue;
        if (a.read) writers[i].push_back(w.item);
        if (a.write && w.item != i && !testing::prune_like_tinygrad) ok = false;  // (c) another writer
      }
    }
    std::sort(writers[i].begin(), writers[i].end());
    writers[i].erase(std::unique(writers[i].begin(), writers[i].end()), writers[i].end());
    if (!testing::prune_like_tinygrad)
      for (uint32_t w : writers[i])
        if (w >= i) ok = false;  // (b) loop-carried: written later in the step, or by itself
    one[i] = ok;
  }
  // (b) every writer one-time: remove violators until nothing changes. Writers stand earlier, so
  // one pass in item order reaches the fixpoint (under the tinygrad mutation too: it only looks back).
  for (uint32_t i = 0; i < n; ++i)
    if (one[i])
      for (uint32_t w : writers[i])
        if (w != i && !one[w]) {
          one[i] = false;
          break;
        }
  return one;
}

}  // namespace encore::detail
