#pragma once
// The kernel kind's bound form (its payload in a BoundItem) and its replay, inline so the replay
// loop takes it without an indirect call (most replayed items are launches; on NULL the call cost
// ~2 ns of ~11 per item). Read here and in src/exec/kernel_item.cpp only.
//   if (x.replay == replay_launch) replay_launch(b, x);
#include <memory>

#include "exec/kind.hpp"

namespace encore::detail {

struct KernelBound {
  std::unique_ptr<BackendKernel> kernel;  // its own kernel object, arguments set at bind
  LaunchDims ld;                          // re-resolved by set_var when a Variable in its sizes changes (Binding::var_sizes)
};

inline void replay_launch(Binding&, BoundItem& x) {
  KernelBound& k = payload<KernelBound>(x);
  enqueue_launch(*x.dev, *k.kernel, k.ld, nullptr);
}

}  // namespace encore::detail
