#!/usr/bin/env bash
# bench/ab.sh OLD_DRIVER NEW_DRIVER ROUNDS OUT.jsonl [--threads]
#
# Two builds of lockweave's driver (bench/lw_bench_driver) in paired rounds
# on one private redis-server, alternating which goes first, on the three
# workloads of bench/paired.sh (8 single-threaded processes); with
# --threads, on bench/threads/run.sh's instead (4 processes x 16 threads on
# one key and on 64 keys), where threads of one process hand a lock on to
# each other.  For "did this change cost anything": prints the median and
# range of the per-round new/old ratios of sections/s and of p99.
set -euo pipefail
old=$1 new=$2 rounds=$3 out=$4
workloads=(uncontended contended spread)
[[ ${5:-} == --threads ]] && workloads=(threads threads-keys)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/lw-ab.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT
bench_redis_start "$tmp"
port=$bench_port

: >"$out"
for r in $(seq "$rounds"); do
  order=(old new)
  ((r % 2 == 0)) && order=(new old)
  for w in "${workloads[@]}"; do
    case $w in
      uncontended) size=(--procs 8 --iters 20000) ;;
      contended) size=(--procs 8 --iters 1000) ;;
      spread) size=(--procs 8 --iters 3000) ;;
      threads | threads-keys)
        size=(--procs 4 --threads 16 --keys 64 --iters 200) ;;
    esac
    for which in "${order[@]}"; do
      d=$old
      [[ $which == new ]] && d=$new
      LOCKWEAVE_LOG=error "$d" --workload "$w" --port "$port" "${size[@]}" \
        --ttl-ms 10000 --wait-ms 10000 --retry-ms 1 | grep '^{' |
        sed "s/}\$/,\"round\":$r,\"which\":\"$which\"}/" >>"$out"
    done
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for w in dict.fromkeys(x["workload"] for x in rows):
    for field, name in (("ops_per_s", "sections/s"), ("p99_us", "p99")):
        r = []
        for n in sorted({x["round"] for x in rows}):
            pick = {x["which"]: x for x in rows
                    if x["workload"] == w and x["round"] == n}
            if field in pick["old"] and pick["old"][field]:
                r.append(pick["new"][field] / pick["old"][field])
        if r:
            print(f"{w:12s} new/old {name:10s}: median "
                  f"{statistics.median(r):.3f}, range {min(r):.3f}-"
                  f"{max(r):.3f} ({len(r)} rounds)")
PY
