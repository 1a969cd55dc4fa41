#pragma once
// The access check at capture (CaptureOptions::check_access): a launch's access claims that let an
// item be pruned or reordered are tried on the captured call's own data, so a wrong claim is a
// JitError at capture instead of a silently wrong replay. Checked are
//   in / none where the source has no const (inferred from the body, or encore::in at the launch):
//       the argument's bytes are read before and after the launch and must be unchanged;
//   out (encore::out at the launch): after the launch, the kernel runs again on scratch copies of
//       its buffers as they were before it, the out buffer's bytes inverted; every output must come
//       out as in the real launch (an out byte the kernel did not write keeps its inverted value).
//       Not tried where the source proves the claim: a parameter the body only stores whole
//       elements into (KernelParam::inferred_store_only: p[i] = v, never read) or never names.
// Arguments that overlap a written argument in storage are skipped (a change cannot be blamed on one
// of them), and so is the out check of a launch whose buffers overlap each other. The cost is paid at
// capture only: every claimed launch waits once, for its reads after it (the reads before it are
// queued ahead of it without a wait), and a launch with an out claim the source does not prove runs twice.
#include "exec/kind.hpp"

namespace encore::detail {

// Whether a launch of `k` with resolved `args` holds a claim the check tries.
bool has_access_claims(const KernelImpl& k, const std::vector<Arg>& args);

// Runs `item` (a kernel launch with such claims) eagerly through run_item_eager and checks its
// claims; JitError naming the kernel, the argument and what was seen when one fails (the launch
// itself has run by then).
void run_checking_access(const ExecItem& item);

}  // namespace encore::detail
