#!/usr/bin/env python3
"""The environment is read in one place: no source under src/ but src/core/env.cpp calls getenv, and
docs/environment.md names every ENCORE_ variable that src/core/env.hpp lists."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
bad = []
for p in sorted((root / "src").rglob("*")):
    if p.suffix not in (".cpp", ".hpp", ".h", ".c") or p.relative_to(root).as_posix() == "src/core/env.cpp":
        continue
    for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
        if re.search(r"\b(secure_)?getenv\s*\(|\benviron\b", line):
            bad.append(f"{p.relative_to(root)}:{n}: {line.strip()}")
listed = set(re.findall(r"^//\s+(ENCORE_[A-Z_]+)", (root / "src/core/env.hpp").read_text(), re.M))
section = (root / "docs" / "environment.md").read_text()
missing = sorted(v for v in listed if v not in section)
for b in bad:
    print("reads the environment outside src/core/env.cpp:", b)
for v in missing:
    print(f"{v} (src/core/env.hpp) is not in docs/environment.md")
if not listed:
    print("src/core/env.hpp lists no ENCORE_ variable")
ok = not bad and not missing and listed
print(f"{len(listed)} variables listed in src/core/env.hpp; " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
