#!/usr/bin/env bash
# bench/sentinel/run.sh [--quick] [--rounds N] [--driver PATH]: lockweave
# through Redis Sentinel beside a plain URL to the same master, in one run.
#
# One private master and one sentinel that monitors it (redis-sentinel with
# a configuration written here, quorum 1), both started here on free
# loopback ports and stopped by PID.  The same driver as bench/run.sh
# (bench/lw_bench_driver.c, REDIS_LOCK functions woven by
# lockweave_generate) takes its locks at redis://127.0.0.1:PORT or at
# redis+sentinel://127.0.0.1:SPORT/bench (LW_BENCH_LOCK_URL); its own
# counters stay on the master's port either way.  Uncontended: one process,
# one key; contended: 4 processes, one key (bench/tls/run.sh's sizes).
# Plain and Sentinel alternate, the order flipped each round, so a shared VM
# changing speed hits both; the table gives each round's ratio of the cost
# per section (Sentinel / plain) and their median and range.
#
# Discovery should cost nothing per section once connected: each run also
# counts the commands the sentinel served (INFO stats, less the script's
# own INFO) and the ROLE checks the master served.  Each driver process asks the sentinel once, checks ROLE once
# per connection, and keeps one +switch-master subscription open.
#
# --driver PATH: use that lw_bench_driver instead of building one (Release,
# build/bench-sentinel/cmake).  Output: build/bench-sentinel/sentinel.jsonl
# and the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-sentinel
iters=20000
citers=1000
rounds=5
driver=
while (($#)); do
  case $1 in
  --quick) iters=3000 citers=200 rounds=2 ;;
  --rounds) rounds=$2; shift ;;
  --driver) driver=$2; shift ;;
  *) echo "usage: $0 [--quick] [--rounds N] [--driver PATH]" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
if [[ -z $driver ]]; then
  .ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
    libhiredis-dev redis-server redis-sentinel redis-tools pkg-config \
    libssl-dev
  bench_build "$out/cmake" lw_bench_driver
  driver=$out/cmake/bench/lw_bench_driver
fi

tmp=$(mktemp -d /tmp/lw-bench-sentinel.XXXXXX)
spid=
cleanup() {
  # By PID: never pkill, other servers on this machine are not ours.
  if [[ -n $spid ]]; then
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
  fi
  bench_redis_stop
  rm -rf "$tmp"
}
trap cleanup EXIT

bench_redis_start "$tmp"
port=$bench_port
sport=$(bench_free_port)
mkdir "$tmp/sentinel"
cat >"$tmp/sentinel/sentinel.conf" <<CONF
port $sport
bind 127.0.0.1
dir $tmp/sentinel
logfile $tmp/sentinel/sentinel.log
sentinel monitor bench 127.0.0.1 $port 1
sentinel down-after-milliseconds bench 5000
CONF
sentinel_exe=$(command -v redis-sentinel || true)
if [[ -n $sentinel_exe ]]; then
  "$sentinel_exe" "$tmp/sentinel/sentinel.conf" &
else
  redis-server "$tmp/sentinel/sentinel.conf" --sentinel &
fi
spid=$!
bench_wait_ping "$sport"
for _ in $(seq 100); do
  [[ $(redis-cli -p "$sport" SENTINEL get-master-addr-by-name bench |
    tail -1) == "$port" ]] && break
  sleep 0.05
done

# Commands served on port $1 so far (INFO stats; a sentinel keeps no
# commandstats), counting each earlier read but not this one.
calls() {
  redis-cli -p "$1" INFO stats | tr -d '\r' |
    awk -F: '/^total_commands_processed:/ { print $2 }'
}

# ROLE checks served by the master so far (INFO commandstats).
roles() {
  redis-cli -p "$port" INFO commandstats | tr -d '\r' |
    awk -F'[:=,]' '/^cmdstat_role:/ { n = $3 } END { print n + 0 }'
}

one() { # round transport workload
  local url=redis://127.0.0.1:$port it=$iters procs=1 s0 r0 line
  [[ $2 == sentinel ]] && url=redis+sentinel://127.0.0.1:$sport/bench
  [[ $3 == contended ]] && { it=$citers; procs=4; }
  s0=$(calls "$sport")
  r0=$(roles)
  line=$(LW_BENCH_LOCK_URL=$url LOCKWEAVE_LOG=error "$driver" \
    --workload "$3" --port "$port" --procs "$procs" --iters "$it" \
    --impl "lockweave-$2" | grep '^{')
  python3 -c '
import json, sys
row = json.loads(sys.argv[1])
print(json.dumps({"round": int(sys.argv[2]), **row,
                  "sentinel_calls": int(sys.argv[3]),
                  "role_calls": int(sys.argv[4])}))
' "$line" "$1" "$(($(calls "$sport") - s0 - 1))" "$(($(roles) - r0))"
}

mkdir -p "$out"
: >"$out/sentinel.jsonl"
for ((r = 1; r <= rounds; r++)); do
  order=(plain sentinel)
  ((r % 2 == 0)) && order=(sentinel plain)
  for w in uncontended contended; do
    for t in "${order[@]}"; do one "$r" "$t" "$w" >>"$out/sentinel.jsonl"; done
  done
done

python3 - "$out/sentinel.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'round':>5} {'transport':<9} {'workload':<12} {'procs':>5} "
      f"{'sections':>8} {'ops/s':>7} {'p50_us':>7} {'p99_us':>7} "
      f"{'violations':>10} {'failed':>6} {'sentinel_cmds':>13} {'ROLE':>5}")
for r in rows:
    print(f"{r['round']:>5} {r['impl'].rsplit('-', 1)[1]:<9} "
          f"{r['workload']:<12} {r['procs']:>5} {r['sections']:>8} "
          f"{r['ops_per_s']:>7.0f} {r['p50_us']:>7} {r['p99_us']:>7} "
          f"{r['violations']:>10} {r['failed']:>6} {r['sentinel_calls']:>13} "
          f"{r['role_calls']:>5}")
print()
# Cost per section = 1 / (sections/s): Sentinel over plain, per round.
for w in ("uncontended", "contended"):
    cost, p50, cmds = [], [], []
    for rnd in sorted({r["round"] for r in rows}):
        by = {r["impl"]: r for r in rows
              if r["round"] == rnd and r["workload"] == w}
        p, s = by["lockweave-plain"], by["lockweave-sentinel"]
        cost.append(p["ops_per_s"] / s["ops_per_s"])
        p50.append(s["p50_us"] / p["p50_us"])
        cmds.append(s["sentinel_calls"] / s["sections"])
    print(f"{w}: Sentinel/plain cost per section, median "
          f"{statistics.median(cost):.3f}, range {min(cost):.3f}-"
          f"{max(cost):.3f} (rounds: {', '.join(f'{x:.3f}' for x in cost)}); "
          f"p50 median {statistics.median(p50):.3f}; sentinel commands per "
          f"section, max {max(cmds):.5f}")
print("violations:", sum(r["violations"] for r in rows),
      "failed:", sum(r["failed"] for r in rows))
PY
