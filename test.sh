#!/usr/bin/env bash
# ./test.sh: install what is missing, build lockweave with warnings as
# errors, run the whole test suite (every test starts its own redis-server).
# With CI=true, a second build with AddressSanitizer + UBSan runs the runtime
# and generator tests again.  Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev redis-server pkg-config libmicrohttpd-dev libsqlite3-dev \
  valgrind

jobs=${LW_TEST_JOBS:-2}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# build_and_test DIR [CMAKE_ARGS...] -- [CTEST_ARGS...]
build_and_test() {
  local dir=$1
  shift
  local cmake_args=() ctest_args=()
  while (($#)) && [[ $1 != -- ]]; do cmake_args+=("$1"); shift; done
  (($#)) && shift
  ctest_args=("$@")
  echo "== configure $dir ${cmake_args[*]}"
  cmake -S . -B "$dir" "${generator[@]}" -DLW_WERROR=ON "${cmake_args[@]}"
  echo "== build $dir"
  cmake --build "$dir" --parallel "$jobs"
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${ctest_args[@]}")
}

build_and_test build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo --

if [[ ${CI:-} == true ]]; then
  # Left out: the install test (its consumer projects are not built with the
  # sanitizers the installed library would need), and runtime_fork: ASan's
  # allocator (GCC 12 and clang 14 alike) is not fork-safe — a child forked
  # while another thread is inside malloc deadlocks on the allocator's lock
  # in its first allocation, which glibc's malloc prevents with its own
  # atfork handlers.  runtime_fork runs in the normal build above.
  build_and_test build/sanitize -DCMAKE_BUILD_TYPE=Debug \
    -DLW_SANITIZE=address,undefined -- -LE install -E '^runtime_fork$'
fi
echo "== all tests passed"
