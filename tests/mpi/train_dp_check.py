#!/usr/bin/env python3
"""train_mlp --data-parallel under mpirun against single-process runs (a meson test; exit 77: skip).

  train_dp_check.py TRAIN_MLP MPIRUN NP [--no-mutations]

1. A single-process run and an NP-rank --data-parallel run of one full epoch (the same global batch
   and seed): every rank ends with bit-identical weights (train_mlp checks it and says so), the
   parameters match within ||a-b||/||a|| <= 1e-2 (the last gradient 0.25) and the test accuracies
   within 0.5 points. These are loose on purpose: the two sum in different orders, and Adam turns a
   gradient that is rounding noise into a step of up to lr, so the gap depends on the trajectory
   (measured here, ||a-b||/||a|| of the parameters and last gradient: 4.6e-5 and 3.1e-3 for the
   full epoch on 2 ranks, 1.4e-4 and 4.6e-3 on 4; 5.9e-3 and 1.0e-1 with --limit 59904; the
   largest single parameter differs by up to 2.8e-2 of the largest). Check 2 is the exact one.
2. A single process with --grad-shards NP (the gradient of each batch summed over NP shards in the
   order of the all-reduce) gives bit for bit the weights of the NP-rank run.
3. The check catches a broken all-reduce: with the gradients averaged instead of summed, the result
   is not bit-identical to the single process's (and the last gradient is off by a factor NP);
   without the all-reduce the ranks end with different weights and train_mlp exits 3 (skipped with
   --no-mutations: the 4-rank test leaves them to the 2-rank one).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

DATA = "/usr/share/datasets/fashion-mnist"
FULL = ["--epochs", "1", "--batch", "128", "--seed", "1", "--min-accuracy", "0"]
SHORT = ["--epochs", "1", "--limit", "3200", "--batch", "128", "--seed", "1", "--min-accuracy", "0"]

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("$ %s  (%.1f s, exit %d)" % (" ".join(cmd), time.time() - t0, p.returncode), flush=True)
    for line in p.stdout.splitlines():
        if re.search(r"test accuracy|weights|RANKS|parameters|gradient|bit-identical|differ|data-parallel|error|rank", line):
            print("    " + line)
    return p.returncode, p.stdout


def accuracy(out):
    m = re.search(r"test accuracy: ([0-9.]+)", out)
    return float(m.group(1)) if m else None


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in ([], ["--no-mutations"]):
        sys.exit(__doc__)
    train, mpirun, np_ = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mutations = sys.argv[4:] != ["--no-mutations"]
    if not os.path.isdir(DATA):
        print("skipped: no Fashion-MNIST in " + DATA)
        sys.exit(77)
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), train, "--data-parallel"]
    with tempfile.TemporaryDirectory() as d:
        f = lambda name: os.path.join(d, name)
        compare = lambda a, b, *tol: run([train, "--compare-weights", f(a), f(b), *tol])

        # 1. against the plain single-process run
        rc, single = run([train, *FULL, "--save-weights", f("single.bin")])
        check(rc == 0, "single-process run")
        rc, dp = run(mpi + FULL + ["--save-weights", f("dp.bin")])
        check(rc == 0, "%d-rank data-parallel run" % np_)
        check("weights: bit-identical on all %d ranks" % np_ in dp, "all ranks end with bit-identical weights")
        rc, _ = compare("single.bin", "dp.bin", "--l2", "--rtol", "1e-2", "--grad-rtol", "0.25")
        check(rc == 0, "data-parallel parameters within 1e-2 (||a-b||/||a||) of the single process's")
        a1, a2 = accuracy(single), accuracy(dp)
        check(a1 is not None and a2 is not None and abs(a1 - a2) <= 0.005,
              "test accuracy within 0.5 points (%s vs %s)" % (a1, a2))

        # 2. bit for bit against gradient accumulation over the same shards
        rc, _ = run([train, *FULL, "--grad-shards", str(np_), "--save-weights", f("shards.bin")])
        check(rc == 0, "single process with --grad-shards %d" % np_)
        rc, out = compare("shards.bin", "dp.bin", "--rtol", "0", "--grad-rtol", "0")
        check(rc == 0 and "bit-identical" in out, "data-parallel == --grad-shards %d, bit for bit" % np_)

        # 3. a broken all-reduce fails these checks
        if mutations:
            run([train, *SHORT, "--grad-shards", str(np_), "--save-weights", f("short.bin")])
            rc, out = run(mpi + SHORT + ["--save-weights", f("ok.bin")])
            rc2, _ = compare("short.bin", "ok.bin", "--rtol", "0", "--grad-rtol", "0")
            check(rc == 0 and rc2 == 0, "short run: data-parallel == --grad-shards %d, bit for bit" % np_)
            run(mpi + SHORT + ["--test-grad-reduce", "mean", "--save-weights", f("mean.bin")])
            rc, _ = compare("short.bin", "mean.bin", "--rtol", "0", "--grad-rtol", "0")
            check(rc != 0, "gradients averaged instead of summed: detected (not bit-identical)")
            rc, _ = compare("short.bin", "mean.bin", "--rtol", "1", "--grad-rtol", "1e-3")
            check(rc != 0, "gradients averaged instead of summed: the last gradient is off")
            rc, out = run(mpi + SHORT + ["--test-grad-reduce", "none"])
            check(rc != 0 and "RANKS DISAGREE" in out, "no all-reduce: the ranks' weights differ and train_mlp fails")
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
