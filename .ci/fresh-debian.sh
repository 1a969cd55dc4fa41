#!/usr/bin/env bash
# README's first two fenced shell commands, verbatim, in a freshly bootstrapped Debian 12 root: what a
# newcomer sees; then README's third (its `meson install` line) and the three consumers
# (pkg-config, CMake, meson subproject) built from the package it installed (.ci/consumers.sh); then, in a second new root that has only a
# compiler, meson, ninja and OpenCL, a meson parent project that builds encore as a subproject. This machine keeps whatever earlier sessions installed (once that hid a missing
# `cmake` in README's install line); a minbase root has only what README's commands install.
#
# Usage: .ci/fresh-debian.sh [COMMIT]     (default HEAD of this checkout)
# The bootstrapped root (minbase + git, ca-certificates, sudo) is kept as a tarball under
# $ENCORE_DEBOOTSTRAP_CACHE (default /var/cache/encore-ci) and unpacked anew for every run, so a
# run never sees what an earlier one installed; downloaded .deb files are cached beside it. The
# cache lives on this machine only. Needs root, debootstrap and the Debian mirror apt uses here.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$src" rev-parse "${1:-HEAD}")
cache=${ENCORE_DEBOOTSTRAP_CACHE:-/var/cache/encore-ci}
tarball="$cache/bookworm-minbase.tar"
mkdir -p "$cache/debs"
start=$(date +%s)

# the mirror apt is configured with here (deb822 or one-line sources)
mirror=$(grep -hoE '^URIs: *[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n 1 || true)
[[ -n "$mirror" ]] || mirror=$(grep -hoE '^deb +[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | head -n 1 || true)
[[ -n "$mirror" ]] || { echo "fresh-debian: no Debian mirror found in /etc/apt" >&2; exit 2; }

# 1. the two commands, taken from README.md as it is in the commit under test
readme_cmds=$(mktemp -d)
git -C "$src" show "$commit:README.md" | python3 -c '
import sys
blocks, cur = [], None
for line in sys.stdin:
    s = line.rstrip("\n")
    if cur is None and s.strip() in ("```sh", "```bash", "```shell"):
        cur = []
    elif cur is not None and s.strip() == "```":
        blocks.append("\n".join(cur) + "\n"); cur = None
        if len(blocks) == 3: break
    elif cur is not None:
        cur.append(s)
if len(blocks) < 3:
    sys.exit("fresh-debian: README.md has fewer than three fenced shell blocks (install and build, test, meson install)")
for i, b in enumerate(blocks):
    open(sys.argv[1] + "/cmd%d" % (i + 1), "w").write(b)
' "$readme_cmds"
install_cmd=$(cat "$readme_cmds/cmd1")
test_cmd=$(cat "$readme_cmds/cmd2")
package_cmd=$(cat "$readme_cmds/cmd3")
rm -rf "$readme_cmds"
[[ "$package_cmd" == *"meson install"* ]] || { echo "fresh-debian: README's third shell block is not its meson install line" >&2; exit 2; }
printf 'README command 1:\n%s\nREADME command 2:\n%s\nREADME command 3:\n%s\n' "$install_cmd" "$test_cmd" "$package_cmd"

# 2. the bootstrapped root, made once per machine
if [[ ! -s "$tarball" ]]; then
  boot=$(mktemp -d /var/tmp/encore-boot.XXXXXX)
  debootstrap --variant=minbase bookworm "$boot" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log"; exit 1; }
  cp /etc/resolv.conf "$boot/etc/resolv.conf" 2>/dev/null || true
  # the same archive (and security suite) as this machine's apt
  cp /etc/apt/sources.list.d/*.sources "$boot/etc/apt/sources.list.d/" 2>/dev/null && rm -f "$boot/etc/apt/sources.list"
  chroot "$boot" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get update -q && apt-get install -y -q git ca-certificates sudo && apt-get clean' > "$cache/bootstrap-extra.log" 2>&1 ||
    { tail -n 30 "$cache/bootstrap-extra.log"; exit 1; }
  tar -C "$boot" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$boot"
  echo "fresh-debian: bootstrapped in $(( $(date +%s) - start )) s"
fi

# 3. a new root from the tarball, the commit cloned into it, README's commands run inside
root=$(mktemp -d /var/tmp/encore-root.XXXXXX)
cleanup() {
  for m in var/cache/apt/archives sys dev/pts dev proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts" 2>/dev/null || true
mount --bind /sys "$root/sys"   # PoCL reads the CPU topology from sysfs
mount --bind "$cache/debs" "$root/var/cache/apt/archives"
git clone -q --no-local "$src" "$root/root/encore"
git -C "$root/root/encore" checkout -q "$commit"

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c "cd /root/encore && $1"
}
t0=$(date +%s)
if ! in_root "$install_cmd" > "$cache/readme-install.log" 2>&1; then
  tail -n 60 "$cache/readme-install.log"
  echo "fresh-debian: README's first command FAILED in a fresh Debian 12 root (log: $cache/readme-install.log)"
  exit 1
fi
tail -n 5 "$cache/readme-install.log"
echo "fresh-debian: README's first command passed in $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
if ! in_root "$test_cmd" > "$cache/readme-test.log" 2>&1; then
  tail -n 60 "$cache/readme-test.log"
  echo "fresh-debian: README's second command FAILED in a fresh Debian 12 root (log: $cache/readme-test.log)"
  exit 1
fi
grep -E '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):' "$cache/readme-test.log" || tail -n 12 "$cache/readme-test.log"
echo "fresh-debian: README's second command passed in $(( $(date +%s) - t1 )) s"

# 4. the consumers of docs/install.md, built from the package that README's third command (its
# `meson install` line, verbatim) installs into /usr/local: pkg-config, CMake and a meson parent
# project (.ci/consumers.sh). CMake is the consumer's own tool, not one README's commands install,
# so it is installed here first. (One command a line: README's line may end in a comment.)
t2=$(date +%s)
consumers_cmd="apt-get install -y -q cmake > /dev/null
$package_cmd
.ci/consumers.sh /usr/local"
if ! in_root "$consumers_cmd" > "$cache/consumers.log" 2>&1; then
  tail -n 60 "$cache/consumers.log"
  echo "fresh-debian: the consumers of the installed package FAILED in a fresh Debian 12 root (log: $cache/consumers.log)"
  exit 1
fi
tail -n 1 "$cache/consumers.log"
echo "fresh-debian: consumers built from the installed package in $(( $(date +%s) - t2 )) s"

# 5. a meson parent project on a machine with none of Boost, GoogleTest and Google Benchmark: a second
# new root with only a compiler, meson, ninja and OpenCL (what libencore itself needs), where the
# parent builds encore as a subproject (.ci/consumers.sh --subproject). In the first root README's
# command has installed all three, so only this one shows a parent project needs none of them.
t3=$(date +%s)
cleanup
root=$(mktemp -d /var/tmp/encore-root.XXXXXX)
tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts" 2>/dev/null || true
mount --bind /sys "$root/sys"
mount --bind "$cache/debs" "$root/var/cache/apt/archives"
git clone -q --no-local "$src" "$root/root/encore"
git -C "$root/root/encore" checkout -q "$commit"
# shellcheck disable=SC2016  # (expanded inside the root, by in_root's bash)
subproject_cmd='apt-get update -q > /dev/null && apt-get install -y -q g++ pkg-config meson ninja-build pocl-opencl-icd ocl-icd-opencl-dev opencl-headers > /dev/null
for absent in /usr/include/boost /usr/include/gtest /usr/include/benchmark; do
  if [ -e "$absent" ]; then echo "fresh-debian: $absent exists in the minimal root" >&2; exit 1; fi
done
.ci/consumers.sh --subproject'
if ! in_root "$subproject_cmd" > "$cache/subproject.log" 2>&1; then
  tail -n 60 "$cache/subproject.log"
  echo "fresh-debian: the meson parent project FAILED in a root without Boost, GoogleTest and Google Benchmark (log: $cache/subproject.log)"
  exit 1
fi
grep -E '^encore as a subproject looked for' "$cache/subproject.log" || true
tail -n 1 "$cache/subproject.log"
echo "fresh-debian: a meson parent project built encore as a subproject with no Boost, GoogleTest or Google Benchmark installed in $(( $(date +%s) - t3 )) s; whole job $(( $(date +%s) - start )) s"
