#!/usr/bin/env python3
"""A kind's data is read in its kind's files only (docs/layout.md, "Layers"): outside them, no file of
the library's layers (src/core, src/trace, src/exec, src/unit, the backends) reads a kind-specific
field of an item (ExecItem's kernel, sizes, copy ends, upload source, native call, flow; BoundItem's
launch, kernel, copy ends, staging, host source, memories, flow; PlanStep's local size) or
asks an item's kind (ItemKind::...): everything else reaches a kind through its table
(src/exec/kind.hpp). The check is by field name, so it leaves out names every container has (data,
n, size, call). BoundItem is a header plus per-kind payloads (src/exec/payloads.hpp), so the
names above are its payloads' fields. The files that still read kind data, until ExecItem and
PlanStep are made the same way (issue 27, item 2), are listed in OFFENDERS: a new offender
fails, and one that stops reading kind data must leave the list."""
import pathlib
import re
import sys

# A kind's own files: its table, its public entry points (which build its items), and for the steps
# that decide (host, branch, loop) their plan and replay in src/unit/.
OWNERS = {
    "src/exec/kernel_item.cpp", "src/exec/kernel_bound.hpp", "src/exec/kernel_launch.cpp", "src/exec/copy_item.cpp", "src/exec/upload_item.cpp",
    "src/exec/native_item.cpp", "src/exec/fill_item.cpp", "src/exec/flow_items.cpp", "src/exec/flow.hpp",
    "src/unit/flow_plan.cpp", "src/unit/flow_plan.hpp", "src/unit/flow_replay.cpp",
    "src/exec/kinds.cpp",  # the list of tables by ItemKind
    "src/exec/access_check.cpp",  # the kernel kind's capture-time check of access claims
}

# Known offenders, each with what it reads. Shrink this list; never grow it.
OFFENDERS = {
    # the planner: a step's launch sizes, copy ends and native call (PlanStep from ExecItem)
    "src/unit/plan.cpp",
    # cross-device order: which items are split-phase native calls
    "src/unit/sync.cpp",
    # the capture check's SeenItem: every kind's fields, compared between calls 0 and 1
    "src/unit/capture_check.cpp", "src/unit/capture_check.hpp",
    # host-input uploads checked and renumbered when units are made and concatenated
    "src/unit/execution_unit.cpp",
    # the replay loop's flow items (host, branch, loop) and its traced launches
    "src/unit/replay.cpp",
    # concurrent replay's eligibility: reads the Plan's own `flow` flag (a match by name: the plan's,
    # not an item's field; it goes when the flags are asked through the kind tables)
    "src/unit/concurrent.cpp",
    # a kernel argument's description: Arg::host_slot/host_offset of a per-call by-value argument
    # (a match by name with ExecItem's upload fields)
    "src/exec/exec_item.cpp",
    # record_only refuses steps that decide: asks whether an item is a host, branch or loop item
    "src/unit/jit.cpp",
}

LAYERS = ("core", "trace", "exec", "unit", "opencl", "null")
FIELDS = ("kernel", "global", "local", "dst", "src", "host_slot", "host_offset", "native", "flow",  # ExecItem
          "ld", "staging", "host", "host_off", "mems",  # BoundItem (with kernel, dst, src, flow)
          "has_local")  # PlanStep
read = re.compile(r"(?:\.|->)(" + "|".join(FIELDS) + r")\b(?!\s*\()|\bItemKind::\w+")

root = pathlib.Path(sys.argv[1])
bad, offending = [], set()
for layer in LAYERS:
    for p in sorted((root / "src" / layer).rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.suffix not in (".cpp", ".hpp") or rel in OWNERS:
            continue
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            code = line.split("//", 1)[0]
            for m in read.finditer(code):
                if rel in OFFENDERS:
                    offending.add(rel)
                else:
                    bad.append(f"{rel}:{n}: reads {m.group(0).lstrip('.->')}: {line.strip()}")
for b in bad:
    print("kind data outside its kind's files (reach it through the kind's table, src/exec/kind.hpp):", b)
for f in sorted(OFFENDERS - offending):
    print(f"{f} reads no kind data any more: remove it from OFFENDERS in tests/lint/check_kind_data.py")
ok = not bad and offending == OFFENDERS
print(f"{len(OFFENDERS)} known offenders; " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
