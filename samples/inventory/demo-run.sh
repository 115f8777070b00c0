#!/usr/bin/env bash
# The body of ./demo.sh, run inside lw_with_redis (so LOCKWEAVE_REDIS_URL is
# set to a private redis-server):  demo-run.sh BIN_DIR
#
# Runs the same load twice against four instances sharing one SQLite file —
# three threaded ones (inventory-service) and one on an event loop
# (inventory-loop) — unguarded (--no-lock), then guarded by REDIS_LOCK, and
# prints the table; then sends orders, each twice with one Idempotency-Key, to
# the threaded instances, guarded by REDIS_ONCE.  During the first two runs a prober sends GET /ping to the
# event-loop instance, one after another, to show that its loop stays free
# while its deductions wait for the lock.  Every process it starts is stopped
# by PID on exit, whatever happens.
set -euo pipefail
bin=${1:?usage: demo-run.sh BIN_DIR}
: "${LOCKWEAVE_REDIS_URL:?run me through lw_with_redis}"

threaded=3          # inventory-service: a thread per connection
instances=4         # ... and the last one is inventory-loop
stock=1000
requests=2000
clients=32
sku=demo-sku
orders=500          # each sent twice: 2 * orders requests

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

# start_instances [SERVICE ARGS...]: the instances on free ports (each binds
# port 0 and writes the port it got), one shared database, one Redis.
start_instances() {
  local i exe
  rm -f "$work"/port.*
  for ((i = 0; i < instances; i++)); do
    exe=inventory-service
    ((i < threaded)) || exe=inventory-loop
    "$bin/$exe" --port 0 --port-file "$work/port.$i" \
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

# addresses [N]: the first N instances' HOST:PORT, comma-separated.
addresses() {
  local i list=
  for ((i = 0; i < ${1:-instances}; i++)); do
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
       "$threaded threaded instances + 1 event loop, stock $stock =="
  start_instances "$@"
  "$bin/inventory-load" --instances "$(addresses)" --requests "$requests" \
    --concurrency "$clients" --skus "$sku" --seed "$stock" --label "$label" \
    --ping "127.0.0.1:$(cat "$work/port.$threaded")" --ping-every-ms 5 \
    | tee "$work/$label.out"
  stop_instances
}

# POST /orders: each order twice at once, to two threaded instances (the
# event loop answers 501: REDIS_ONCE waits on the calling thread).
run_orders() {
  echo
  echo "== REDIS_ONCE: $orders orders of 1 unit, each sent twice with one" \
       "Idempotency-Key, $threaded threaded instances, stock $stock =="
  start_instances
  "$bin/inventory-load" --instances "$(addresses "$threaded")" \
    --orders "$orders" --concurrency "$clients" --skus "$sku" --seed "$stock" \
    --label orders | tee "$work/orders.out"
  stop_instances
}

# field FILE NAME: a number from the SUMMARY line's JSON.
field() {
  sed -n 's/^SUMMARY .*"'"$2"'":\([-0-9.]*\).*/\1/p' "$1"
}

# list FILE NAME: an array of numbers from it, one per instance, spaced.
list() {
  sed -n 's/^SUMMARY .*"'"$2"'":\[\([-0-9.,]*\)\].*/\1/p' "$1" | tr , ' '
}

row() {
  local f=$work/$1.out
  printf '%-12s %9s %7s %12s %9s %8.0f %8.1f %11.1f\n' "$2" \
    "$(field "$f" requests)" "$(field "$f" sold)" "$(field "$f" final)" \
    "$(field "$f" oversold)" "$(field "$f" rps)" "$(field "$f" p99_ms)" \
    "$(field "$f" ping_p99_ms)"
}

echo "demo: redis at $LOCKWEAVE_REDIS_URL, stock database $work/stock.db"
run unguarded --no-lock
run guarded
run_orders

echo
printf '%-12s %9s %7s %12s %9s %8s %8s %11s\n' mode requests sold \
  "final stock" oversold "req/s" "p99 ms" "/ping p99"
row unguarded "--no-lock"
row guarded "REDIS_LOCK"
echo

u=$work/unguarded.out g=$work/guarded.out
read -r -a g_ok <<<"$(list "$g" ok_by_instance)"
read -r -a g_p99 <<<"$(list "$g" p99_ms_by_instance)"
sold_threaded=$(IFS=+; echo "${g_ok[*]:0:threaded}")
echo "Without the lock, $(field "$u" oversold) units were sold that did not exist" \
     "($(field "$u" lost_updates) deductions overwritten by a concurrent one)."
echo "With REDIS_LOCK(\"stock:{sku}\", 10s, 5s): $(field "$g" sold) sold," \
     "final stock $(field "$g" final), oversold $(field "$g" oversold):" \
     "$sold_threaded by the threaded"
echo "instances and ${g_ok[threaded]} by the event loop, all four taking the same lock."
printf '%s\n' "/ping p99 is the event loop's.  With the lock, its deductions waited for it" \
  "$(printf '(p99 %.1f ms) while /ping was answered in p99 %.1f ms (max %.1f ms, %s pings):' \
     "${g_p99[threaded]}" "$(field "$g" ping_p99_ms)" "$(field "$g" ping_max_ms)" \
     "$(field "$g" pings)")" \
  "waiting for the lock never blocks the loop.  Without the lock nothing waits, and" \
  "the loop's own deductions (3 ms of blocking work each) run back to back on its" \
  "one thread: /ping queues behind them."
o=$work/orders.out
echo
echo "With REDIS_ONCE(\"order:{order_key}\", 24h): $(field "$o" orders) orders," \
     "each sent twice ($(field "$o" requests) requests), deducted" \
     "$(field "$o" deducted) units, stock $(field "$o" initial) ->" \
     "$(field "$o" final);"
echo "each order's two answers were the same ($(field "$o" same) of" \
     "$(field "$o" orders)), $(field "$o" replayed) of them the stored first" \
     "outcome (Idempotent-Replayed: true)."

# The guarded run is the promise: anything else is a bug worth a failure.
if [ "$(field "$g" sold)" != "$stock" ] || [ "$(field "$g" final)" != 0 ] \
   || [ "$(field "$g" oversold)" != 0 ]; then
  echo "demo: FAILED: the guarded run did not sell exactly $stock" >&2
  exit 1
fi
if [ "$(field "$o" deducted)" != "$(field "$o" sold)" ] \
   || [ "$(field "$o" differ)" != 0 ] || [ "$(field "$o" other)" != 0 ] \
   || [ "$(field "$o" deducted)" != "$orders" ]; then
  echo "demo: FAILED: an order was not deducted exactly once" >&2
  exit 1
fi
if [ "$(field "$u" oversold)" = 0 ]; then
  echo "demo: note: the unguarded run happened not to oversell this time"
fi
