#!/usr/bin/env bash
# bench/run.sh [--quick]: lockweave beside the peer lock libraries, in one run.
#
# Builds the lockweave driver (its sections are REDIS_LOCK functions woven by
# lockweave_generate), runs ../shared/peers/run.sh with it added — same
# redis-server, same workloads, same sizes — and prints the harness's table,
# then lockweave's ratios against the round-trip bound and the hand-written
# hiredis lock, and draws a chart (gnuplot).  Then bench/paired.sh runs
# lockweave, the hand-written lock and the bound back to back for a few
# rounds (5; --quick 2), and the ratios are given per round too, with their
# median: on this VM one pair of runs minutes apart can be two machines.
# Outputs in build/bench/: peers.jsonl, paired.jsonl, ratios.txt, peers.png.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build/bench
quick=()
rounds=5
[[ ${1:-} == --quick ]] && quick=(--quick) && rounds=2

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server pkg-config gnuplot-nox
# (the harness's setup.sh installs its own: python3-redis, node, npm packages)

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver lw_bench_bound
driver=$out/cmake/bench/lw_bench_driver

bench_peers_copy "$out/peers" run.sh

bash "$out/peers/run.sh" "${quick[@]}" \
  --with lockweave 1 "$driver" \
  --json-out "$out/peers.jsonl" | tee "$out/table.txt"

bash "$root/bench/paired.sh" "$driver" "$out/peers/c/hiredis_lock" \
  "$out/paired.jsonl" "$rounds" "${quick[@]}"

python3 "$root/bench/ratios.py" "$out/peers.jsonl" --paired "$out/paired.jsonl" |
  tee "$out/ratios.txt"
gnuplot -e "datafile='$out/chart.dat'; outfile='$out/peers.png'" \
  "$root/bench/chart.gp"
echo "chart: $out/peers.png"
