#pragma once
// Running items eagerly and checking launch sizes (src/exec/eager.cpp, src/exec/enqueue.cpp).
#include <cstddef>
#include <cstdint>
#include "encore/exec_item.hpp"

namespace encore::detail {

// Runs one item eagerly on its device (sets args on the kernel's eager object).
void run_item_eager(const ExecItem& item);
// Local size chosen by encore when a launch gives none: a fixed set of sizes, so a new global
// size never makes PoCL compile a new work-group function (src/exec/enqueue.cpp).
void choose_local(uint32_t dims, const size_t* global, size_t max_wg, size_t* local);

bool check_launch(uint32_t dims, const size_t* gws, const size_t* lws, const char* what);

}  // namespace encore::detail
