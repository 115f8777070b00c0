#!/usr/bin/env bash
# ./test.sh: install what is missing, build lockweave with warnings as
# errors, run the whole test suite (every test starts its own redis-server).
# With CI=true, more passes after it (docs/testing.md):
#   build/libclang16  lockweave-gen built with libclang 16: the generator tests
#   build/deb         the Debian packages, installed, used and purged
#   build/sanitize    ASan + UBSan: every test but the install test and runtime_fork
#   build/fuzz        every libFuzzer target for LW_CI_FUZZ_SECONDS (20) each
#   build/tsan        ThreadSanitizer (clang): the runtime, cluster, ctl and fuzz-corpus tests
#   build/memcheck    valgrind memcheck: the same and the unit tests, but for the
#                     few left out below
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

# libclang-rt-14-dev: clang's sanitizer runtimes and libFuzzer.  groff-base:
# the install test renders the man pages.  python3-prometheus-client: the
# metrics test reads lw_metrics_write() with its text-format parser.
# redis-sentinel: tests/sentinel.
.ci/ensure-packages.sh cmake ninja-build gcc g++ clang-14 libclang-dev \
  libclang-rt-14-dev libhiredis-dev redis-server redis-sentinel pkg-config \
  libmicrohttpd-dev libsqlite3-dev valgrind groff-base libssl-dev openssl \
  libevent-dev libuv1-dev python3-prometheus-client

jobs=${LW_TEST_JOBS:-2}
# Tests wait on their servers, and on the faults they stage, far more than
# they compute: at twice the build's jobs the main pass keeps a 2-core
# machine about a third busy (valgrind's pass: three quarters), and the
# passes take half the time.  No test may depend on being alone.
test_jobs=${LW_CTEST_JOBS:-$((2 * jobs))}
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
  (cd "$dir" && ctest --output-on-failure -j"$test_jobs" "${ctest_args[@]}")
}

# libclang 14, Debian 12's default, named: a machine that also has a newer
# libclang-N-dev (the CI pass below installs 16) would otherwise build with
# the newest.
build_and_test build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLW_LLVM_ROOT=/usr/lib/llvm-14 --

if [[ ${CI:-} == true ]]; then
  # The generator against another libclang than 14 (README.md lists those
  # supported): its goldens, diagnostics and safety cases must not change.
  .ci/ensure-packages.sh libclang-16-dev
  build_and_test build/libclang16 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLW_LLVM_ROOT=/usr/lib/llvm-16 -DLW_BUILD_SAMPLES=OFF -DLW_BUILD_BENCH=OFF \
    -- -L gen

  # The Debian packages: built, checked by lintian, installed into this
  # system, used from its paths, purged (tests/deb/run.sh; needs root).
  .ci/ensure-packages.sh lintian man-db
  tests/deb/run.sh build/deb build/test/tests/harness/lw_with_redis

  # Left out: the install test (its consumer projects are not built with the
  # sanitizers the installed library would need), and runtime_fork: ASan's
  # allocator (GCC 12 and clang 14 alike) is not fork-safe — a child forked
  # while another thread is inside malloc deadlocks on the allocator's lock
  # in its first allocation, which glibc's malloc prevents with its own
  # atfork handlers.  runtime_fork (and runtime_tls_fork, the same over
  # TLS) run in the normal build above.
  build_and_test build/sanitize -DCMAKE_BUILD_TYPE=Debug \
    -DLW_SANITIZE=address,undefined -- -LE install -E '^runtime_(tls_)?fork$'

  # Each target replays fuzz/regress/ first, then fuzzes from a scratch copy
  # of its seed corpus; any crash, leak or timeout fails (fuzz/run.sh).
  fuzz/run.sh "${LW_CI_FUZZ_SECONDS:-20}"

  # ThreadSanitizer: the watchdog thread against the guarded threads.  The
  # runtime tests, and the corpus replays of the URL and reply fuzz targets
  # (the reply one drives a guarded thread and the watchdog with hostile
  # replies).  die_after_fork=0: runtime_fork and runtime_sigkill fork a
  # multi-threaded process and use the library in the child, which is what
  # they test; TSan's default would kill the child.
  # The library's atfork handlers make that safe, and TSan still checks the
  # child.
  TSAN_OPTIONS="die_after_fork=0 halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    build_and_test build/tsan -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLW_SANITIZE=thread -DLW_BUILD_GEN=ON \
    -DLW_BUILD_SAMPLES=OFF -DLW_BUILD_BENCH=OFF -- -L '^(runtime|fuzz)$'

  # valgrind memcheck over the runtime and unit tests and the URL and reply
  # corpus replays, in an unsanitized build.  .ci/valgrind-memcheck.sh fails a
  # test on any memory error, definite or indirect leak (also in forked
  # children) or crash; "possibly lost" is not an error (thread stacks and
  # TLS show up as that), and the tests' own timing checks are left to the
  # passes above (valgrind slows them 20-50x).  .ci/valgrind.supp names the
  # per-thread state glibc's resolver and OpenSSL keep until a thread ends
  # (a forked child inherits it from threads it does not have, and valgrind
  # does not scan thread-local storage); nothing else is suppressed.  The
  # redis-servers the tests start run outside valgrind (no
  # --trace-children).  Left out:
  #   runtime_security  re-executes itself through /proc/self/exe, which
  #                     under valgrind is valgrind's own loader ("You
  #                     cannot run '/proc/self/exe' directly");
  #   cluster_slots     checks 2000 keys against a 6-node cluster: 6 s
  #                     natively, 110 s under valgrind, past its 60 s
  #                     timeout (clean when run by hand);
  #   runtime_keyspace  locks 100 000 keys: 8 s natively, many minutes
  #                     under valgrind (the same paths run in the other
  #                     runtime tests).
  #   runtime_exit,     200 children that each exit while 8 threads
  #   runtime_tls_exit  connect: minutes under valgrind, and what they
  #                     check (no crash at exit) is the other passes'.
  # The lockweave-ctl tests (labels ctl and runtime) run the command as a
  # child, which the test's valgrind does not follow: LW_CTL_MEMCHECK=1
  # has them run it under valgrind too, an error in it aborting the test.
  # ctest warns about a missing DartConfiguration.tcl (no dashboard):
  # harmless.  On failure the valgrind reports are printed below.
  memcheck_log=build/memcheck/Testing/Temporary
  rm -rf "$memcheck_log"
  LW_CTL_MEMCHECK=1 build_and_test build/memcheck -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLW_BUILD_GEN=ON -DLW_BUILD_SAMPLES=OFF -DLW_BUILD_BENCH=OFF -- \
    -L '^(runtime|unit|fuzz)$' \
    -E '^(runtime_security|runtime_keyspace|runtime_(tls_)?exit|cluster_slots|fuzz_annot_corpus|fuzz_keytmpl_corpus)$' \
    -T memcheck --overwrite MemoryCheckCommand="$PWD/.ci/valgrind-memcheck.sh" \
    --overwrite "MemoryCheckCommandOptions=--error-exitcode=97 \
--leak-check=full --errors-for-leak-kinds=definite,indirect \
--show-leak-kinds=definite,indirect --num-callers=40 \
--suppressions=$PWD/.ci/valgrind.supp" || {
    grep -lE 'ERROR SUMMARY: [1-9]' "$memcheck_log"/MemoryChecker.*.log |
      xargs -r cat
    exit 1
  }
fi
echo "== all tests passed"
