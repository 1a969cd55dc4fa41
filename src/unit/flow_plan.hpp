#pragma once
// The plan's part for steps that decide (src/unit/flow_plan.cpp).
#include <cstdint>
#include <utility>
#include <vector>

#include "encore/exec_item.hpp"
#include "encore/memory_planner.hpp"

namespace encore::detail {

// The tree a flat item list holds: per item, the branch or loop item whose children it is among
// (-1: the step itself) and which alternative; every loop as (its item, one past its body).
struct FlowShape {
  bool any = false;  // some host, branch or loop item
  std::vector<int32_t> parent;
  std::vector<uint32_t> alt;
  std::vector<std::pair<uint32_t, uint32_t>> loops;
};
// JitError when the children's lengths do not fit the list.
FlowShape flow_shape(const std::vector<ExecItem>& items);
// JitError for a host-set Variable used where its host item may not have run, or a buffer made in a
// child sequence used outside it.
void check_flow(const std::vector<ExecItem>& items, const FlowShape& sh);
// Adds uses so that every temp used inside a loop body lives across the whole body.
void extend_loop_lives(const FlowShape& sh, std::vector<TempUse>& uses);

}  // namespace encore::detail
