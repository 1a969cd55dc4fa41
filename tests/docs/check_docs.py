#!/usr/bin/env python3
"""The docs cannot rot: checks on README.md and docs/*.md, run as meson tests (tests/docs/meson.build).

  check_docs.py links ROOT
      every relative link and image in README.md and docs/*.md names a file of the project and, with
      #anchor, a heading of that file (GitHub's anchors); README keeps its shape: under 250 lines,
      its first three ```sh blocks the install-and-build command, the test command and the meson
      install line (.ci/fresh-debian.sh runs them verbatim); no complete program or workload file sits in an unmarked block; the installed
      headers (include/encore) name only .md files of the project, and no DESIGN rule.
  check_docs.py programs ROOT OUT --cxx 'CXX...' [--cc 'CC...'] --lib LIBENCORE [--bench ENCORE_BENCH]
      every fenced block marked as a complete program is compiled against the built library and run
      on the NULL device; every workload block is checked by encore-bench on the NULL device.

Marking a block (the fence's info string; GitHub highlights by its first word only):
  ```cpp program      a complete C++20 program: compiled (-Wall -Wextra -Werror) and run
  ```c program        a complete C11 program: the same
  ```cpp program norun  compiled, not run (a program that needs data, MPI or a GPU)
  ```json workload    a complete workload file: `encore-bench check --device NULL`
"""
import os
import shlex
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

# Files that another change adds; a link to one is accepted while the file does not exist yet.
PENDING = set()
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def doc_files(root):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def blocks_and_prose(text):
    """(prose lines with their numbers, fenced blocks as (info, first line number, body))."""
    prose, blocks, cur = [], [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if cur is None and m:
            cur = (m.group(2), m.group(3).strip(), n + 1, [])
        elif cur is not None and m and m.group(2).startswith(cur[0]) and not m.group(3).strip():
            blocks.append((cur[1], cur[2], "\n".join(cur[3]) + "\n"))
            cur = None
        elif cur is not None:
            cur[3].append(line)
        else:
            prose.append((n, line))
    return prose, blocks


def slug(heading):
    """GitHub's anchor for a heading: lower case, inline markup and punctuation dropped, spaces to '-'."""
    h = re.sub(r"`([^`]*)`", r"\1", heading)
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = h.strip().lower()
    out = []
    for ch in h:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def anchors(path):
    prose, _ = blocks_and_prose(path.read_text())
    seen, result = {}, set()
    for _, line in prose:
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        k = seen.get(s, 0)
        seen[s] = k + 1
        result.add(s if k == 0 else f"{s}-{k}")
    return result


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links(root):
    errors, count = [], 0
    cache = {}
    for f in doc_files(root):
        prose, _ = blocks_and_prose(f.read_text())
        for n, line in prose:
            line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                count += 1
                where = f"{f.relative_to(root)}:{n}: {target}"
                path, _, anchor = target.partition("#")
                dest = (f.parent / path).resolve() if path else f.resolve()
                try:
                    rel = dest.relative_to(root.resolve()).as_posix()
                except ValueError:
                    errors.append(f"{where}: leaves the project")
                    continue
                if not dest.exists():
                    if rel in PENDING:
                        print(f"note: {where}: {rel} is not written yet (pending)")
                        continue
                    errors.append(f"{where}: no such file")
                    continue
                if anchor:
                    if dest.suffix != ".md":
                        errors.append(f"{where}: an anchor into a file that is not markdown")
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        errors.append(f"{where}: no heading with anchor #{anchor} in {rel}")
    return errors, count


def check_unmarked(root):
    """A complete program or workload file in a block that is not marked would never be checked:
    every ```cpp/```c block with a main() and every ```json block with "format": "encore.workload/1" is marked."""
    errors = []
    for f in doc_files(root):
        _, blocks = blocks_and_prose(f.read_text())
        for info, line, body in blocks:
            words = info.split()
            lang = words[0] if words else ""
            marked = len(words) >= 2 and words[1] in ("program", "workload")
            if marked:
                continue
            if lang in ("cpp", "c++", "c") and re.search(r"^\s*int\s+main\s*\(", body, re.M):
                errors.append(f"{f.relative_to(root)}:{line}: a complete program (it has main) in a block not marked ```{lang} program: mark it so it is compiled")
            if lang == "json" and '"encore.workload/1"' in body:
                errors.append(f"{f.relative_to(root)}:{line}: a workload file in a block not marked ```json workload: mark it so it is checked")
    return errors


def check_header_refs(root):
    """The installed headers are what a consumer reads: every .md file they name is in the project
    (docs/...), and none points at a design document that is not ("DESIGN rule 2")."""
    errors = []
    for h in sorted((root / "include" / "encore").glob("*.h*")):
        for n, line in enumerate(h.read_text().split("\n"), 1):
            where = f"{h.relative_to(root)}:{n}"
            for m in re.finditer(r"[\w./-]+\.md\b", line):
                if not (root / m.group(0)).is_file():
                    errors.append(f"{where}: names {m.group(0)}, which is not a file of the project (docs/... from the project root)")
            if re.search(r"\bDESIGN\b", line):
                errors.append(f"{where}: names DESIGN, which is not part of the project: point at the guide in docs/ instead")
    return errors


def check_readme_shape(root):
    errors = []
    text = (root / "README.md").read_text()
    lines = text.count("\n")
    if lines >= 250:
        errors.append(f"README.md has {lines} lines: keep it under 250 (the rest belongs in docs/)")
    _, blocks = blocks_and_prose(text)
    sh = [b for info, _, b in blocks if info in ("sh", "bash", "shell")]
    if len(sh) < 2:
        errors.append("README.md: the first two ```sh blocks are the install and the test command (.ci/fresh-debian.sh)")
    else:
        if "apt-get install" not in sh[0] or "meson setup build" not in sh[0]:
            errors.append("README.md: the first ```sh block must install the dependencies and build (apt-get install ... meson setup build ...)")
        if "meson test" not in sh[1]:
            errors.append("README.md: the second ```sh block must run the tests (meson test ...)")
        if len(sh) < 3 or "meson install" not in sh[2]:
            errors.append("README.md: the third ```sh block must be the install line (meson install ...; .ci/fresh-debian.sh runs it)")
    return errors


def marked_blocks(root):
    for f in doc_files(root):
        _, blocks = blocks_and_prose(f.read_text())
        for info, line, body in blocks:
            words = info.split()
            if len(words) >= 2 and words[1] in ("program", "workload"):
                yield f, line, words, body


def check_programs(root, out, cxx, cc, lib, bench):
    out.mkdir(parents=True, exist_ok=True)
    libdir = str(Path(lib).resolve().parent)
    include = str(root / "include")
    env = dict(os.environ, ENCORE_DEVICE="NULL", LD_LIBRARY_PATH=libdir + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    errors, done = [], 0
    for f, line, words, body in marked_blocks(root):
        name = f"{f.relative_to(root).as_posix().replace('/', '_').replace('.md', '')}_{line}"
        where = f"{f.relative_to(root)}:{line}"
        lang = words[0]
        if words[1] == "workload":
            if lang != "json":
                errors.append(f"{where}: a workload block is ```json workload")
                continue
            if not bench:
                print(f"skip {where}: no encore-bench (meson option harness)")
                continue
            src = out / f"{name}.json"
            src.write_text(body)
            cmd = [bench, "check", "--device", "NULL", str(src)]
        else:
            if lang not in ("cpp", "c"):
                errors.append(f"{where}: a program block is ```cpp program or ```c program, not {lang}")
                continue
            src = out / f"{name}.{lang}"
            src.write_text(body)
            exe = out / name
            if lang == "cpp":
                compile_cmd = cxx + ["-std=c++20"]
            else:
                if not cc:
                    print(f"skip {where}: no C compiler")
                    continue
                compile_cmd = cc + ["-std=c11", "-Wpedantic"]
            compile_cmd += ["-Wall", "-Wextra", "-Werror", "-I", include, str(src), "-o", str(exe),
                            "-L", libdir, "-lencore", "-Wl,-rpath," + libdir]
            r = subprocess.run(compile_cmd, capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"{where}: does not compile ({' '.join(compile_cmd)}):\n{r.stdout}{r.stderr}")
                continue
            if "norun" in words[2:]:
                print(f"ok {where}: compiled ({lang})")
                done += 1
                continue
            cmd = [str(exe)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        except subprocess.TimeoutExpired:
            errors.append(f"{where}: {' '.join(cmd)} ran over 120 s")
            continue
        if r.returncode != 0:
            errors.append(f"{where}: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
            continue
        print(f"ok {where}: {' '.join(words)}")
        done += 1
    errors += check_below_cxx20(root, out, cxx)
    return errors, done


def check_below_cxx20(root, out, cxx):
    """Below C++20 the C++ headers stop with one #error that says so (encore/export.hpp)."""
    src = out / "below_cxx20.cpp"
    src.write_text("#include <encore/encore.hpp>\n#include <encore/opencl.hpp>\nint main() { return 0; }\n")
    cmd = cxx + ["-std=c++17", "-fsyntax-only", "-I", str(root / "include"), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stdout + r.stderr
    errors = [line for line in text.splitlines() if re.search(r"\berror\b", line) and ": " in line and not line.startswith(" ")]
    if r.returncode == 0:
        return ["encore/encore.hpp compiled with -std=c++17: the C++20 check in encore/export.hpp is gone"]
    if "need C++20" not in text or len(errors) > 2:
        return [f"below C++20, encore/encore.hpp should stop with one #error naming C++20; got {len(errors)} errors:\n{text[:3000]}"]
    print("ok: below C++20 the headers stop with one #error")
    return []


def main(argv):
    if len(argv) < 3 or argv[1] not in ("links", "programs"):
        sys.exit(__doc__)
    root = Path(argv[2]).resolve()
    if argv[1] == "links":
        errors, count = check_links(root)
        errors += check_readme_shape(root) + check_unmarked(root) + check_header_refs(root)
        summary = f"{count} relative links in README.md and docs/*.md"
    else:
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("out")
        ap.add_argument("--cxx", required=True)
        ap.add_argument("--cc", default="")
        ap.add_argument("--lib", required=True)
        ap.add_argument("--bench", default="")
        a = ap.parse_args(argv[3:])
        errors, done = check_programs(root, Path(a.out), shlex.split(a.cxx), shlex.split(a.cc), a.lib, a.bench)
        summary = f"{done} program and workload blocks in README.md and docs/*.md"
        if done == 0 and not errors:
            errors.append("no block is marked as a program (```cpp program): the check would check nothing")
    for e in errors:
        print("FAIL", e)
    print(summary + (": ok" if not errors else f": {len(errors)} FAILED"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
