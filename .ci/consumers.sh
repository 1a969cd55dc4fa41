#!/usr/bin/env bash
# Builds and runs tiny consumers of encore three ways:
#   1. pkg-config: a C11 program that includes only encore/encore.h, compiled with cc;
#   2. CMake find_package(encore) -> encore::encore: a C++20 program and the same C program;
#   3. meson subproject: a project whose subprojects/encore is this source tree, dependency('encore').
# Usage: .ci/consumers.sh PREFIX     PREFIX: where `meson install` put encore (needs cc, c++, cmake,
# pkg-config, meson, ninja). The consumers are in tests/consumers/.
set -euo pipefail
if [[ $# -ne 1 || ! -d "$1" ]]; then
  echo "usage: $0 INSTALL_PREFIX (a folder where encore is installed)" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

lib=$(find "$prefix" -name 'libencore.so' -print -quit)
pc=$(find "$prefix" -name 'encore.pc' -print -quit)
config=$(find "$prefix" -name 'encoreConfig.cmake' -print -quit)
for f in "$lib" "$pc" "$config"; do
  [[ -n "$f" ]] || { echo "consumers.sh: no libencore.so, encore.pc or encoreConfig.cmake under $prefix" >&2; exit 2; }
done
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
start=$(date +%s)

echo "== 1. pkg-config ($pc)"
export PKG_CONFIG_PATH="$(dirname "$pc")"
pcprefix=$(pkg-config --variable=prefix encore)
if [[ "$pcprefix" == "$prefix" ]]; then
  pcflags=$(pkg-config --cflags --libs encore)
else  # a DESTDIR install: encore.pc names the final prefix; point it here instead
  echo "encore.pc says prefix=$pcprefix; using $prefix"
  pcflags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs encore)
fi
echo "pkg-config --cflags --libs encore: $pcflags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$src/tests/consumers/consumer.c" -o "$work/consumer-pkgconfig" $pcflags
"$work/consumer-pkgconfig"

unset PKG_CONFIG_PATH

echo "== 2. CMake find_package ($config)"
cmake -S "$src/tests/consumers/cmake" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_COMPILE_WARNING_AS_ERROR=ON > "$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake"
"$work/cmake/consumer"
"$work/cmake/consumer_c"

echo "== 3. meson subproject"
mkdir -p "$work/meson/subprojects"
cp "$src/tests/consumers/meson/meson.build" "$src/tests/consumers/consumer.c" "$src/tests/consumers/consumer.cpp" "$work/meson/"
ln -s "$src" "$work/meson/subprojects/encore"
(
  cd "$work/meson"
  # PKG_CONFIG_PATH unset: dependency('encore') must come from the subproject, not an installed copy
  env -u PKG_CONFIG_PATH meson setup build --wrap-mode=nodownload > setup.log || { cat setup.log; exit 1; }
  meson compile -C build
  LD_LIBRARY_PATH='' ./build/consumer_c
  LD_LIBRARY_PATH='' ./build/consumer
)
echo "consumers: pkg-config, CMake and meson subproject builds ran in $(( $(date +%s) - start )) s"
