#!/usr/bin/env bash
# The Debian packages end to end (test.sh runs it with CI=true; it needs
# root, and installs into the system): build them (packaging/deb.sh), no
# lintian error, install them with apt-get, then from the system paths
# alone (no prefix named) build tests/install/consumer with
# find_package(lockweave) and with pkg-config, run each (a guarded call
# against a private redis-server), run `man lockweave-gen` and
# lockweave-gen itself; purge them, and check that none of their files is
# left.  Fails at once if any of the packages is installed already.
#
# usage: run.sh BUILD_DIR WITH_REDIS
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
# Absolute: apt-get takes a .deb only by a path that starts with / or ./
mkdir -p "$1"
build=$(cd "$1" && pwd) with_redis=$2
work=$build/deb-test
pkgs=(liblockweave0 liblockweave-dev lockweave-tools)

step() { printf '\n== %s\n' "$*"; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

for p in "${pkgs[@]}"; do
  if installed "$p"; then
    echo "$p is installed already: this test would remove it" >&2
    exit 1
  fi
done
rm -rf "$work"
mkdir -p "$work"

step "packaging/deb.sh $build"
"$src/packaging/deb.sh" "$build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
debs=("$build"/deb/*.deb)
printf '%s\n' "${debs[@]}"

step "lintian"
lintian --fail-on error "${debs[@]}"

step "apt-get install"
purge() { DEBIAN_FRONTEND=noninteractive apt-get purge -y "${pkgs[@]}" >"$work/purge.log" 2>&1; }
trap 'purge || true' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${debs[@]}" \
  >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
for p in "${pkgs[@]}"; do installed "$p" || { echo "$p not installed" >&2; exit 1; }; done

# The installed files only: nothing from the source or build tree.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
step "CMake consumer (find_package, no prefix)"
cmake -S "$src/tests/install/consumer" -B "$work/consumer" >/dev/null
cmake --build "$work/consumer"
"$with_redis" "$work/consumer/consumer"
"$with_redis" "$work/consumer/consumer_static"

step "pkg-config consumer (no PKG_CONFIG_PATH)"
# shellcheck disable=SC2046  # the flags are meant to split
cc -std=c11 -Wall -Wextra -Werror -o "$work/consumer_pc" \
  "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs lockweave)
"$with_redis" "$work/consumer_pc"

step "man lockweave-gen, lockweave-gen --version"
man lockweave-gen >"$work/man.txt" 2>&1 || { cat "$work/man.txt"; exit 1; }
grep -q 'lockweave-gen' "$work/man.txt"
(cd / && lockweave-gen --version)

step "apt-get purge"
# What the packages installed, directories aside (shared ones stay).
for d in "${debs[@]}"; do
  dpkg-deb -c "$d" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }'
done >"$work/files"
purge || { cat "$work/purge.log"; exit 1; }
trap - EXIT
left=0
for p in "${pkgs[@]}"; do
  if dpkg-query -W "$p" >/dev/null 2>&1 && [[ -n $(dpkg-query -W -f='${Status}' "$p" | grep -v 'not-installed') ]]; then
    echo "$p still known to dpkg: $(dpkg-query -W -f='${Status}' "$p")" >&2
    left=1
  fi
done
while read -r f; do
  if [[ -e $f || -L $f ]]; then echo "left behind: $f" >&2; left=1; fi
done <"$work/files"
for d in /usr/include/lockweave /usr/lib/*/cmake/lockweave /usr/share/doc/liblockweave0 \
         /usr/share/doc/liblockweave-dev /usr/share/doc/lockweave-tools; do
  if [[ -e $d ]]; then echo "left behind: $d" >&2; left=1; fi
done
((left == 0))
rm -rf "$work"
step "Debian packages: ok"
