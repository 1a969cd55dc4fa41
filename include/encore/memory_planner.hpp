#pragma once
// Memory planner: gives each internal temp of a step a byte offset in one shared arena, so temps whose
// lives do not overlap reuse the same bytes (docs/capture-and-replay.md). Pure: no OpenCL, no device.
//   std::vector<uint64_t> bytes = {4096, 100, 4096};
//   std::vector<encore::TempUse> uses = {{0, 0}, {1, 0}, {1, 1}, {2, 1}, {2, 2}};   // {item, temp}
//   encore::MemoryPlan p = encore::plan_memory(bytes, uses, 256);
//   assert(encore::check_plan(bytes, uses, 256, p).empty());   // p.offsets[2] == 0: temp 2 reuses temp 0
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "encore/export.hpp"

namespace encore {

struct TempUse { uint32_t item; uint32_t temp; };   // item `item` (index in step order) touches temp `temp`

struct MemoryPlan {
  std::vector<uint64_t> offsets;      // per temp: byte offset in the arena (multiple of alignment)
  uint64_t arena_bytes = 0;           // "planned": bytes of arena used (max over temps of offset + aligned size)
  uint64_t naive_bytes = 0;           // sum over temps of size rounded up to alignment
  uint64_t lower_bound_bytes = 0;     // peak over item order of the sum of aligned sizes of live temps
};

// temp_bytes[t] is temp t's size in bytes (> 0). A temp lives from the first to the last item that uses it
// (inclusive). Two temps whose lives overlap never share a byte. Every temp must have at least one use
// (std::invalid_argument otherwise; also for alignment 0, a size of 0, a use naming a temp out of range, or
// byte figures that overflow 64 bits). Any alignment > 0 works, not only powers of two.
// Strategies: best-fit over a coalescing free list in allocation order, and greedy by size (each temp at the
// lowest offset free over its life; a few size orders, then jittered retries while budget lasts). Where no
// temp is live between two items the parts are independent and each keeps its tightest layout. Greedy by
// size costs O(overlapping pairs log n), so it is skipped when lives overlap too much; the whole stays near
// O(n log n) and deterministic. On chains and U-nets it reaches the lower bound; random graphs ~1.00-1.08x.
ENCORE_API MemoryPlan plan_memory(std::span<const uint64_t> temp_bytes, std::span<const TempUse> uses, uint64_t alignment);

// Independent checker: "" when the plan is valid, else a message naming the two temps / the offset that is wrong.
// It recomputes lives from `uses` itself and shares NO code with plan_memory (not even helpers): no two temps with
// overlapping lives overlap in memory, every offset is aligned, arena_bytes holds every assignment, the three
// byte figures are right. O(n log n).
ENCORE_API std::string check_plan(std::span<const uint64_t> temp_bytes, std::span<const TempUse> uses, uint64_t alignment, const MemoryPlan& plan);

}  // namespace encore
