#pragma once
// The one-time set (DESIGN rule 2), as a pure function over items' storage accesses.
#include <cstdint>
#include <span>
#include <vector>

#include "encore/export.hpp"

namespace encore::detail {

struct PruneAccess {
  uint32_t storage;
  uint64_t lo, hi;  // byte range
  bool read, write;
};

struct PruneItem {
  std::vector<PruneAccess> accesses;
  bool volatile_ = false;  // touches an input or uses a variable: never one-time
};

// one_time[i]: item i is in the largest set where every item (a) is not volatile, (b) reads only
// bytes whose every writer is one-time and stands earlier, (c) is the only writer of what it writes.
ENCORE_API std::vector<bool> one_time_items(std::span<const PruneItem> items);

}  // namespace encore::detail

namespace encore::testing {
// Mutation switch for tests: prune with tinygrad's rule (one-time = not depending on the inputs),
// which freezes RNG state and state cycles. The property tests must catch it.
ENCORE_API extern bool prune_like_tinygrad;
// Mutation switch for tests: a replay ignores changed versions of what one-time items read or write
// (never re-runs them). The property tests must catch it.
ENCORE_API extern bool ignore_versions;
}  // namespace encore::testing
