#!/usr/bin/env bash
# bench/lan/run.sh [--quick] [--rounds N] [--delay-us US] [--workloads "W..."]:
# lockweave and every peer of the peer harness with a LAN's round trip.
#
# Every client talks to one private redis-server through lw_delay_proxy
# (bench/delay_proxy.c), which holds each byte --delay-us (default 250)
# in each direction: a round trip of about 0.5 ms plus loopback, as between
# hosts on one LAN.  Workloads: the harness's uncontended, contended and
# spread (8 processes) for lockweave (bench/lw_bench_driver.c, REDIS_LOCK
# functions woven by lockweave_generate) and for redis-py, node-redlock,
# redis-semaphore and the hand-written hiredis lock (the harness's drivers,
# from a private copy of ../shared/peers or $LW_PEERS_DIR, pointed at the
# proxy's port); and threads and threads-keys (4 processes x 16 threads, one
# key or 64) for lockweave and bench/threads/hand_threads.c.  Peers run at
# their own retry interval and at 1 ms (threads: the hand-written lock at
# 1 and 10 ms), lockweave once; and for contended and threads the serial
# bound (bench/bound.c: the sections back to back with no lock, plus one
# round trip per section between processes), the most any lock could
# reach.  Like bench/paired.sh, every implementation
# runs back to back in rounds whose order flips each round, and
# bench/paired_ratios.py gives lockweave / each peer per round (the peer at
# its best retry of the round), with the median and range.  Output in
# build/bench-lan/: lan.jsonl, ratios.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-lan
rounds=3 delay_us=250 quick=0
workloads="uncontended contended spread threads threads-keys"
while (($#)); do
  case $1 in
  --quick) rounds=2 quick=1 ;;
  --rounds) rounds=$2; shift ;;
  --delay-us) delay_us=$2; shift ;;
  --workloads) workloads=$2; shift ;;
  *)
    echo "usage: $0 [--quick] [--rounds N] [--delay-us US]" \
      "[--workloads \"W...\"]" >&2
    exit 2
    ;;
  esac
  shift
done
# Per process (threads: per thread).  A round trip of ~0.6 ms makes a
# contended section cost ~2.5 ms; slow retries make slow progress, so
# contended iterations are a budget divided by the retry, capped.
if ((quick)); then
  u_iters=300 c_cap=25 c_budget=300 s_iters=60 t_iters=10 limit=60
else
  u_iters=2000 c_cap=150 c_budget=2000 s_iters=400 t_iters=40 limit=180
fi
c_iters() {
  local n=$((c_budget / $1))
  ((n > c_cap)) && n=$c_cap
  ((n < 5)) && n=5
  echo $n
}

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server redis-tools pkg-config
# (the harness's setup.sh installs its own: python3-redis, node, npm packages)

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver hand_threads lw_bench_bound \
  lw_delay_proxy
driver=$out/cmake/bench/lw_bench_driver
bound=$out/cmake/bench/lw_bench_bound
hand_threads=$out/cmake/bench/threads/hand_threads
proxy=$out/cmake/bench/lw_delay_proxy

bench_peers_copy "$out/peers" setup.sh
bash "$out/peers/setup.sh" >&2
peers=$out/peers

tmp=$(mktemp -d /tmp/lw-bench-lan.XXXXXX)
ppid=
cleanup() {
  if [[ -n $ppid ]]; then
    kill "$ppid" 2>/dev/null || true # by PID
    wait "$ppid" 2>/dev/null || true
  fi
  bench_redis_stop
  rm -rf "$tmp"
}
trap cleanup EXIT

bench_redis_start "$tmp"
port=$bench_port
pport=$(bench_free_port)
"$proxy" "$pport" "$port" "$delay_us" &
ppid=$!
bench_wait_ping "$pport"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
proxy_ticks0=$(cpu_ticks "$ppid")

impls=( # name|default retry-ms ("-": none)|command
  "lockweave|-|env LOCKWEAVE_LOG=error $driver"
  "redis-py-lock|100|/usr/bin/python3 $peers/py_redis_lock.py"
  "node-redlock|200|node $peers/node/redlock_driver.js"
  "redis-semaphore|10|node $peers/node/semaphore_driver.js"
  "hiredis-handwritten|10|$peers/c/hiredis_lock"
  "hiredis-handwritten-threads|10|$hand_threads" # its lines say hiredis-handwritten
  "serial-bound|-|$bound" # contended and threads: the ceiling (bench/bound.c)
)

jsonl=$out/lan.jsonl
failures=0
one() { # round name command...: one bounded run, its line with the round
  local r=$1 name=$2 line rc=0
  shift 2
  redis-cli -p "$port" FLUSHALL >/dev/null
  line=$(timeout -k 5 "$limit" "$@" --port "$pport" --ttl-ms 10000 \
    --wait-ms 10000 2>"$tmp/err" | grep '^{') || rc=$?
  if ((rc != 0)) || [[ -z $line ]]; then
    failures=$((failures + 1))
    echo "FAILED (exit $rc): $name $*" >&2
    tail -n 5 "$tmp/err" >&2
    return 0
  fi
  echo "$line" | sed "s/}\$/,\"round\":$r}/" | tee -a "$jsonl"
}

: >"$jsonl"
start=$(date +%s)
for r in $(seq "$rounds"); do
  order=("${impls[@]}")
  if ((r % 2 == 0)); then # the other way round
    order=()
    for ((i = ${#impls[@]} - 1; i >= 0; i--)); do order+=("${impls[$i]}"); done
  fi
  for w in $workloads; do
    for impl in "${order[@]}"; do
      IFS='|' read -r name default cmd <<<"$impl"
      threaded=0
      [[ $w == threads* ]] && threaded=1
      case $name in
      lockweave) ;;
      serial-bound) [[ $w == contended || $w == threads ]] || continue ;;
      *-threads) ((threaded)) || continue ;;
      *) ((threaded)) && continue ;;
      esac
      retries=$default
      [[ $default == - || $w == uncontended ]] || retries="$default 1"
      [[ $default == 1 ]] && retries=1
      for retry in $retries; do
        args=(--workload "$w")
        [[ $retry != - ]] && args+=(--retry-ms "$retry")
        case $w in
        uncontended) args+=(--iters "$u_iters") ;;
        contended) args+=(--procs 8 --iters "$(c_iters "${retry/-/1}")") ;;
        spread) args+=(--procs 8 --iters "$s_iters") ;;
        threads*) args+=(--procs 4 --threads 16 --iters "$t_iters") ;;
        esac
        [[ $w == threads-keys ]] && args+=(--keys 64)
        # shellcheck disable=SC2086 # cmd is a command line
        one "$r" "$name" $cmd "${args[@]}"
      done
    done
  done
  echo "lan: round $r of $rounds done" >&2
done
elapsed=$(($(date +%s) - start))
proxy_s=$(awk -v t="$(($(cpu_ticks "$ppid") - proxy_ticks0))" \
  -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')

{
  echo "delay ${delay_us} us each way; proxy CPU ${proxy_s} s over ${elapsed} s"
  python3 "$root/bench/paired_ratios.py" "$jsonl" \
    --target "contended=ops >= 1.50"
} | tee "$out/ratios.txt"
if ((failures > 0)); then
  echo "$failures run(s) failed" >&2
  exit 1
fi
