#!/usr/bin/env bash
# bench/ab.sh OLD_DRIVER NEW_DRIVER ROUNDS OUT.jsonl
#
# Two builds of lockweave's driver (bench/lw_bench_driver) in paired rounds
# on one private redis-server, alternating which goes first, on the three
# workloads of bench/paired.sh: for "did this change cost anything".  Prints
# the median and range of the per-round new/old ratios.
set -euo pipefail
old=$1 new=$2 rounds=$3 out=$4
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
  for w in uncontended contended spread; do
    case $w in
      uncontended) n=20000 ;;
      contended) n=1000 ;;
      spread) n=3000 ;;
    esac
    for which in "${order[@]}"; do
      d=$old
      [[ $which == new ]] && d=$new
      "$d" --workload $w --port "$port" --procs 8 --iters $n --ttl-ms 10000 \
        --wait-ms 10000 --retry-ms 1 |
        sed "s/}\$/,\"round\":$r,\"which\":\"$which\"}/" >>"$out"
    done
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for w in ("uncontended", "contended", "spread"):
    r = []
    for n in sorted({x["round"] for x in rows}):
        pick = {x["which"]: x for x in rows if x["workload"] == w and x["round"] == n}
        r.append(pick["new"]["ops_per_s"] / pick["old"]["ops_per_s"])
    print(f"{w:12s} new/old sections/s: median {statistics.median(r):.3f}, "
          f"range {min(r):.3f}-{max(r):.3f} ({len(r)} rounds)")
PY
