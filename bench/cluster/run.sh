#!/usr/bin/env bash
# bench/cluster/run.sh [--quick]: lock throughput with keys spread over the
# slots — one redis-server against a Redis Cluster of 3 masters (without and
# with one replica each), the same clients.
#
# The driver (bench/cluster/lw_cluster_bench.c) runs REDIS_LOCK functions
# woven by lockweave_generate on random keys among 1000; its sections touch
# no Redis, so the figure is the locks' own throughput.  Servers are started
# here on free loopback ports (cluster bus ports chosen explicitly) and
# stopped by their PIDs.  Output: build/bench-cluster/cluster.jsonl and a
# table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-cluster
iters=4000
[[ ${1:-} == --quick ]] && iters=500

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server redis-tools pkg-config

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_cluster_bench
driver=$out/cmake/bench/cluster/lw_cluster_bench

tmp=$(mktemp -d)
# Servers are started inside $(...) subshells: their PIDs go to a file, not
# to a shell variable that the subshell would lose.
: >"$tmp/pids"
cleanup() {
  local p
  while read -r p; do kill "$p" 2>/dev/null || true; done <"$tmp/pids"
  while read -r p; do
    while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
  done <"$tmp/pids"
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server DIR [args...]: prints the port
start_server() {
  local dir=$1 port
  shift
  port=$(bench_free_port)
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir" "$@" >"$dir/log" 2>&1 &
  echo $! >>"$tmp/pids"
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
  echo "$port"
}

# cluster NAME MASTERS REPLICAS: prints a redis+cluster:// URL
cluster() {
  local name=$1 n=$(($2 * (1 + $3))) addrs=() seeds=() i port
  for ((i = 0; i < n; i++)); do
    port=$(start_server "$tmp/$name-$i" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-port "$(bench_free_port)")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$3" \
    --cluster-yes >"$tmp/$name.create" 2>&1
  for a in "${addrs[@]}"; do
    for _ in $(seq 200); do
      redis-cli -p "${a#*:}" cluster info | grep -q cluster_state:ok && break
      sleep 0.05
    done
  done
  (IFS=,; echo "redis+cluster://${addrs[*]}")
}

single=$(start_server "$tmp/single")
c3=$(cluster c3 3 0)
c33=$(cluster c33 3 1)
sleep 1 # replicas' first sync

: >"$out/cluster.jsonl"
for procs in 1 8; do
  for cfg in "1-node redis://127.0.0.1:$single" "3-masters $c3" \
    "3-masters+3-replicas $c33"; do
    LOCKWEAVE_REDIS_URL=${cfg#* } LOCKWEAVE_LOG=error "$driver" \
      --procs "$procs" --iters "$iters" --keys 1000 --label "${cfg%% *}" \
      >>"$out/cluster.jsonl"
  done
done

python3 - "$out/cluster.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'locks on':<22} {'procs':>5} {'keys':>5} {'sections':>8} "
      f"{'ops/s':>7} {'p50_us':>7} {'p99_us':>7} {'violations':>10} {'failed':>6}")
for r in rows:
    print(f"{r['label']:<22} {r['procs']:>5} {r['keys']:>5} {r['sections']:>8} "
          f"{r['ops_per_s']:>7.0f} {r['p50_us']:>7} {r['p99_us']:>7} "
          f"{r['violations']:>10} {r['failed']:>6}")
PY
