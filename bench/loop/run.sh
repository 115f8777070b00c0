#!/usr/bin/env bash
# bench/loop/run.sh [--quick] [--rounds N] [--inflight C] [--built DIR]
#                   [--sections "CONTENDED SPREAD"]:
# lockweave on an event loop against the peer harness's event-loop locks,
# in paired rounds.
#
# One process with C requests in flight (default 64), on one private
# redis-server, workloads contended (one key) and spread (a key picked at
# random among 1000 for each section), 15 000 and 60 000 sections a run
# (--quick 1000 and 4000; --sections sets them: Node's rate still grows
# over the first few thousand sections, so short runs flatter lockweave);
# each section the harness's non-atomic read-modify-write of a counter:
#   lockweave          bench/loop/lw_loop_driver: one libevent loop,
#                      lw_acquire_async() / lw_release_async(), the body on
#                      hiredis's async API (never blocking the loop)
#   node-redlock,      the harness's Node drivers (../shared/peers or
#   redis-semaphore    $LW_PEERS_DIR, a private copy), --procs 1 --inflight C,
#                      at their default retry and at 1 ms (the best of the
#                      round counts)
#   lockweave-threads  bench/lw_bench_driver, thread per request: 1 process
#                      x C threads, workloads threads (one key: bench:c) and
#                      threads-keys --keys 1000 (bench:s:K, as spread),
#                      labelled contended and spread here
#   serial-bound       contended's ceiling: bench/bound.c, the sections back
#                      to back with no lock (--workload threads: in one
#                      process nothing crosses Redis to pass the key)
#   no-lock            spread's ceiling: the loop driver with --no-lock
# Each run starts after FLUSHALL and CONFIG RESETSTAT and records, beside
# its JSON line, redis-server's CPU (bench_redis_ticks), the commands and
# scripts Redis ran (bench_redis_calls) and the client's CPU and context
# switches (/usr/bin/time: the driver's processes, loop and worker threads
# together).  A calibration run of each (C sections, round 0) measures what
# a run costs besides its sections: start-up, warm-up, the counters' reset
# and sum; per-section figures are net of it.
# Like bench/paired.sh, the order flips every round.  It prints the bounds
# and the costs per section, then bench/paired_ratios.py's ratios
# (lockweave / each other: sections/s and p99, median and range over the
# rounds) with the targets.  Output in build/bench-loop/: loop.jsonl
# (rounds), calibration.jsonl, costs.txt, ratios.txt.  The drivers are
# built (Release, bench_build) in build/bench-loop/cmake, or taken as built
# in the CMake build folder DIR (--built).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-loop
rounds=5 inflight=64 c_iters=15000 s_iters=60000 limit=300 built=
while (($#)); do
  case $1 in
  --quick) rounds=2 c_iters=1000 s_iters=4000 limit=120 ;;
  --rounds) rounds=$2; shift ;;
  --inflight) inflight=$2; shift ;;
  --built) built=$(cd "$2" && pwd); shift ;;
  --sections) read -r c_iters s_iters <<<"$2"; shift ;;
  *)
    echo "usage: $0 [--quick] [--rounds N] [--inflight C] [--built DIR]" \
      "[--sections \"CONTENDED SPREAD\"]" >&2
    exit 2
    ;;
  esac
  shift
done

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev libevent-dev redis-server redis-tools \
  pkg-config time
# (the harness's setup.sh installs its own: node, npm packages)

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
if [[ -z $built ]]; then
  built=$out/cmake
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
  bench_build "$built" lw_loop_driver lw_bench_driver lw_bench_bound
fi
loop=$built/bench/loop/lw_loop_driver
threads=$built/bench/lw_bench_driver
bound=$built/bench/lw_bench_bound

bench_peers_copy "$out/peers" setup.sh
bash "$out/peers/setup.sh" >&2
peers=$out/peers

tmp=$(mktemp -d /tmp/lw-bench-loop.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT
bench_redis_start "$tmp"
port=$bench_port

impls=( # name|retries ("-": none)|command
  "lockweave|-|env LOCKWEAVE_LOG=error $loop --procs 1 --inflight $inflight"
  "node-redlock|200 1|node $peers/node/redlock_driver.js --procs 1 --inflight $inflight"
  "redis-semaphore|10 1|node $peers/node/semaphore_driver.js --procs 1 --inflight $inflight"
  "lockweave-threads|-|env LOCKWEAVE_LOG=error $threads --impl lockweave-threads --procs 1 --threads $inflight"
  "bound|-|-"
)

failures=0
# One bounded run: its JSON line, workload relabelled, with the round and
# the costs of the run added, appended to $1.
one() { # file round workload sections command...
  local file=$1 r=$2 w=$3 n=$4 line rc=0 t0 t1 calls scripts
  shift 4
  redis-cli -p "$port" FLUSHALL >/dev/null
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  t0=$(bench_redis_ticks)
  line=$(timeout -k 5 "$limit" /usr/bin/time -f '%U %S %w %c' \
    -o "$tmp/time" "$@" --port "$port" --iters "$n" --ttl-ms 10000 \
    --wait-ms 10000 2>"$tmp/err" | grep '^{') || rc=$?
  t1=$(bench_redis_ticks)
  if ((rc != 0)) || [[ -z $line ]]; then
    failures=$((failures + 1))
    echo "FAILED (exit $rc): $w $*" >&2
    tail -n 5 "$tmp/err" >&2
    return 0
  fi
  calls=$(bench_redis_calls)
  scripts=$(bench_redis_calls eval evalsha)
  python3 - "$line" "$w" "$r" "$((t1 - t0))" "$(getconf CLK_TCK)" \
    "$calls" "$scripts" "$tmp/time" <<'PY' | tee -a "$file"
import json, sys
row = json.loads(sys.argv[1])
row["workload"], row["round"] = sys.argv[2], int(sys.argv[3])
ticks, hz, calls, scripts = map(int, sys.argv[4:8])
user, sys_, vol, invol = map(float, open(sys.argv[8]).read().split())
row.update(redis_cpu_s=ticks / hz, calls=calls, scripts=scripts,
           client_cpu_s=user + sys_, switches=int(vol + invol))
print(json.dumps(row))
PY
}

# Every implementation once on workload w: $1 file, $2 round, $3 w, $4
# sections in all (per thread for the threaded driver), $5.. the order.
run_all() {
  local file=$1 r=$2 w=$3 n=$4 name retries cmd entry impl retry tw
  shift 4
  for impl in "$@"; do
    for entry in "${impls[@]}"; do
      IFS='|' read -r name retries cmd <<<"$entry"
      [[ $name == "$impl" ]] || continue
      case $name in
      lockweave)
        # shellcheck disable=SC2086 # cmd is split on spaces on purpose
        one "$file" "$r" "$w" "$n" $cmd --workload "$w"
        ;;
      node-*|redis-*)
        for retry in $retries; do
          # shellcheck disable=SC2086
          one "$file" "$r" "$w" "$n" $cmd --workload "$w" --retry-ms "$retry"
        done
        ;;
      lockweave-threads)
        tw=threads
        [[ $w == spread ]] && tw="threads-keys --keys 1000"
        # shellcheck disable=SC2086
        one "$file" "$r" "$w" "$(((n + inflight - 1) / inflight))" $cmd \
          --workload $tw
        ;;
      bound)
        if [[ $w == contended ]]; then
          one "$file" "$r" "$w" "$n" "$bound" --workload threads --procs 1 \
            --threads 1
        else
          # shellcheck disable=SC2086
          one "$file" "$r" "$w" "$n" "$loop" --no-lock --procs 1 \
            --inflight "$inflight" --workload "$w"
        fi
        ;;
      esac
    done
  done
}

jsonl=$out/loop.jsonl calib=$out/calibration.jsonl
: >"$jsonl"
: >"$calib"
order=(lockweave node-redlock redis-semaphore lockweave-threads bound)
echo "calibration: $inflight sections of each (start-up, warm-up, counters)" >&2
for w in contended spread; do
  run_all "$calib" 0 "$w" "$inflight" "${order[@]}" >/dev/null
done
for r in $(seq "$rounds"); do
  order=(lockweave node-redlock redis-semaphore lockweave-threads bound)
  ((r % 2 == 0)) && order=(bound lockweave-threads redis-semaphore node-redlock lockweave)
  for w in contended spread; do
    n=$c_iters
    [[ $w == spread ]] && n=$s_iters
    run_all "$jsonl" "$r" "$w" "$n" "${order[@]}"
  done
  echo "loop: round $r of $rounds done" >&2
done

# Bounds and costs per section, net of the calibration run, medians over
# the rounds.
python3 - "$jsonl" "$calib" <<'PY' | tee "$out/costs.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cal = {}
for l in open(sys.argv[2]):
    c = json.loads(l)
    cal[(c["impl"], c["workload"], c["retry_ms"])] = c
def label(r):
    if r["impl"].startswith(("node-", "redis-")):
        return f"{r['impl']}@{r['retry_ms']}ms"
    return r["impl"]
def med(v):
    return statistics.median(v) if v else float("nan")
def span(v):
    return f"{med(v):8.0f} {min(v):7.0f}-{max(v):<7.0f}"
print("bounds (medians over the rounds, range):")
for w, impl, what in [("contended", "serial-bound", "one key, one process: "
                       "the sections back to back, no lock"),
                      ("spread", "no-lock", "1000 keys: the sections in flight, "
                       "no lock")]:
    v = [r["ops_per_s"] for r in rows if r["workload"] == w and r["impl"] == impl]
    if v:
        print(f"  {w:<10} {impl:<13} {span(v)} sections/s  ({what})")
print()
print("per section, net of each driver's calibration run (start-up, warm-up, "
      "counters), medians over the rounds")
print("%-10s %-24s %8s %8s %8s %7s %8s %9s %9s %9s" % ("workload", "impl",
      "ops/s", "p99_us", "redis_us", "cmds", "scripts", "client_us",
      "switches", "cpu_bound"))
for w in ["contended", "spread"]:
    seen = []
    for r in rows:
        if r["workload"] == w and label(r) not in seen:
            seen.append(label(r))
    for lab in seen:
        sel = [r for r in rows if r["workload"] == w and label(r) == lab]
        per = {k: [] for k in ("redis", "cmds", "scripts", "client", "sw")}
        for r in sel:
            c = cal.get((r["impl"], w, r["retry_ms"]))
            n = r["sections"] - (c["sections"] if c else 0)
            if n <= 0:
                continue
            sub = lambda k: r[k] - (c[k] if c else 0)
            per["redis"].append(sub("redis_cpu_s") * 1e6 / n)
            per["cmds"].append(sub("calls") / n)
            per["scripts"].append(sub("scripts") / n)
            per["client"].append(sub("client_cpu_s") * 1e6 / n)
            per["sw"].append(sub("switches") / n)
        m = {k: med(v) for k, v in per.items()}
        cpu = m["redis"] + m["client"]
        # Two cores for Redis and the client together: the most sections/s
        # their CPU per section allows (Redis alone: 1e6 / redis_us).
        bound = 2e6 / cpu if cpu > 0 else float("nan")
        print("%-10s %-24s %8.0f %8.0f %8.1f %7.2f %8.2f %9.1f %9.2f %9.0f" % (
            w, lab, med([r["ops_per_s"] for r in sel]),
            med([r["p99_us"] for r in sel]), m["redis"], m["cmds"],
            m["scripts"], m["client"], m["sw"], bound))
PY
echo
targets=(
  --target "contended/node-redlock=ops >= 3.00, p99 <= 0.50"
  --target "contended/redis-semaphore=ops >= 2.00, p99 <= 0.50"
  --target "spread/node-redlock=ops >= 3.00, p99 <= 0.50"
  --target "spread/redis-semaphore=ops >= 2.00, p99 <= 0.50"
)
{
  echo "against each peer at its best retry of each round:"
  python3 "$root/bench/paired_ratios.py" "$jsonl" "${targets[@]}"
  echo
  echo "against each retry:"
  python3 "$root/bench/paired_ratios.py" "$jsonl" --each-retry "${targets[@]}"
} | tee "$out/ratios.txt"
if ((failures)); then
  echo "loop: $failures runs failed" >&2
  exit 1
fi
