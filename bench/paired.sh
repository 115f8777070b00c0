#!/usr/bin/env bash
# bench/paired.sh DRIVER HANDWRITTEN OUT.jsonl ROUNDS [--quick]
#
# Paired rounds for lockweave's ratios (docs/benchmarks.md).  On a shared VM the
# host's speed can change two- or threefold within seconds, so one run of each
# implementation, minutes apart (as in the harness's own loop), can put the
# two sides of a ratio on different machines.  Here lockweave, the
# hand-written hiredis lock (1 ms retry) and the round-trip bound run back to
# back on one private redis-server, round after round, in alternating order
# (ABCD, then DCBA), with the harness's sizes; ratios.py --paired then takes each
# round's ratio and reports the median and the range.  Contended also runs
# the serial bound (lw_bench_bound beside DRIVER, when built there;
# bench/bound.c), the most any lock could reach there.
set -euo pipefail
driver=$1 hand=$2 out=$3 rounds=$4
if [[ ${5:-} == --quick ]]; then
  u_iters=5000 c_iters=200 s_iters=600
else
  u_iters=50000 c_iters=2000 s_iters=5000
fi
procs=8 ttl=10000 wait=10000
bound=$(dirname "$driver")/lw_bench_bound

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/lw-paired.XXXXXX)
trap 'bench_redis_stop; rm -rf "$tmp"' EXIT
bench_redis_start "$tmp"
port=$bench_port

# One run: the driver's JSON line with the round number added.
one() { # round workload iters command...
  local r=$1 w=$2 n=$3
  shift 3
  "$@" --workload "$w" --port "$port" --procs $procs --iters "$n" \
    --ttl-ms $ttl --wait-ms $wait --retry-ms 1 |
    sed "s/}\$/,\"round\":$r}/" >>"$out"
}

: >"$out"
for r in $(seq "$rounds"); do
  order=(lw hand raw bound)
  ((r % 2 == 0)) && order=(bound raw hand lw)
  for w in uncontended contended spread; do
    n=$(bench_iters $w)
    for impl in "${order[@]}"; do
      case $impl in
        lw) one "$r" $w "$n" "$driver" ;;
        hand) one "$r" $w "$n" "$hand" ;;
        raw) [[ $w == uncontended ]] && one "$r" $w "$n" "$hand" --raw ;;
        bound) [[ $w == contended && -x $bound ]] && one "$r" $w "$n" "$bound" ;;
      esac
    done
  done
  echo "paired: round $r of $rounds done" >&2
done
