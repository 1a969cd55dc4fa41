#pragma once
// Where a plan entry's bytes live on replay, and whether two entries may share bytes: the one
// answer both orders of a replay use (between devices: sync.cpp; between the items of one device
// replayed concurrently: concurrent.cpp). Planned temps are arena ranges, so two temps the planner
// placed at the same bytes (their lives apart) conflict like any two views of one buffer.
#include "unit/unit.hpp"

namespace encore::detail {

// Where an entry's bytes live on replay, in terms that stay true when inputs are rebound.
struct Region {
  PlanEntry::Kind kind;
  const void* root = nullptr;  // fixed: the storage
  uint32_t slot = 0;           // input: its slot; planned: its arena
  uint64_t lo = 0, hi = 0;
  const DeviceImpl* dev = nullptr;
  bool unit_private = false;   // fixed: PlanEntry::unit_private
};

inline Region region_of(const PlanEntry& e) {
  const BufferImpl* b = e.captured.impl();
  Region r{e.kind, nullptr, e.slot, 0, 0, b->dev.get(), e.unit_private};
  switch (e.kind) {
    case PlanEntry::Kind::fixed: r.root = b->base ? b->base.get() : b; r.lo = b->offset; break;
    case PlanEntry::Kind::input:
    case PlanEntry::Kind::planned: r.lo = e.rel; break;
  }
  r.hi = r.lo + b->nbytes;
  return r;
}

inline bool overlap(const Region& a, const Region& b) { return a.lo < b.hi && b.lo < a.hi; }

// May the two regions share bytes on replay? Inputs are checked at bind_input to overlap each
// other exactly as at capture; an input and fixed state on one device count as sharing (nothing
// checks they do not), except the unit's own storage (its fresh outputs and internal buffers): an
// input inside one is replayed from a private copy (check_inputs, the same Plan::is_own), so no
// input's bytes are ever theirs. The arena is private.
inline bool conflict(const Plan& p, const Region& a, const Region& b) {
  using K = PlanEntry::Kind;
  if (a.kind == K::fixed && b.kind == K::fixed) return a.root == b.root && overlap(a, b);
  if (a.kind == K::planned && b.kind == K::planned) return a.slot == b.slot && overlap(a, b);
  if (a.kind == K::input && b.kind == K::input) return a.slot == b.slot ? overlap(a, b) : p.captured_overlap[a.slot][b.slot] != 0;
  if (a.kind == K::input && b.kind == K::fixed) return a.dev == b.dev && !b.unit_private;
  if (a.kind == K::fixed && b.kind == K::input) return a.dev == b.dev && !a.unit_private;
  return false;
}

}  // namespace encore::detail
