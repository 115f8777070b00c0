# shellcheck shell=bash
# bench/lib.sh: what the benchmark scripts share.  Sourced, never run:
#   bench_free_port        prints a free loopback port
#   bench_wait_ping PORT   waits (5 s at most) until a server answers there
#   bench_redis_start DIR  a private redis-server on a free port, files in
#                          DIR, nothing saved: sets bench_port, bench_rpid
#   bench_redis_stop       stops it by its PID (never pkill: other servers
#                          on this machine are not ours)

bench_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_wait_ping() {
  for _ in $(seq 100); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "bench: nothing answers on port $1" >&2
  return 1
}

bench_redis_start() {
  bench_port=$(bench_free_port)
  redis-server --bind 127.0.0.1 --port "$bench_port" --save '' \
    --appendonly no --dir "$1" --logfile "$1/redis.log" --daemonize no &
  bench_rpid=$!
  bench_wait_ping "$bench_port"
}

bench_redis_stop() {
  if [[ -n ${bench_rpid:-} ]]; then
    kill "$bench_rpid" 2>/dev/null || true
    wait "$bench_rpid" 2>/dev/null || true
  fi
  bench_rpid=
}
