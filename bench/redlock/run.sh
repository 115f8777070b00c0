#!/usr/bin/env bash
# bench/redlock/run.sh [--quick] [--latency MS]: lockweave with 1, 3 and 5
# masters.
#
# The same driver as bench/run.sh (bench/lw_bench_driver.c, REDIS_LOCK
# functions woven by lockweave_generate), pointed at a comma-separated
# LOCKWEAVE_REDIS_URL of 3 or 5 private redis-servers (Redlock; 1 is the
# single-server mode for comparison).  Uncontended: one process, one key;
# contended: 4 processes, one key, a read-modify-write counter that counts
# violations.  Servers are started here on free loopback ports and stopped by
# their PIDs.  --latency MS puts each server behind its own lw_delay_proxy
# (bench/delay_proxy.c), which holds every byte MS in each direction (a round
# trip of 2 x MS, as across hosts): what a parallel round costs against one
# server.  Output:
# build/bench-redlock/redlock.jsonl and a table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-redlock
iters=20000
citers=500
latency=0
while (($#)); do
  case $1 in
  --quick) iters=3000 citers=100 ;;
  --latency) latency=$2; shift ;;
  *) echo "usage: $0 [--quick] [--latency MS]" >&2; exit 2 ;;
  esac
  shift
done
((latency > 0)) && { iters=$((iters / 20)); citers=$((citers / 10)); }

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server pkg-config

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver lw_delay_proxy
driver=$out/cmake/bench/lw_bench_driver
proxy=$out/cmake/bench/lw_delay_proxy

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

ports=() lockports=()
for i in 1 2 3 4 5; do
  port=$(bench_free_port)
  mkdir -p "$tmp/$i"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$tmp/$i" >"$tmp/$i/log" 2>&1 &
  pids+=($!)
  ports+=("$port")
  lockport=$port
  if ((latency > 0)); then
    lockport=$(bench_free_port)
    "$proxy" "$lockport" "$port" "$((latency * 1000))" &
    pids+=($!)
  fi
  lockports+=("$lockport")
done
for port in "${lockports[@]}"; do # the servers, through their proxies
  bench_wait_ping "$port"
done

url_of() { # url_of N: the first N servers as a LOCKWEAVE_REDIS_URL
  local u=() i
  for ((i = 0; i < $1; i++)); do u+=("redis://127.0.0.1:${lockports[$i]}"); done
  (IFS=,; echo "${u[*]}")
}

: >"$out/redlock.jsonl"
for n in 1 3 5; do
  for w in uncontended contended; do
    it=$iters procs=1
    [[ $w == contended ]] && { it=$citers; procs=4; }
    LW_BENCH_LOCK_URL=$(url_of "$n") LOCKWEAVE_LOG=error "$driver" \
      --workload "$w" --port "${ports[0]}" --procs "$procs" --iters "$it" \
      --impl "lockweave-$n" >>"$out/redlock.jsonl"
  done
done

python3 - "$out/redlock.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'masters':>7} {'workload':<12} {'procs':>5} {'sections':>8} "
      f"{'ops/s':>7} {'p50_us':>7} {'p99_us':>7} {'violations':>10} {'failed':>6}")
for r in rows:
    print(f"{r['impl'].split('-')[1]:>7} {r['workload']:<12} {r['procs']:>5} "
          f"{r['sections']:>8} {r['ops_per_s']:>7.0f} {r['p50_us']:>7} "
          f"{r['p99_us']:>7} {r['violations']:>10} {r['failed']:>6}")
viol = sum(r["violations"] for r in rows)
print(f"violations (all runs): {viol}")
sys.exit(1 if viol else 0)
PY
