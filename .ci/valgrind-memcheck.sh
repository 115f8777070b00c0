#!/usr/bin/env bash
# valgrind as ctest's MemoryCheckCommand (test.sh's memcheck pass): ctest
# calls it with valgrind's options, --log-file=<log> and the test command.
#
# A test fails here for what valgrind finds — a memory error or a definite
# or indirect leak in the test or any process it forked (all write to the
# one log), or a crash — and not for its own verdict: the runtime tests
# assert latencies and waits (a lock handed over within N ms) that a 20-50x
# slowdown breaks, and the normal, ASan and TSan passes judge those.  Such
# a result is still printed.
set -uo pipefail

log=
for a in "$@"; do
  [[ $a == --log-file=* ]] && log=${a#--log-file=}
done
valgrind "$@"
rc=$?
if [[ -n $log ]] && grep -qE 'ERROR SUMMARY: [1-9]' "$log"* 2>/dev/null; then
  echo "valgrind-memcheck: memory errors or leaks, see $log" >&2
  exit 97
fi
if ((rc > 128)); then
  exit "$rc" # killed by a signal: a crash is a finding
fi
if ((rc != 0)); then
  echo "valgrind-memcheck: the test itself failed (exit $rc) under valgrind;" \
    "memory is clean, the other passes judge its checks" >&2
fi
exit 0
