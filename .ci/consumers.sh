#!/usr/bin/env bash
# Builds and runs tiny consumers of an installed encore, the ways docs/install.md describes:
#   0. the installed tree: libencore and encore.pc name no MPI (the collectives are libencore-mpi);
#   1. pkg-config, with only the stage's and OpenCL's .pc files visible (no Open MPI .pc files):
#      a C11 program (encore/encore.h) and README's C++ program with `--variable=cxxflags`; and,
#      where encore has MPI, a program of encore::Communicator with encore-mpi's flags alone;
#   2. CMake find_package(encore) -> encore::encore: README's C++ program and a C++ consumer with no
#      C++ standard set by the consumer (encore::encore carries cxx_std_20), the C program, and,
#      where encore has MPI, a program linking encore::mpi;
#   3. meson subproject: a parent project whose subprojects/encore is this source tree, built with
#      encore's defaults (tests, benchmarks, examples and harness off in a subproject).
# Usage: .ci/consumers.sh PREFIX     PREFIX: where `meson install` put encore (a --destdir stage works:
# PREFIX is then the stage's copy of the prefix). Needs cc, c++, cmake, pkg-config, meson, ninja.
#        .ci/consumers.sh --subproject   only 3., with no installed encore: on a machine that has
# none of Boost, GoogleTest and Google Benchmark this is the proof that a parent project needs none
# (.ci/fresh-debian.sh runs it in a root that has only the compiler, meson, ninja and OpenCL).
# The consumers are in tests/consumers/; README's C++ program is taken from README.md itself.
set -euo pipefail
if [[ $# -ne 1 || ( "$1" != --subproject && ! -d "$1" ) ]]; then
  echo "usage: $0 INSTALL_PREFIX (a folder where encore is installed) | --subproject" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
mpilib=
if [[ "$1" != --subproject ]]; then
prefix=$(cd "$1" && pwd)

lib=$(find "$prefix" -name 'libencore.so' -print -quit)
pc=$(find "$prefix" -name 'encore.pc' -print -quit)
config=$(find "$prefix" -name 'encoreConfig.cmake' -print -quit)
for f in "$lib" "$pc" "$config"; do
  [[ -n "$f" ]] || { echo "consumers.sh: no libencore.so, encore.pc or encoreConfig.cmake under $prefix" >&2; exit 2; }
done
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# README's first C++ program (the first ```cpp program block), as a newcomer would copy it
python3 - "$src/README.md" "$work/readme.cpp" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^```cpp program[^\n]*\n(.*?)^```\s*$", text, re.M | re.S)
if not m:
    sys.exit("consumers.sh: README.md has no ```cpp program block")
open(sys.argv[2], "w").write(m.group(1))
PY

echo "== 0. the installed tree names no MPI"
if readelf -d "$lib" | grep -E 'NEEDED.*(libmpi|open-rte|open-pal|hwloc|libevent)'; then
  echo "consumers.sh: $lib links MPI (the collectives belong in libencore-mpi)" >&2
  exit 1
fi
if grep -niE 'mpi' "$pc"; then
  echo "consumers.sh: $pc names MPI" >&2
  exit 1
fi
mpilib=$(find "$prefix" -name 'libencore-mpi.so' -print -quit)
echo "libencore and encore.pc: no MPI${mpilib:+; MPI collectives in $mpilib}"

echo "== 1. pkg-config ($pc), only the stage's and OpenCL's .pc files visible"
# OpenCL.pc alone in a folder of its own (on Debian it shares /usr/lib/<triplet>/pkgconfig with
# Open MPI's ompi*.pc), then the search path narrowed to that folder and the stage's
mkdir -p "$work/pc-opencl" "$work/pc-stage"
cp "$(pkg-config --variable=pcfiledir OpenCL)/OpenCL.pc" "$work/pc-opencl/"
# encore's .pc files; after a DESTDIR install they name the final prefix, so the copies name the
# stage's instead (pkg-config's --define-variable=prefix would also move MPI's prefix)
pcprefix=$(sed -n 's/^prefix=//p' "$pc")
[[ "$pcprefix" == "$prefix" ]] || echo "encore.pc says prefix=$pcprefix; the copies under $work/pc-stage say $prefix"
for f in "$(dirname "$pc")"/encore*.pc; do
  sed "s|^prefix=.*|prefix=$prefix|" "$f" > "$work/pc-stage/$(basename "$f")"
done
export PKG_CONFIG_LIBDIR="$work/pc-stage:$work/pc-opencl"
export PKG_CONFIG_PATH=""
if pkg-config --exists ompi-cxx || pkg-config --exists ompi; then
  echo "consumers.sh: Open MPI's .pc files are still visible" >&2
  exit 1
fi
pcflags=$(pkg-config --cflags --libs encore)
cxxflags=$(pkg-config --variable=cxxflags encore)
echo "pkg-config --cflags --libs encore: $pcflags; --variable=cxxflags: $cxxflags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$src/tests/consumers/consumer.c" -o "$work/consumer-pkgconfig" $pcflags
"$work/consumer-pkgconfig"
# shellcheck disable=SC2086
c++ $cxxflags -Wall -Wextra -Werror "$work/readme.cpp" -o "$work/readme-pkgconfig" $pcflags
"$work/readme-pkgconfig" > "$work/readme-pkgconfig.out"
tail -n 1 "$work/readme-pkgconfig.out"
unset PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
if [[ -n "$mpilib" ]]; then
  # encore-mpi.pc with MPI's own .pc files visible: the collectives' consumer builds with the flags
  # of encore-mpi alone (MPI's C API and -lmpi; no deprecated MPI C++ bindings, so -Werror holds)
  mpiflags=$(PKG_CONFIG_PATH="$work/pc-stage" pkg-config --cflags --libs encore-mpi)
  echo "pkg-config --cflags --libs encore-mpi: $mpiflags"
  # shellcheck disable=SC2086
  c++ $cxxflags -Wall -Wextra -Werror "$src/tests/consumers/consumer_mpi.cpp" -o "$work/consumer-mpi-pkgconfig" $mpiflags
  "$work/consumer-mpi-pkgconfig" && echo "encore-mpi consumer (pkg-config): built"
fi

echo "== 2. CMake find_package ($config)"
cmake -S "$src/tests/consumers/cmake" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DREADME_PROGRAM="$work/readme.cpp" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_COMPILE_WARNING_AS_ERROR=ON > "$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake"
"$work/cmake/consumer"
"$work/cmake/consumer_c"
"$work/cmake/readme_program" | tail -n 1
if [[ -n "$mpilib" && ! -x "$work/cmake/consumer_mpi" ]]; then
  echo "consumers.sh: encore has libencore-mpi but CMake built no encore::mpi consumer" >&2
  exit 1
fi
[[ -x "$work/cmake/consumer_mpi" ]] && "$work/cmake/consumer_mpi" && echo "encore::mpi consumer: built"

fi  # (the installed tree)

echo "== 3. meson subproject (encore's own defaults)"
mkdir -p "$work/meson/subprojects"
cp "$src/tests/consumers/meson/meson.build" "$src/tests/consumers/consumer.c" "$src/tests/consumers/consumer.cpp" "$work/meson/"
ln -s "$src" "$work/meson/subprojects/encore"
(
  cd "$work/meson"
  # PKG_CONFIG_PATH unset: dependency('encore') must come from the subproject, not an installed copy
  env -u PKG_CONFIG_PATH meson setup build --wrap-mode=nodownload > setup.log || { cat setup.log; exit 1; }
  # a subproject builds the library only: no tests, benchmarks, examples or harness, and it looks
  # for none of GoogleTest, Google Benchmark or Boost
  meson introspect --targets build > targets.json
  python3 - targets.json <<'PY'
import json, sys
names = {t["name"] for t in json.load(open(sys.argv[1]))}
extra = sorted(n for n in names if n in {"encore-tests", "encore-internal-tests", "encore-bench", "encore_workload",
                                         "train_mlp", "hello_encore", "bench-replay", "bench-eager"})
if extra:
    sys.exit("consumers.sh: encore as a subproject builds " + ", ".join(extra))
PY
  # every dependency the configuration looked up, found or not, is one the library needs
  python3 - build/meson-logs/meson-log.txt <<'PY'
import re, sys
needed = {"opencl", "threads", "mpi", "ompi", "ompi-c", "ompi-cxx", "mpich", "encore", "encore-mpi"}
looked = set()
for line in open(sys.argv[1], errors="replace"):
    for m in re.finditer(r"\b[Dd]ependency '?([A-Za-z0-9_.+-]+)'?", line):
        looked.add(m.group(1).lower())
extra = sorted(looked - needed)
if extra:
    sys.exit("consumers.sh: encore as a subproject looked for " + ", ".join(extra) +
             " (a parent project must need no Boost, GoogleTest or Google Benchmark)")
print("encore as a subproject looked for: " + ", ".join(sorted(looked)))
PY
  meson compile -C build
  LD_LIBRARY_PATH='' ./build/consumer_c
  LD_LIBRARY_PATH='' ./build/consumer
)
if [[ "$1" == --subproject ]]; then
  echo "consumers: the meson subproject build ran in $(( $(date +%s) - start )) s"
else
  echo "consumers: no MPI in encore, pkg-config (C, C++${mpilib:+, MPI}), CMake (C++, C${mpilib:+, MPI}) and meson subproject builds ran in $(( $(date +%s) - start )) s"
fi
