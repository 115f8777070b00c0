# shellcheck shell=bash
# bench/lib.sh: what the benchmark scripts share.  Sourced, never run:
#   bench_build DIR TARGET...
#                          a Release build of lockweave's tree in DIR (no
#                          tests, no samples) and of the TARGETs in it
#   bench_free_port        prints a free loopback port
#   bench_wait_ping PORT   waits (5 s at most) until a server answers there
#   bench_redis_start DIR  a private redis-server on a free port, files in
#                          DIR, nothing saved: sets bench_port, bench_rpid
#   bench_redis_stop       stops it by its PID (never pkill: other servers
#                          on this machine are not ours)
#   bench_redis_ticks      its CPU so far, user + system, in clock ticks
#                          (getconf CLK_TCK a second)
#   bench_redis_calls [NAME...]
#                          commands it ran since CONFIG RESETSTAT (INFO
#                          commandstats: a script's own calls count too):
#                          of the NAMEs (as commandstats spells them), or
#                          all but the harness's own bookkeeping
#   bench_iters WORKLOAD   the caller's $u_iters, $c_iters or $s_iters for
#                          uncontended, contended or spread
#   bench_peers_copy DEST NEEDED
#                          a private copy of ../shared/peers (or
#                          $LW_PEERS_DIR) in DEST, which must hold NEEDED

bench_build() {
  local dir=$1
  shift
  cmake -S "$(dirname "${BASH_SOURCE[0]}")/.." -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DLW_BUILD_TESTS=OFF -DLW_BUILD_SAMPLES=OFF \
    >/dev/null
  cmake --build "$dir" --target "$@" >/dev/null
}

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

# shellcheck disable=SC2154 # u_iters, c_iters, s_iters: the caller's sizes
bench_iters() {
  case $1 in
  uncontended) echo "$u_iters" ;;
  contended) echo "$c_iters" ;;
  spread) echo "$s_iters" ;;
  esac
}

# The harness builds its C driver and installs npm packages next to itself:
# a private copy keeps the shared folder untouched.
bench_peers_copy() {
  local peers=${LW_PEERS_DIR:-$root/../shared/peers}
  [[ -f $peers/$2 ]] || {
    echo "bench: no peer harness at $peers (set LW_PEERS_DIR)" >&2
    exit 2
  }
  mkdir -p "$1"
  cp -r "$peers/." "$1/"
  chmod -R u+w "$1"
}

bench_redis_stop() {
  if [[ -n ${bench_rpid:-} ]]; then
    kill "$bench_rpid" 2>/dev/null || true
    wait "$bench_rpid" 2>/dev/null || true
  fi
  bench_rpid=
}

bench_redis_ticks() {
  awk '{print $14 + $15}' "/proc/$bench_rpid/stat"
}

bench_redis_calls() {
  redis-cli -p "$bench_port" INFO commandstats | tr -d '\r' |
    awk -F'[:=,]' -v only=" $* " '
      /^cmdstat_/ {
        name = substr($1, 9)
        if (only == "  ")
          keep = name !~ /^(config[|]resetstat|info|command[|]docs|flushall|script[|]load)$/
        else
          keep = index(only, " " name " ") > 0
        if (keep) n += $3
      }
      END { print n + 0 }'
}
