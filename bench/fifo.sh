#!/usr/bin/env bash
# bench/fifo.sh [--quick] [--rounds N]: what fairness costs, and what each of
# lockweave's guarantees costs on top of it.
#
# The ladder, in paired rounds on one private redis-server (order flipped
# each round): the hand-written hiredis lock (the peer harness's, 1 ms
# retry; threads-keys: bench/threads/hand_threads.c at 10 ms, its best
# there), the FIFO floor (bench/fifo.c: the least Redis work a
# first-come-first-served lock can do), the floor with lockweave's
# mechanisms added one by one — alive (a dead waiter is skipped), places (a
# waiter keeps its place across polls and knows a late grant), receipts (a
# retried release knows its own hand-off), fences — and lockweave itself.
# Workloads contended and spread (8 processes) and threads-keys (4 x 16
# threads, 64 keys).  Per workload and rung: the median ratio of sections/s
# and of p99 to the hand-written lock, and per section redis-server's CPU
# (user + system, /proc) and the commands it ran (INFO commandstats, a
# script's own calls included).  Output in build/bench-fifo/: fifo.jsonl,
# ladder.txt.
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

cmake -S . -B "$out/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLW_BUILD_TESTS=OFF -DLW_BUILD_SAMPLES=OFF >/dev/null
cmake --build "$out/cmake" --target lw_bench_driver lw_bench_fifo \
  hand_threads >/dev/null
driver=$out/cmake/bench/lw_bench_driver
fifo=$out/cmake/bench/lw_bench_fifo
hand_threads=$out/cmake/bench/threads/hand_threads

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
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
# and commands per section added.
one() { # round workload command...
  local r=$1 w=$2 n=$c_iters size=(--procs 8) t0 t1
  shift 2
  [[ $w == spread ]] && n=$s_iters
  [[ $w == threads-keys ]] && n=$t_iters size=(--procs 4 --threads 16 --keys 64)
  redis-cli -p "$port" FLUSHALL >/dev/null
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  t0=$(awk '{print $14 + $15}' "/proc/$bench_rpid/stat")
  timeout -k 5 300 "$@" --workload "$w" --port "$port" "${size[@]}" \
    --iters "$n" --ttl-ms 10000 --wait-ms 10000 | grep '^{' >"$tmp/line"
  t1=$(awk '{print $14 + $15}' "/proc/$bench_rpid/stat")
  redis-cli -p "$port" INFO commandstats | tr -d '\r' >"$tmp/cmdstats"
  python3 - "$tmp/line" "$tmp/cmdstats" "$r" "$((t1 - t0))" \
    "$(getconf CLK_TCK)" <<'PY' | tee -a "$jsonl"
import json, sys
d = json.load(open(sys.argv[1]))
calls = 0
for line in open(sys.argv[2]):
    name, _, rest = line.partition(":")
    if not name.startswith("cmdstat_") or name[8:] in (
            "flushall", "config|resetstat", "info", "script|load"):
        continue
    calls += int(dict(kv.split("=") for kv in rest.strip().split(","))["calls"])
d["round"] = int(sys.argv[3])
d["redis_cpu_us"] = int(sys.argv[4]) * 1e6 / int(sys.argv[5]) / d["sections"]
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
      esac >/dev/null
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
print(f"violations (all runs): {sum(r['violations'] for r in rows)}")
PY
