#!/usr/bin/env bash
# bench/costs.sh DRIVER HANDWRITTEN [ROUNDS] [--quick]
#
# Where a section's time goes, for lockweave beside the hand-written hiredis
# lock (1 ms retry) and the two-round-trip bound: the paired workloads of
# bench/paired.sh, each run alone on its own fresh redis-server, and per
# critical section
#   redis CPU   redis-server's user + system time (/proc/PID/stat)
#   commands    commands Redis ran (INFO commandstats: a script's own calls
#               count too), and of them scripts (EVAL/EVALSHA) and the
#               calls made from scripts
#   client CPU  the driver's processes' user + system time (getrusage)
#   switches    the driver's processes' context switches, voluntary and not
# Each figure is the median over ROUNDS runs (default 3), implementations
# alternating.  On two shared cores every CPU figure is inflated by
# whatever else runs; read them side by side, from one run.
set -euo pipefail
driver=$1 hand=$2 rounds=${3:-3}
if [[ ${4:-} == --quick || ${3:-} == --quick ]]; then
  [[ ${3:-} == --quick ]] && rounds=3
  u_iters=5000 c_iters=300 s_iters=800
else
  u_iters=30000 c_iters=2000 s_iters=5000
fi
procs=8
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/lw-costs.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT

# One run of one implementation on a fresh server: a JSON line.
one() { # impl workload iters command...
  local impl=$1 w=$2 n=$3 port t0 t1 p=$procs
  shift 3
  [[ $w == uncontended ]] && p=1
  bench_redis_start "$tmp"
  port=$bench_port
  redis-cli -p "$port" config resetstat >/dev/null
  t0=$(bench_redis_ticks)
  /usr/bin/time -f '%U %S %w %c' -o "$tmp/time" "$@" --workload "$w" \
    --port "$port" --procs $p --iters "$n" --ttl-ms 10000 --wait-ms 10000 \
    --retry-ms 1 >"$tmp/run.json"
  t1=$(bench_redis_ticks)
  calls=$(bench_redis_calls)
  scripts=$(bench_redis_calls eval evalsha)
  bench_redis_stop
  python3 - "$impl" "$w" "$((t1 - t0))" "$(getconf CLK_TCK)" "$calls" \
    "$scripts" <<'PY'
import json, os, sys
impl, w = sys.argv[1], sys.argv[2]
ticks, hz, calls, scripts = map(int, sys.argv[3:7])
d = os.environ["COSTS_TMP"]
run = json.load(open(d + "/run.json"))
user, sys_, vol, invol = map(float, open(d + "/time").read().split())
s = run["sections"]
print(json.dumps({"impl": impl, "workload": w, "ops_per_s": run["ops_per_s"],
    "redis_cpu_us": ticks * 1e6 / hz / s, "commands": calls / s,
    "scripts": scripts / s, "client_cpu_us": (user + sys_) * 1e6 / s,
    "switches": (vol + invol) / s}))
PY
}
export COSTS_TMP=$tmp

out=$tmp/costs.jsonl
: >"$out"
for r in $(seq "$rounds"); do
  order=(lw hand raw)
  ((r % 2 == 0)) && order=(raw hand lw)
  for w in uncontended contended spread; do
    n=$(bench_iters $w)
    for impl in "${order[@]}"; do
      case $impl in
        lw) one lockweave $w "$n" "$driver" >>"$out" ;;
        hand) one hand-written $w "$n" "$hand" >>"$out" ;;
        raw) [[ $w == uncontended ]] && one raw-2rtt $w "$n" "$hand" --raw >>"$out" ;;
      esac
    done
  done
  echo "costs: round $r of $rounds done" >&2
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["ops_per_s", "redis_cpu_us", "commands", "scripts", "client_cpu_us",
        "switches"]
print("per critical section, median of %d runs each" %
      len([r for r in rows if r["impl"] == "raw-2rtt"]))
print("%-12s %-12s %9s %10s %9s %8s %11s %9s" % ("workload", "impl",
      "ops/s", "redis us", "commands", "scripts", "client us", "switches"))
for w in ["uncontended", "contended", "spread"]:
    for impl in ["lockweave", "hand-written", "raw-2rtt"]:
        sel = [r for r in rows if r["workload"] == w and r["impl"] == impl]
        if not sel:
            continue
        m = {k: statistics.median(r[k] for r in sel) for k in keys}
        print("%-12s %-12s %9.0f %10.1f %9.2f %8.2f %11.1f %9.2f" % (w, impl,
              m["ops_per_s"], m["redis_cpu_us"], m["commands"], m["scripts"],
              m["client_cpu_us"], m["switches"]))
PY
