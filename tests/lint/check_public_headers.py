#!/usr/bin/env python3
"""The public headers are what a consumer compiles against, so each one must stand alone: every
header under include/encore/ compiles by itself as C++20 (C headers as C11 too), with nothing but
the include directory and OpenCL's. And encore/jit.hpp is TinyJit alone: its options live in
encore/jit_options.hpp, and what its templates need in include/encore/detail/, whose names no user
calls. Usage: check_public_headers.py SOURCE_ROOT CXX [CC]; a failure names the header and the
compiler's first lines."""
import pathlib
import re
import subprocess
import sys

# Headers that need an optional dependency the core never makes a consumer take.
NEEDS_OPTIONAL = {"communicator.hpp": "MPI", "mpi.hpp": "MPI"}


def compile_alone(cmd, header, lang, std):
    src = f'#include "{header}"\n'
    r = subprocess.run(cmd + [f"-std={std}", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", lang, "-", "-I", str(INCLUDE)],
                       input=src, capture_output=True, text=True)
    return r.returncode, r.stderr


def jit_declares_only_tinyjit(text):
    """Top-level declarations in namespace encore of encore/jit.hpp: the template TinyJit only."""
    body = text[text.index("namespace encore {"):]
    found = re.findall(r"^(?:template <[^>]*> )?(?:class|struct|enum|using|inline|ENCORE_API)\s+(\w+)", body, re.M)
    return [n for n in found if n != "TinyJit"]


root = pathlib.Path(sys.argv[1])
cxx = sys.argv[2].split()
cc = sys.argv[3].split() if len(sys.argv) > 3 else None
INCLUDE = root / "include"
failures = []
headers = sorted(p for p in (INCLUDE / "encore").rglob("*") if p.suffix in (".hpp", ".h"))
for p in headers:
    rel = p.relative_to(INCLUDE).as_posix()
    if p.name in NEEDS_OPTIONAL:
        continue
    checks = [(cxx, "c++", "c++20")] + ([(cc, "c", "c11")] if p.suffix == ".h" and cc else [])
    for cmd, lang, std in checks:
        rc, err = compile_alone(cmd, rel, lang, std)
        if rc != 0:
            failures.append(f"{rel} does not compile alone as {std}:\n" + "\n".join(err.splitlines()[:8]))
extra = jit_declares_only_tinyjit((INCLUDE / "encore" / "jit.hpp").read_text())
if extra:
    failures.append("encore/jit.hpp declares " + ", ".join(extra) + " beside TinyJit: options belong in encore/jit_options.hpp, "
                    "machinery in include/encore/detail/ (declared there) and src/unit/")
for f in failures:
    print(f)
if failures:
    sys.exit(1)
print(f"{len(headers) - sum(1 for p in headers if p.name in NEEDS_OPTIONAL)} public headers compile alone; encore/jit.hpp is TinyJit; ok")
