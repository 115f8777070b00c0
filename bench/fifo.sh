#!/usr/bin/env bash
# bench/fifo.sh [--quick] [--rounds N]: what fairness costs, and what each of
# lockweave's guarantees costs on top of it.
#
# The ladder, in paired rounds on one private redis-server (order flipped
# each round): the hand-written hiredis lock (the peer harness's, 1 ms
# retry; threads-keys: bench/threads/hand_threads.c at 10 ms, its best
# there), the FIFO floor (bench/fifo.c: the least Redis work a
# first-come-first-served lock can do, one connection per waiter), the
# floor with lockweave's mechanisms added one by one — alive (a dead
# waiter is skipped), places (a waiter keeps its place across polls and
# knows a late grant), receipts (a retried release knows its own hand-off),
# fences — and lockweave itself.  Workloads contended and spread (8
# processes) and threads-keys (4 x 16 threads, 64 keys).  Per workload and
# rung: the median ratio of sections/s and of p99 to the hand-written lock,
# and per section redis-server's CPU (user + system, /proc) and the
# commands it ran (INFO commandstats, a script's own calls included), the
# warm-up's included.  Output in build/bench-fifo/: fifo.jsonl, ladder.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build/bench-fifo
rounds=5 c_iters=1000 s_iters=3000 t_iters=200
while (($#)); do
  case $1 in
  --quick) rounds=2 c_iters=300 s_iters=800 t_iters=50 ;;
  --rounds) rounds=$2; shift ;;
  *)
    echo "usage: $0 [--quick] [--rounds N]" >&2
    exit 2
    ;;
  esac
  shift
done

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server redis-tools pkg-config

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver lw_bench_fifo hand_threads
driver=$out/cmake/bench/lw_bench_driver
fifo=$out/cmake/bench/lw_bench_fifo
hand_threads=$out/cmake/bench/threads/hand_threads

bench_peers_copy "$out/peers" c/hiredis_lock.c
# As the harness's setup.sh builds it.
gcc -O2 -Wall -Wextra -o "$out/peers/c/hiredis_lock" \
  "$out/peers/c/hiredis_lock.c" -lhiredis
hand=$out/peers/c/hiredis_lock

tmp=$(mktemp -d /tmp/lw-bench-fifo.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT
bench_redis_start "$tmp"
port=$bench_port

jsonl=$out/fifo.jsonl
# One run on a flushed server: the driver's line with the round, Redis's CPU
# and commands per section added (warm-up sections included: 50 per worker).
one() { # round workload command...
  local r=$1 w=$2 n=$c_iters size=(--procs 8) t0 t1
  shift 2
  [[ $w == spread ]] && n=$s_iters
  [[ $w == threads-keys ]] && n=$t_iters size=(--procs 4 --threads 16 --keys 64)
  redis-cli -p "$port" FLUSHALL >/dev/null
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  t0=$(bench_redis_ticks)
  timeout -k 5 300 "$@" --workload "$w" --port "$port" "${size[@]}" \
    --iters "$n" --ttl-ms 10000 --wait-ms 10000 | grep '^{' >"$tmp/line"
  t1=$(bench_redis_ticks)
  # shellcheck disable=SC2119 # no names: every command the driver ran
  python3 - "$tmp/line" "$r" "$((t1 - t0))" "$(getconf CLK_TCK)" \
    "$(bench_redis_calls)" <<'PY' >>"$jsonl"
import json, sys
d = json.load(open(sys.argv[1]))
r, ticks, hz, calls = map(int, sys.argv[2:6])
d["round"] = r
d["redis_cpu_us"] = ticks * 1e6 / hz / d["sections"]
d["commands"] = calls / d["sections"]
print(json.dumps(d))
PY
}

# Each rung's --adds, cumulative (commas are fifo.c's list separator).
# shellcheck disable=SC2054
rungs=(hand floor alive alive,places alive,places,receipts
  alive,places,receipts,fences lw)
: >"$jsonl"
for r in $(seq "$rounds"); do
  order=("${rungs[@]}")
  if ((r % 2 == 0)); then
    order=()
    for ((i = ${#rungs[@]} - 1; i >= 0; i--)); do order+=("${rungs[i]}"); done
  fi
  for w in contended spread threads-keys; do
    for rung in "${order[@]}"; do
      case $rung in
      hand)
        if [[ $w == threads-keys ]]; then
          one "$r" $w "$hand_threads" --retry-ms 10
        else
          one "$r" $w "$hand" --retry-ms 1
        fi
        ;;
      lw) LOCKWEAVE_LOG=error one "$r" $w "$driver" ;;
      floor) one "$r" $w "$fifo" ;;
      *) one "$r" $w "$fifo" --adds "$rung" ;;
      esac
    done
  done
  echo "fifo: round $r of $rounds done" >&2
done

python3 - "$jsonl" <<'PY' | tee "$out/ladder.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = "hiredis-handwritten"
by = {(r["round"], r["impl"], r["workload"]): r for r in rows}
rounds = sorted({r["round"] for r in rows})
impls = list(dict.fromkeys(r["impl"] for r in rows if r["round"] == 1))
print(f"paired rounds: {len(rounds)}; ratios to the hand-written lock "
      "(median, range); Redis CPU and commands per section (median)")
print(f"{'workload':13} {'lock':42} {'ops/s':>17} {'p99':>5} "
      f"{'redis µs':>8} {'cmds':>5}")
for w in ("contended", "spread", "threads-keys"):
    for i in impls:
        ops, p99, cpu, cmds = [], [], [], []
        for rd in rounds:
            a, b = by.get((rd, i, w)), by.get((rd, ref, w))
            if a and b:
                ops.append(a["ops_per_s"] / b["ops_per_s"])
                p99.append(a["p99_us"] / b["p99_us"])
                cpu.append(a["redis_cpu_us"])
                cmds.append(a["commands"])
        if ops:
            m = statistics.median
            print(f"{w:13} {i:42} {m(ops):5.2f} {min(ops):5.2f}-{max(ops):<5.2f} "
                  f"{m(p99):5.2f} {m(cpu):8.0f} {m(cmds):5.1f}")
print(f"violations (all runs): {sum(r['violations'] for r in rows)}; "
      f"failed acquisitions: {sum(r['failed'] for r in rows)}")
PY
