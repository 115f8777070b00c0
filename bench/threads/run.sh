#!/usr/bin/env bash
# bench/threads/run.sh [--quick] [--rounds N] [--procs P] [--threads T]
#                      [--keys K] [--retries "R..."]: lockweave against the
# hand-written hiredis lock, both with threads, in paired rounds.
#
# Workloads threads (P processes x T threads on one key; default 4 x 16) and
# threads-keys (the same on K keys, default 64, each section on a key picked
# at random): bench/lw_bench_driver.c (REDIS_LOCK functions woven by
# lockweave_generate; lockweave keeps one connection per thread) and
# bench/threads/hand_threads.c (the peer harness's hand-written lock, one
# hiredis connection per thread) at each retry interval of --retries
# (default 1 and 10 ms), and on one key the serial bound (bench/bound.c:
# the same sections back to back, no lock: the most any lock could reach).
# Like bench/paired.sh: one private redis-server,
# every implementation back to back, round after round, the order flipped
# each round; bench/paired_ratios.py gives each round's ratio of sections/s
# and of p99 against the hand-written lock at its best retry of that round
# (and against each retry), and their median.  Output in build/bench-threads/: threads.jsonl,
# ratios.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-threads
rounds=5 iters=200 procs=4 threads=16 keys=64 retries="1 10"
while (($#)); do
  case $1 in
  --quick) rounds=2 iters=40 ;;
  --rounds) rounds=$2; shift ;;
  --procs) procs=$2; shift ;;
  --threads) threads=$2; shift ;;
  --keys) keys=$2; shift ;;
  --retries) retries=$2; shift ;;
  *)
    echo "usage: $0 [--quick] [--rounds N] [--procs P] [--threads T]" \
      "[--keys K] [--retries \"R...\"]" >&2
    exit 2
    ;;
  esac
  shift
done

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server redis-tools pkg-config

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver hand_threads lw_bench_bound
driver=$out/cmake/bench/lw_bench_driver
hand=$out/cmake/bench/threads/hand_threads
bound=$out/cmake/bench/lw_bench_bound

tmp=$(mktemp -d /tmp/lw-bench-threads.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT
bench_redis_start "$tmp"
port=$bench_port

jsonl=$out/threads.jsonl
one() { # round workload command...: one bounded run, its line with the round
  local r=$1 w=$2 line
  shift 2
  redis-cli -p "$port" FLUSHALL >/dev/null
  line=$(timeout -k 5 300 "$@" --workload "$w" --port "$port" \
    --procs "$procs" --threads "$threads" --keys "$keys" --iters "$iters" \
    --ttl-ms 10000 --wait-ms 10000 | grep '^{')
  echo "$line" | sed "s/}\$/,\"round\":$r}/" | tee -a "$jsonl"
}

: >"$jsonl"
for r in $(seq "$rounds"); do
  order=(lw hand bound)
  ((r % 2 == 0)) && order=(bound hand lw)
  for w in threads threads-keys; do
    for impl in "${order[@]}"; do
      case $impl in
      lw) LOCKWEAVE_LOG=error one "$r" $w "$driver" ;;
      hand)
        for retry in $retries; do
          one "$r" $w "$hand" --retry-ms "$retry"
        done
        ;;
      bound) [[ $w == threads ]] && one "$r" $w "$bound" ;;
      esac
    done
  done
  echo "threads: round $r of $rounds done" >&2
done

targets=(--target "threads=ops >= 3.00, p99 <= 0.50"
  --target "threads-keys=ops >= 1.00")
{
  echo "against the hand-written lock at its best retry of each round:"
  python3 "$root/bench/paired_ratios.py" "$jsonl" "${targets[@]}"
  echo
  echo "against each retry:"
  python3 "$root/bench/paired_ratios.py" "$jsonl" --each-retry "${targets[@]}"
} | tee "$out/ratios.txt"
