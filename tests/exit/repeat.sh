#!/bin/sh
# repeat.sh N EXPECT PROGRAM...: runs PROGRAM N times; fails on the first run that does not exit 0
# or whose stdout lacks the line EXPECT, saying which run and how (a crash at exit is a signal).
n=$1; expect=$2; shift 2
i=1
while [ "$i" -le "$n" ]; do
  out=$("$@" 2> "${TMPDIR:-/tmp}/encore-exit-$$.err")
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "run $i of $n: $* exited with status $rc (over 128: signal $((rc - 128)))"
    cat "${TMPDIR:-/tmp}/encore-exit-$$.err"
    rm -f "${TMPDIR:-/tmp}/encore-exit-$$.err"
    exit 1
  fi
  if ! printf '%s\n' "$out" | grep -qx "$expect"; then
    echo "run $i of $n: $* exited before its queued work completed (no \"$expect\" on stdout)"
    rm -f "${TMPDIR:-/tmp}/encore-exit-$$.err"
    exit 1
  fi
  i=$((i + 1))
done
rm -f "${TMPDIR:-/tmp}/encore-exit-$$.err"
echo "$n runs of $*: all exited cleanly after their queued work"
