#!/usr/bin/env bash
# The body of ./demo.sh, run inside lw_with_redis (so LOCKWEAVE_REDIS_URL is
# set to a private redis-server):  demo-run.sh BIN_DIR
#
# Runs the same load twice against three instances sharing one SQLite file:
# unguarded (--no-lock), then guarded by REDIS_LOCK, and prints the table.
# Every process it starts is stopped by PID on exit, whatever happens.
set -euo pipefail
bin=${1:?usage: demo-run.sh BIN_DIR}
: "${LOCKWEAVE_REDIS_URL:?run me through lw_with_redis}"

instances=3
stock=1000
requests=2000
clients=32
sku=demo-sku

work=$(mktemp -d "${TMPDIR:-/tmp}/lockweave-demo.XXXXXX")
pids=()

stop_instances() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_instances
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_instances [SERVICE ARGS...]: three instances on free ports (each binds
# port 0 and writes the port it got), one shared database.
start_instances() {
  local i
  rm -f "$work"/port.*
  for ((i = 0; i < instances; i++)); do
    "$bin/inventory-service" --port 0 --port-file "$work/port.$i" \
      --db "$work/stock.db" "$@" >>"$work/service.$i.log" 2>&1 &
    pids+=($!)
  done
  # The port file appears once the instance listens.
  for ((i = 0; i < instances; i++)); do
    local tries=0
    until [ -s "$work/port.$i" ]; do
      if ! kill -0 "${pids[$i]}" 2>/dev/null || ((++tries > 200)); then
        echo "demo: instance $i did not start:" >&2
        cat "$work/service.$i.log" >&2
        exit 1
      fi
      sleep 0.05
    done
  done
}

addresses() {
  local i list=
  for ((i = 0; i < instances; i++)); do
    list+="${list:+,}127.0.0.1:$(cat "$work/port.$i")"
  done
  echo "$list"
}

# run MODE LABEL [SERVICE ARGS...]
run() {
  local label=$1
  shift
  echo
  echo "== $label: $requests deductions of 1 unit, $clients clients," \
       "$instances instances, stock $stock =="
  start_instances "$@"
  "$bin/inventory-load" --instances "$(addresses)" --requests "$requests" \
    --concurrency "$clients" --skus "$sku" --seed "$stock" --label "$label" \
    | tee "$work/$label.out"
  stop_instances
}

# field FILE NAME: a number from the SUMMARY line's JSON.
field() {
  sed -n 's/^SUMMARY .*"'"$2"'":\([-0-9.]*\).*/\1/p' "$1"
}

row() {
  local f=$work/$1.out
  printf '%-12s %9s %7s %12s %9s %8.0f %8.1f\n' "$2" "$(field "$f" requests)" \
    "$(field "$f" sold)" "$(field "$f" final)" "$(field "$f" oversold)" \
    "$(field "$f" rps)" "$(field "$f" p99_ms)"
}

echo "demo: redis at $LOCKWEAVE_REDIS_URL, stock database $work/stock.db"
run unguarded --no-lock
run guarded

echo
printf '%-12s %9s %7s %12s %9s %8s %8s\n' mode requests sold "final stock" \
  oversold "req/s" "p99 ms"
row unguarded "--no-lock"
row guarded "REDIS_LOCK"
echo

u=$work/unguarded.out g=$work/guarded.out
echo "Without the lock, $(field "$u" oversold) units were sold that did not exist" \
     "($(field "$u" lost_updates) deductions overwritten by a concurrent one)."
echo "With REDIS_LOCK(\"stock:{sku}\", 10s, 5s): $(field "$g" sold) sold," \
     "final stock $(field "$g" final), oversold $(field "$g" oversold)."

# The guarded run is the promise: anything else is a bug worth a failure.
if [ "$(field "$g" sold)" != "$stock" ] || [ "$(field "$g" final)" != 0 ] \
   || [ "$(field "$g" oversold)" != 0 ]; then
  echo "demo: FAILED: the guarded run did not sell exactly $stock" >&2
  exit 1
fi
if [ "$(field "$u" oversold)" = 0 ]; then
  echo "demo: note: the unguarded run happened not to oversell this time"
fi
