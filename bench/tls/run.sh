#!/usr/bin/env bash
# bench/tls/run.sh [--quick] [--rounds N]: lockweave over TLS beside plain
# TCP, in one run.
#
# The same driver as bench/run.sh (bench/lw_bench_driver.c, REDIS_LOCK
# functions woven by lockweave_generate) against one private redis-server
# that listens on a plain port and a TLS port (certificates made here with
# the openssl CLI, in a temporary directory): the lock goes to
# redis://127.0.0.1:PORT or rediss://localhost:TLSPORT (verified against the
# throwaway CA), the driver's own counters stay on the plain port.
# Uncontended: one process, one key; contended: 4 processes, one key.  Plain
# and TLS alternate (round by round, the order flipped each round) so that
# a shared VM changing speed hits both; the table gives each round's ratio
# of the cost per section (TLS / plain) and their median.  Connections are
# long-lived: the handshake is paid once per process, not per section.
# Output: build/bench-tls/tls.jsonl and the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-tls
iters=20000
citers=1000
rounds=3
while (($#)); do
  case $1 in
  --quick) iters=3000 citers=200 rounds=2 ;;
  --rounds) rounds=$2; shift ;;
  *) echo "usage: $0 [--quick] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev redis-server pkg-config libssl-dev openssl

cmake -S . -B "$out/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLW_BUILD_TESTS=OFF -DLW_BUILD_SAMPLES=OFF >/dev/null
cmake --build "$out/cmake" --target lw_bench_driver >/dev/null
driver=$out/cmake/bench/lw_bench_driver

tmp=$(mktemp -d /tmp/lw-bench-tls.XXXXXX)
rpid=
cleanup() {
  [[ -n $rpid ]] && kill "$rpid" 2>/dev/null || true # by PID: never pkill
  [[ -n $rpid ]] && wait "$rpid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

(
  cd "$tmp"
  key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${key[@]}" -keyout ca.key -out ca.pem -days 1 \
    -subj /CN=lockweave-bench-ca
  openssl req "${key[@]}" -keyout server.key -out server.csr -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 1 -copy_extensions copy -out server.pem
) >"$tmp/openssl.log" 2>&1

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port=$(free_port)
tport=$(free_port)
redis-server --port "$port" --tls-port "$tport" --bind 127.0.0.1 \
  --tls-cert-file "$tmp/server.pem" --tls-key-file "$tmp/server.key" \
  --tls-ca-cert-file "$tmp/ca.pem" --tls-auth-clients no \
  --save '' --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

one() { # round transport workload
  local url=redis://127.0.0.1:$port it=$iters procs=1
  [[ $2 == tls ]] && url=rediss://localhost:$tport
  [[ $3 == contended ]] && { it=$citers; procs=4; }
  LW_BENCH_LOCK_URL=$url LOCKWEAVE_TLS_CA_FILE=$tmp/ca.pem LOCKWEAVE_LOG=error \
    "$driver" --workload "$3" --port "$port" --procs "$procs" --iters "$it" \
    --impl "lockweave-$2" | sed "s/^{/{\"round\":$1,/"
}

mkdir -p "$out"
: >"$out/tls.jsonl"
for ((r = 1; r <= rounds; r++)); do
  order=(plain tls)
  ((r % 2 == 0)) && order=(tls plain)
  for w in uncontended contended; do
    for t in "${order[@]}"; do one "$r" "$t" "$w" >>"$out/tls.jsonl"; done
  done
done

python3 - "$out/tls.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'round':>5} {'transport':<9} {'workload':<12} {'procs':>5} "
      f"{'sections':>8} {'ops/s':>7} {'p50_us':>7} {'p99_us':>7} "
      f"{'violations':>10} {'failed':>6}")
for r in rows:
    print(f"{r['round']:>5} {r['impl'].split('-')[1]:<9} {r['workload']:<12} "
          f"{r['procs']:>5} {r['sections']:>8} {r['ops_per_s']:>7.0f} "
          f"{r['p50_us']:>7} {r['p99_us']:>7} {r['violations']:>10} "
          f"{r['failed']:>6}")
print()
for w in ("uncontended", "contended"):
    ratios = []
    for rnd in sorted({r["round"] for r in rows}):
        by = {r["impl"]: r for r in rows if r["round"] == rnd and r["workload"] == w}
        # cost per section = 1 / (sections/s): TLS cost over plain cost
        ratios.append(by["lockweave-plain"]["ops_per_s"] / by["lockweave-tls"]["ops_per_s"])
    print(f"{w}: TLS/plain cost per section, median {statistics.median(ratios):.2f} "
          f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
PY
