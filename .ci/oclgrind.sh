#!/bin/bash
# .ci/oclgrind.sh BUILD_DIR: encore on Oclgrind, an OpenCL 1.2 device simulator that reports
# invalid memory accesses, data races between work-items and OpenCL API errors. Runs a subset of
# encore-tests and encore-internal-tests, hello_encore and a small heat_sim with those checks on,
# and fails when any run fails or Oclgrind reports anything, except an API error inside one of
# the negative tests listed in API_ERRORS_EXPECTED (they provoke it on purpose).
#
# Left out, as Oclgrind's limits (not encore's):
#   - several threads launching at once: Oclgrind runs one kernel at a time per context and
#     asserts otherwise (the thread tests, and a replay racing a writer thread);
#   - replays gated behind a user event: Oclgrind's clFlush finishes the queue, so they deadlock,
#     or (the in-flight tests, which count the replays enqueued before the gate opens) wait early;
#   - OCLGRIND_UNINITIALIZED: false positives for sub-buffers written by the host (reproduced
#     without encore);
#   - splitting a device (it has no CL_DEVICE_PARTITION_EQUALLY, so two-device tests skip);
#   - what is too slow for an interpreter (tens of thousands of replays: Events.WorkInFlightIsBounded;
#     the training run, the asynchronous read-back tests' million-element kernels) or allocates more than it can (DeviceCl.HugeAllocation*: Oclgrind throws
#     std::bad_alloc through the C API);
set -u
build=${1:?usage: .ci/oclgrind.sh BUILD_DIR}
build=$(cd "$build" && pwd)

icd=$(dpkg -L oclgrind 2>/dev/null | grep '/liboclgrind-rt-icd\.so$' | head -n 1)
[ -n "$icd" ] || icd=/usr/lib/oclgrind/liboclgrind-rt-icd.so
if [ ! -f "$icd" ]; then
  echo "oclgrind.sh: Oclgrind's ICD ($icd) is missing: apt-get install oclgrind" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/vendors"
echo "$icd" > "$tmp/vendors/oclgrind.icd"
export OCL_ICD_VENDORS="$tmp/vendors"
export OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1
unset OCLGRIND_UNINITIALIZED POCL_DEVICES ENCORE_DEVICE
export ENCORE_CACHE="$tmp/cache"
export ENCORE_PROPERTY_SEEDS=${ENCORE_PROPERTY_SEEDS:-12}  # an interpreter: few seeds
export ENCORE_FLOW_SEEDS=${ENCORE_FLOW_SEEDS:-12}

# Tests that make a driver call fail on purpose (a build error, a bad argument the driver is the
# one to refuse): Oclgrind's API check reports it, and only there is that expected.
# Names as Suite.Test, without a parameterised suite's "Instance/" prefix and "/param" suffix.
API_ERRORS_EXPECTED='
DeviceCl.LaunchTheDriverRefusesThrowsOpenCLError
ProgramCl.CompileErrorCarriesTheLog
ProgramCl.CorruptEntriesRecompileWithAWarning
ReaderPreprocessor.SizeCheckFailsTheBuildOnAWrongAnswer
LoadUnitCl.BinaryTheDriverRejectsCompilesFromSource
ProgramBinary.UsedOnlyWhereTheKeyFits
'

# gtest filters: what runs on Oclgrind
INTERNAL_SKIP='Threads*:*Concurrency*:*Thread*:Property.TwoDevices*:*DeviceCl.HugeAllocation*'
PUBLIC_SKIP='TinyJitConcurrency.*:ThreadRules.*:*Thread*:ReplayPaths.PrunedTableSeesConcurrentWrites:Events.ReplayWaitsForAnEnginesEvent:Events.JitStepBetweenEvents:Events.DestroyingAUnitIgnoresUnrelatedWork:Events.WorkInFlightIsBounded:Events.InFlightBoundIsExactOnRequestAndDeeperForShortSteps:*InFlight.HostInputRingGivesEagerResults*:InFlightBound.ShortStepWaitsExactlyAtTheDepth:InFlightBound.OnlyAWaitThatReturnedRestartsTheBound:CrossDevice.*:TrainRun.*:CapiThreads.*:*CopyoutAsync.FollowsQueuedWorkAndCompletes*:*CopyoutAsync.DestroyingTheEventFirstWaitsForTheRead*'

status=0
# run NAME CMD...: runs CMD with stdout and stderr in one log (gtest's "[ RUN ]" lines name the
# test each Oclgrind report belongs to), then checks the log.
run() {
  local name=$1
  shift
  local log="$tmp/$name.log" t0 rc
  t0=$(date +%s)
  # (a bound: on a 1.2 platform a call above 1.2 spins forever in the ICD loader)
  timeout "${OCLGRIND_STEP_TIMEOUT:-600}" "$@" > "$log" 2>&1
  rc=$?
  if ! awk -v name="$name" -v expected="$API_ERRORS_EXPECTED" '
    BEGIN { n = split(expected, e, "\n"); for (i = 1; i <= n; ++i) if (e[i] != "") ok[e[i]] = 1; test = t = "(outside any test)" }
    /^\[ RUN      \] / { test = $4; t = test; sub(/^[^.]*\//, "", t); sub(/\/[^\/]*$/, "", t); next }
    /^Oclgrind - OpenCL runtime error detected/ {
      getline fn; getline er
      if (t in ok) { allowed++; next }
      printf "%s: %s: Oclgrind API error:%s%s\n", name, test, fn, er; bad++; next
    }
    /data race at |^Invalid (read|write)|^Invalid memory address|^Uninitiali[sz]ed|divergence|^Unaligned/ {
      printf "%s: %s: Oclgrind: %s\n", name, test, $0; bad++; next
    }
    END {
      if (allowed) printf "%s: %d API errors inside the negative tests that provoke them\n", name, allowed
      exit (bad > 0 ? 1 : 0)
    }' "$log"; then
    echo "FAIL $name: Oclgrind reported the problems above (log: lines around them follow)"
    grep -n -A12 -E '^Oclgrind - OpenCL runtime error|data race at |^Invalid ' "$log" | head -n 60
    status=1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name: exit status $rc"
    tail -n 30 "$log"
    status=1
  fi
  echo "$name: exit $rc, $(($(date +%s) - t0)) s"
}

run internal "$build/tests/encore-internal-tests" --gtest_filter="-$INTERNAL_SKIP"
run public "$build/tests/encore-tests" --gtest_filter="-$PUBLIC_SKIP"
[ -x "$build/examples/hello_encore" ] && run hello_encore "$build/examples/hello_encore"
[ -x "$build/examples/heat_sim" ] && run heat_sim "$build/examples/heat_sim" --size 64 --ticks 5 --rate-ticks 0 --out "$tmp/heat.png"
[ -x "$build/tests/exit/exit-static_program" ] && run exit_static_program "$build/tests/exit/exit-static_program" 1024

if [ "$status" -eq 0 ]; then
  echo "oclgrind.sh: no invalid access, data race or unexpected API error"
fi
exit "$status"
