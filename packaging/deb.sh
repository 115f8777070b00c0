#!/usr/bin/env bash
# packaging/deb.sh [BUILD_DIR]: build lockweave's Debian packages
# (liblockweave<N>, liblockweave-dev, lockweave-tools) into BUILD_DIR/deb
# (default build/deb/deb), then print their paths.  Extra CMake options
# come from $LW_DEB_CMAKE_ARGS (say -DLW_LLVM_ROOT=/usr/lib/llvm-16).
# Install them with: sudo apt-get install ./BUILD_DIR/deb/*lockweave*.deb
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build/deb}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# shellcheck disable=SC2086  # the extra options are meant to split
cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX=/usr -DLW_BUILD_TESTS=OFF -DLW_BUILD_SAMPLES=OFF \
  -DLW_BUILD_BENCH=OFF ${LW_DEB_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --parallel "${LW_TEST_JOBS:-2}"
rm -rf "$build/deb"
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/deb/*.deb
