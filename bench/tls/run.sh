#!/usr/bin/env bash
# bench/tls/run.sh [--quick] [--rounds N] [--pin]: lockweave over TLS beside
# plain TCP, in one run.
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
#
# Each run also records CPU time per section: the client's (its processes'
# user + system time, from the shell's `times`) and redis-server's (INFO
# cpu before and after), so the table says which side TLS costs.  And each
# round runs redis-benchmark -c 1 PING on the same two ports: what Redis's
# own client pays per round trip for TLS on this machine, a floor that no
# client of this server goes under.
#
# --pin: redis-server on CPU 0, every client process (driver and
# redis-benchmark) on CPU 1 (taskset), so that they do not share a core.
# Output: build/bench-tls/tls.jsonl and the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/bench-tls
iters=20000
citers=1000
rounds=3
pin=0
while (($#)); do
  case $1 in
  --quick) iters=3000 citers=200 rounds=2 ;;
  --rounds) rounds=$2; shift ;;
  --pin) pin=1 ;;
  *) echo "usage: $0 [--quick] [--rounds N] [--pin]" >&2; exit 2 ;;
  esac
  shift
done

.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev redis-server redis-tools pkg-config libssl-dev openssl \
  util-linux

srv_cpu=() cli_cpu=()
if ((pin)); then
  if (($(nproc) < 2)); then
    echo "$0: --pin needs 2 CPUs, this machine has $(nproc)" >&2
    exit 2
  fi
  srv_cpu=(taskset -c 0) cli_cpu=(taskset -c 1)
fi

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_build "$out/cmake" lw_bench_driver
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

port=$(bench_free_port)
tport=$(bench_free_port)
"${srv_cpu[@]}" redis-server --port "$port" --tls-port "$tport" --bind 127.0.0.1 \
  --tls-cert-file "$tmp/server.pem" --tls-key-file "$tmp/server.key" \
  --tls-ca-cert-file "$tmp/ca.pem" --tls-auth-clients no \
  --save '' --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

# redis-server's CPU seconds so far (user + system, INFO cpu).
server_cpu() {
  redis-cli -p "$port" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f", s}'
}

# The CPU seconds (user + system) of the processes run by "$@" and waited
# for, the driver's children included: its stdout, then one line "cpu S".
with_cpu() {
  (
    "$@"
    # Not `times | awk`: the pipeline's fork would report its own children.
    times >"$tmp/times"
    awk 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "cpu %.3f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/times"
  )
}

# A JSON line of the run's figures, with the round and the CPU per section
# (microseconds) of the client and of redis-server.
annotate() { # round server_cpu_before; reads with_cpu's output
  local in
  in=$(cat) # all of it: redis-server's CPU is read when the run has ended
  printf '%s\n' "$in" | python3 -c '
import json, sys
rnd, before, after = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
lines = sys.stdin.read().split("\n")
cpu = float(next(l for l in lines if l.startswith("cpu "))[4:])
row = json.loads(next(l for l in lines if l.startswith("{")))
n = row["sections"]
print(json.dumps({"round": rnd, **row,
                  "client_cpu_us": round(cpu * 1e6 / n, 1),
                  "server_cpu_us": round((after - before) * 1e6 / n, 1)}))
' "$1" "$2" "$(server_cpu)"
}

one() { # round transport workload
  local url=redis://127.0.0.1:$port it=$iters procs=1 before
  [[ $2 == tls ]] && url=rediss://localhost:$tport
  [[ $3 == contended ]] && { it=$citers; procs=4; }
  before=$(server_cpu)
  LW_BENCH_LOCK_URL=$url LOCKWEAVE_TLS_CA_FILE=$tmp/ca.pem LOCKWEAVE_LOG=error \
    with_cpu "${cli_cpu[@]}" "$driver" --workload "$3" --port "$port" \
    --procs "$procs" --iters "$it" --impl "lockweave-$2" | annotate "$1" "$before"
}

# redis-benchmark -c 1 PING (one round trip per request, as many as the
# uncontended run makes: two per section), as a driver row.
ping_floor() { # round transport
  local n=$((2 * iters)) before
  local args=(-h 127.0.0.1 -p "$port")
  [[ $2 == tls ]] && args=(-h localhost -p "$tport" --tls --sni localhost
    --cacert "$tmp/ca.pem")
  before=$(server_cpu)
  with_cpu "${cli_cpu[@]}" redis-benchmark "${args[@]}" -c 1 -n "$n" \
    -t ping_mbulk --csv | python3 -c '
import csv, json, sys
lines = sys.stdin.read().split("\n")
row = next(r for r in csv.DictReader(l for l in lines if l.startswith("\"")))
print(json.dumps({"impl": "redis-benchmark-" + sys.argv[1], "workload": "ping",
                  "procs": 1, "sections": int(sys.argv[2]),
                  "ops_per_s": float(row["rps"]),
                  "p50_us": round(float(row["p50_latency_ms"]) * 1000),
                  "p99_us": round(float(row["p99_latency_ms"]) * 1000),
                  "violations": 0, "failed": 0}))
print(next(l for l in lines if l.startswith("cpu ")))
' "$2" "$n" | annotate "$1" "$before"
}

mkdir -p "$out"
: >"$out/tls.jsonl"
for ((r = 1; r <= rounds; r++)); do
  order=(plain tls)
  ((r % 2 == 0)) && order=(tls plain)
  for w in uncontended contended; do
    for t in "${order[@]}"; do one "$r" "$t" "$w" >>"$out/tls.jsonl"; done
  done
  for t in "${order[@]}"; do ping_floor "$r" "$t" >>"$out/tls.jsonl"; done
done

python3 - "$out/tls.jsonl" "$pin" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# " + ("pinned: redis-server on CPU 0, clients on CPU 1" if sys.argv[2] == "1"
              else "not pinned: client and redis-server share the CPUs"))
print(f"{'round':>5} {'client':<15} {'transport':<9} {'workload':<12} {'procs':>5} "
      f"{'sections':>8} {'ops/s':>7} {'p50_us':>7} {'p99_us':>7} "
      f"{'violations':>10} {'failed':>6} {'cli_cpu_us':>10} {'srv_cpu_us':>10}")
for r in rows:
    client, transport = r["impl"].rsplit("-", 1)
    print(f"{r['round']:>5} {client:<15} {transport:<9} {r['workload']:<12} "
          f"{r['procs']:>5} {r['sections']:>8} {r['ops_per_s']:>7.0f} "
          f"{r['p50_us']:>7} {r['p99_us']:>7} {r['violations']:>10} "
          f"{r['failed']:>6} {r['client_cpu_us']:>10} {r['server_cpu_us']:>10}")
print()
# cpu_us per section or request; cost per section = 1 / (sections/s): TLS
# over plain, per round, then the median.
for w, impl in (("uncontended", "lockweave"), ("contended", "lockweave"),
                ("ping", "redis-benchmark")):
    ratios, cpu = [], {}
    for rnd in sorted({r["round"] for r in rows}):
        by = {r["impl"]: r for r in rows if r["round"] == rnd and r["workload"] == w}
        ratios.append(by[impl + "-plain"]["ops_per_s"] / by[impl + "-tls"]["ops_per_s"])
        for t in ("plain", "tls"):
            for side in ("client", "server"):
                cpu.setdefault((t, side), []).append(by[f"{impl}-{t}"][side + "_cpu_us"])
    what = "per request (redis-benchmark -c 1 PING)" if w == "ping" else "per section"
    print(f"{w}: TLS/plain cost {what}, median {statistics.median(ratios):.2f} "
          f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}); "
          f"CPU us, median plain -> TLS: client "
          f"{statistics.median(cpu['plain', 'client']):.1f} -> "
          f"{statistics.median(cpu['tls', 'client']):.1f}, redis-server "
          f"{statistics.median(cpu['plain', 'server']):.1f} -> "
          f"{statistics.median(cpu['tls', 'server']):.1f}")
PY
