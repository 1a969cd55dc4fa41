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
// capture only. In claims do not wait: their reads before and after the launch are queued around it,
// and the capture's end waits for them all and compares (a wrong claim is then end()'s JitError); a
// launch that finds 64 MiB of snapshots (or 4096 reads) held waits and compares them first. A launch
// with an out claim the source does not prove compares those held too, waits for its own reads, runs
// a second time, and is refused itself: the first wrong claim in launch order is the one named.
#include "exec/kind.hpp"

namespace encore::detail {

// Whether a launch of `k` with resolved `args` holds a claim the check tries (never on the NULL
// device, whose kernels run nothing).
bool has_access_claims(const KernelImpl& k, const std::vector<Arg>& args);

struct Recorder;

// Runs `item` (a kernel launch with such claims) eagerly through run_item_eager and checks its
// claims, or queues their reads for finish_access_checks; JitError naming the kernel, the argument
// and what was seen when one fails (the launch itself has run by then).
void run_checking_access(const ExecItem& item);

// Compares the capture's deferred in claims once their reads are done (Capture's end); JitError for
// the first that failed, in launch order.
void finish_access_checks(Recorder& r);

}  // namespace encore::detail
