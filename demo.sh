#!/usr/bin/env bash
# ./demo.sh — why lockweave exists, in about a minute.
#
# Installs what is missing (Debian packages), builds the inventory sample
# (Release), starts its own redis-server and four service instances on free
# loopback ports, all sharing one SQLite stock file — three threaded ones
# (inventory-service) and one on an event loop (inventory-loop) — seeds a SKU
# with 1000 units and fires 2000 one-unit deductions from 32 clients at all
# four: first with --no-lock (the read-check-write races and oversells), then
# with REDIS_LOCK (exactly 1000 sold, stock 0), while GET /ping probes the
# event loop; then 500 orders, each sent twice with one Idempotency-Key to
# the threaded instances, under REDIS_ONCE (500 units deducted, every copy
# answered alike).  Prints the results, then stops everything it started,
# by PID.
#
# Environment: LW_DEMO_BUILD_DIR (default ./build/demo).
set -euo pipefail
cd "$(dirname "$0")"
root=$PWD
build=${LW_DEMO_BUILD_DIR:-$root/build/demo}

# ---- 1. packages: the same helper as ./test.sh (installs only what is
#         missing; apt-get update once, only then).
.ci/ensure-packages.sh cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server pkg-config libmicrohttpd-dev \
  libsqlite3-dev libevent-dev

# ---- 2. build: only what the demo runs.
echo "demo: building (Release) in ${build#$root/}"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLW_BUILD_TESTS=ON -DLW_BUILD_SAMPLES=ON -DLW_BUILD_BENCH=OFF \
  >"$build/demo-configure.log" 2>&1 \
  || { cat "$build/demo-configure.log"; exit 1; }
cmake --build "$build" --target inventory-service inventory-loop inventory-load \
  lw_with_redis \
  >"$build/demo-build.log" 2>&1 \
  || { cat "$build/demo-build.log"; echo "demo: build failed" >&2; exit 1; }

# ---- 3. run: lw_with_redis starts a private redis-server on a free loopback
#         port, runs the demo with LOCKWEAVE_REDIS_URL pointing at it, and
#         stops it by its PID afterwards.
exec "$build/tests/harness/lw_with_redis" -- \
  "$root/samples/inventory/demo-run.sh" "$build/samples/inventory"
