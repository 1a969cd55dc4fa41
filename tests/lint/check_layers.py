#!/usr/bin/env python3
"""Includes point down: a file under src/ includes only headers of its own layer and the layers below
(docs/layout.md, "Layers"). The layers, lowest first:
  base      src/core/ and src/trace/ (one layer: core's program build logs through trace/trace.hpp,
            and the trace reads core's devices and the environment), and src/testing.{hpp,cpp}
  exec      src/exec/     running items: the kinds, eager execution, the one enqueue path
  unit      src/unit/     plans, bindings, replay, TinyJit
  top       src/capi/, src/mpi/, src/workload/, src/tools/
The backends (src/opencl/, src/null/) see the base only, and nothing outside a backend includes its
headers: the core reaches a backend through core/backend.hpp. Public headers (encore/...) may be
included anywhere. An include pointing upward fails with the file, the line and the rule."""
import pathlib
import re
import sys

BASE, EXEC, UNIT, TOP = 0, 1, 2, 3
NAMES = {BASE: "the base (core, trace)", EXEC: "exec", UNIT: "unit", TOP: "the top (capi, mpi, workload, tools)"}
LAYER = {"core": BASE, "trace": BASE, "testing.hpp": BASE, "testing.cpp": BASE, "exec": EXEC, "unit": UNIT,
         "capi": TOP, "mpi": TOP, "workload": TOP, "tools": TOP}
BACKENDS = {"opencl", "null"}

# Upward includes that stay until the code they serve is restructured, each with its reason. A new
# one fails; one listed here that is gone fails too, so the list only shrinks.
ALLOWED = set()

root = pathlib.Path(sys.argv[1])
src = root / "src"
include = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder(rel):
    """The first part of a path under src/ ('core', 'testing.hpp'), for a file or an include."""
    return rel.split("/", 1)[0]


bad, used = [], set()
files = sorted(p for p in src.rglob("*") if p.suffix in (".cpp", ".hpp", ".h", ".c"))
for p in files:
    rel = p.relative_to(root).as_posix()
    own = folder(p.relative_to(src).as_posix())
    if own not in LAYER and own not in BACKENDS:
        bad.append(f"{rel}: src/{own} is in no layer: add it to tests/lint/check_layers.py and docs/layout.md")
        continue
    for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
        m = include.match(line)
        if not m or m.group(1).startswith("encore/"):
            continue
        name = m.group(1).removeprefix("src/")  # "src/capi/capi_config.h": generated in the build folder
        if "/" not in name and (p.parent / name).exists():
            continue  # a header of the file's own folder, named without it
        to = folder(name)
        if (rel, name) in ALLOWED:
            used.add((rel, name))
            continue
        if to == own:
            continue
        if to in BACKENDS:
            bad.append(f"{rel}:{n}: includes {name}: a backend's headers are its own (the core reaches it through core/backend.hpp)")
        elif to not in LAYER:
            bad.append(f"{rel}:{n}: includes {name}, which is in no layer")
        elif own in BACKENDS and LAYER[to] != BASE:
            bad.append(f"{rel}:{n}: includes {name}: a backend (src/{own}) sees the base only (core, trace), not {NAMES[LAYER[to]]}")
        elif own in LAYER and LAYER[to] > LAYER[own]:
            bad.append(f"{rel}:{n}: includes {name}: {NAMES[LAYER[own]]} may include only its own layer and those below, "
                       f"not {NAMES[LAYER[to]]}")
for b in bad:
    print("upward include:", b)
for f, h in sorted(ALLOWED - used):
    print(f"tests/lint/check_layers.py allows {f} -> {h}, which is no longer there: remove it from ALLOWED")
ok = not bad and used == ALLOWED
print(f"{len(files)} files under src/, {len(ALLOWED)} allowed upward include(s); " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
