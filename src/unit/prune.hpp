#pragma once
// The one-time set (DESIGN rule 2), as a pure function over items' storage accesses.
#include <cstdint>
#include <span>
#include <vector>

#include "encore/export.hpp"

namespace encore::detail {

struct PruneAccess {
  uint32_t storage;
  uint64_t lo, hi;  // byte range [lo, hi), lo <= hi. An empty range [p, p) meets a range only when
                    // p lies strictly inside it (it never meets another empty range).
  bool read, write;
};

struct PruneItem {
  std::vector<PruneAccess> accesses;
  bool volatile_ = false;  // touches an input or uses a variable: never one-time
};

// The same items as one array of accesses with each item's offset, as the planner builds them (a
// vector per item was a host allocation per captured item). Item i's accesses are
// accesses[first[i], first[i + 1]).
struct PruneItems {
  std::vector<PruneAccess> accesses;
  std::vector<uint32_t> first{0};
  std::vector<uint8_t> volatile_;  // per item
  size_t size() const { return volatile_.size(); }
};

// one_time[i]: item i is in the largest set where every item (a) is not volatile, (b) reads only
// bytes whose every writer is one-time and stands earlier, (c) is the only writer of what it writes.
// O(m log m) in the number of accesses m, whatever the sharing.
ENCORE_API std::vector<bool> one_time_items(std::span<const PruneItem> items);

// Why an item is kept (not one-time). Each condition names the rule it breaks.
enum class KeepReason : uint8_t {
  none = 0,
  volatile_,          // (a) touches an input or uses a variable
  reads_own_output,   // (b) reads bytes it writes itself (read-modify-write)
  other_writer,       // (c) another item writes bytes it writes
  reads_later_write,  // (b) reads bytes that an item later in the step writes (loop-carried)
  reads_kept_writer,  // (b) reads bytes written by an earlier item that is itself kept (the last: ENCORE_DEBUG notes list up to it)
};
constexpr uint32_t no_item = UINT32_MAX;

struct KeepWhy {
  // Bit (1 << KeepReason) for every condition the item breaks; 0 for a one-time item.
  uint8_t broken = 0;
  // The condition when the item breaks exactly one (it would be one-time but for it), else none.
  KeepReason reason = KeepReason::none;
  // The item that makes `reason` hold: the item itself for reads_own_output, the nearest earlier
  // (else the nearest later) other writer for other_writer, the nearest later writer for
  // reads_later_write, the latest kept earlier writer for reads_kept_writer; no_item otherwise.
  uint32_t other = no_item;
};

struct PruneResult {
  std::vector<bool> one_time;
  std::vector<KeepWhy> why;  // one per item
};

// The one-time set with, for every kept item, the conditions it breaks (same cost as one_time_items).
// Under the testing::prune_like_tinygrad mutation (test build), `one_time` follows the mutation while `why`
// states the real rule's conditions (reads_kept_writer against the mutated set).
ENCORE_API PruneResult prune(const PruneItems& items);
ENCORE_API PruneResult prune(std::span<const PruneItem> items);

// User-facing advice for a reason, e.g. for reads_own_output: "reads its own output (a
// read-modify-write): declare encore::out() on the argument if the kernel only writes it".
ENCORE_API const char* describe(KeepReason r);

}  // namespace encore::detail
