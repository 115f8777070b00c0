#!/usr/bin/env bash
# bench/micro/run.sh [--quick] — lockweave's own micro-benchmarks.
#
#   1. re-entering a held lock (ns per pair; Redis must see no command)
#   2. wake-up latency, release -> next waiter's return (thread, process)
#   3. the watchdog holding 10 000 one-second leases (renewals/s, CPU, RSS)
#   4. woven wrapper vs hand-written guard calls (callgrind instructions)
#   5. lockweave-gen on a file without annotation, and on a large real C file
#      (Debian's duktape.c amalgamation) with one annotation, vs clang
#      -fsyntax-only on the same file
#
# Builds Release in build/bench-micro, gives every measured program its own
# redis-server (tests/harness lw_with_redis: free loopback port, stopped by
# PID), prints one table and writes the JSON lines to
# build/bench-micro/micro.jsonl.  --quick: fewer samples, 2 000 leases for 5 s.
# Timings vary on a shared 2-core machine: run it twice before believing a
# near miss; the instruction counts of 4 do not vary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${LW_MICRO_BUILD_DIR:-$root/build/bench-micro}
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
qflag=()
((quick)) && qflag=(--quick)

# ---- packages (only what is missing; the project's own helper)
"$root/.ci/ensure-packages.sh" cmake ninja-build gcc clang-14 libclang-dev \
  libhiredis-dev libssl-dev redis-server valgrind hyperfine duktape-dev jq

# ---- build
echo "micro: building (Release) in ${build#$root/}" >&2
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLW_BUILD_TESTS=ON -DLW_BUILD_SAMPLES=OFF -DLW_BUILD_BENCH=ON \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --target mb_reentry mb_wake mb_watchdog mb_wrap_woven \
  mb_wrap_hand mb_wrap_lwlock lockweave-gen lw_with_redis \
  >"$build/build.log" 2>&1 || { cat "$build/build.log"; exit 1; }

bin=$build/bench/micro
with_redis=$build/tests/harness/lw_with_redis
gen=$build/gen/lockweave-gen
out=$build/micro.jsonl
: >"$out"

# A result line from the shell side, same fields as mb_emit() in C.
emit() { # bench metric value unit target(""=none) ok(true|false|null) note
  jq -cn --arg b "$1" --arg m "$2" --argjson v "$3" --arg u "$4" --arg t "$5" \
    --argjson ok "$6" --arg n "$7" \
    '{bench:$b,metric:$m,value:$v,unit:$u,target:(if $t=="" then null else $t end),ok:$ok,note:$n}' \
    >>"$out"
}

# ---- 1-3: the C programs print their own lines
for b in reentry wake watchdog; do
  echo "micro: $b" >&2
  "$with_redis" -- "$bin/mb_$b" "${qflag[@]}" 2>>"$build/$b.log" >>"$out" \
    || echo "micro: $b reported a failure (see $build/$b.log)" >&2
done

# ---- 4: instructions inside mb_section() only (--toggle-collect), each
#         variant against a fresh server so fence numbers match.
echo "micro: wrapper (callgrind)" >&2
n=$((quick ? 500 : 2000))
mkdir -p "$build/callgrind"
declare -A ir
for v in woven hand lwlock; do
  for m in acquire reenter; do
    f=$build/callgrind/$v.$m
    "$with_redis" -- valgrind --tool=callgrind --toggle-collect=mb_section \
      --callgrind-out-file="$f.out" "$bin/mb_wrap_$v" "$m" "$n" >"$f.log" 2>&1 \
      || { echo "micro: callgrind $v $m failed:" >&2; tail "$f.log" >&2; exit 1; }
    ir[$v.$m]=$(awk '/^totals:/ {print $2}' "$f.out")
  done
done
for m in acquire reenter; do
  w=${ir[woven.$m]} h=${ir[hand.$m]} l=${ir[lwlock.$m]}
  pct=$(awk -v w="$w" -v h="$h" 'BEGIN {printf "%.3f", (w - h) * 100 / h}')
  ok=$(awk -v p="$pct" 'BEGIN {print (p <= 2) ? "true" : "false"}')
  emit wrapper "${m}_extra_instr_pct" "$pct" "%" "<= 2" "$ok" \
    "woven $((w / n)) vs hand-written guard calls $((h / n)) vs lw_lock+snprintf $((l / n)) instructions per call ($n calls, client side, round trip excluded by nature)"
done

# ---- 5: the generator, timed by hyperfine (no shell, warm page cache)
echo "micro: generator (hyperfine)" >&2
gdir=$build/gen-bench
mkdir -p "$gdir"
runs=$((quick ? 5 : 15))
median_ms() { jq '.results[0].median * 1000' "$1"; }
time_cmd() { # json-file command...
  local j=$1
  shift
  hyperfine -N --warmup 3 --runs "$runs" --export-json "$j" "$*" >/dev/null 2>&1
  median_ms "$j"
}

plain_flags="-I$root/include -I$root/runtime"
t_plain=$(time_cmd "$gdir/plain.json" \
  "$gen $root/runtime/conn.c -o $gdir/conn.lw.c -- $plain_flags")
ok=$(awk -v t="$t_plain" 'BEGIN {print (t <= 5) ? "true" : "false"}')
emit generator no_annotation_ms "$t_plain" ms "<= 5" "$ok" \
  "median of $runs: runtime/conn.c (no REDIS_LOCK; prescan follows its includes) -> one-line pass-through"

# What part of that is only loading libclang: an empty main() linked to it.
libclang=$(sed -n 's/^LW_LIBCLANG_LIBRARY:[A-Z]*=//p' "$build/CMakeCache.txt")
echo 'int main(void) { return 0; }' |
  cc -x c - -x none -o "$gdir/empty_libclang" -Wl,--no-as-needed "$libclang" \
    -Wl,-rpath,"$(dirname "$libclang")"
t_empty=$(time_cmd "$gdir/empty.json" "$gdir/empty_libclang")
emit generator empty_program_linked_to_libclang_ms "$t_empty" ms "" null \
  "median of $runs: startup cost alone (dynamic loading + static initialisers of libclang/libLLVM)"

# The big real file: duktape 2.7's amalgamation as Debian ships it (~100k
# lines, 3.6 MB), plus lockweave.h and one annotated function at the end.
duk=/usr/share/duktape/duktape.c
big=$gdir/duktape_annotated.c
{
  echo '#include <lockweave.h>'
  cat "$duk"
  printf '\n/* lockweave micro-benchmark: the one annotation */\n'
  printf 'REDIS_LOCK("duk:{n}", 10s, 5s)\nint lw_bench_annotated(int n)\n{\n    return n + 1;\n}\n'
} >"$big"
big_flags="-I$root/include -I$(dirname "$duk") -w"
t_gen=$(time_cmd "$gdir/big_gen.json" "$gen $big -o $gdir/duktape.lw.c -- $big_flags")
t_clang=$(time_cmd "$gdir/big_clang.json" "clang-14 -fsyntax-only $big_flags $big")
ratio=$(awk -v g="$t_gen" -v c="$t_clang" 'BEGIN {printf "%.3f", g / c}')
ok=$(awk -v r="$ratio" 'BEGIN {print (r <= 1.2) ? "true" : "false"}')
# The woven copy must still compile and contain the wrapper: a fast wrong
# answer is no answer.
woven_ok=no
if grep -q 'lw_guard_enter' "$gdir/duktape.lw.c" &&
  clang-14 -fsyntax-only $big_flags "$gdir/duktape.lw.c" 2>/dev/null; then
  woven_ok=yes
fi
emit generator big_file_vs_clang_ratio "$ratio" x "<= 1.2" "$ok" \
  "medians of $runs: lockweave-gen ${t_gen} ms vs clang-14 -fsyntax-only ${t_clang} ms on $duk ($(wc -l <"$duk") lines) + 1 annotation; woven copy compiles: $woven_ok"
t_bigplain=$(time_cmd "$gdir/big_plain.json" "$gen $duk -o $gdir/duktape_plain.lw.c -- $big_flags")
emit generator big_file_no_annotation_ms "$t_bigplain" ms "" null \
  "median of $runs: the same 3.6 MB file without annotation (prescan only)"

# ---- the table
echo
printf '%-10s %-40s %14s  %-14s %s\n' bench metric value target met
jq -r '[.bench, .metric, ((.value * 100 | round) / 100 | tostring) + " " + .unit,
        (.target // "-"), (if .ok == null then "-" elif .ok then "yes" else "NO" end)]
       | @tsv' "$out" |
  while IFS=$'\t' read -r b m v t k; do
    printf '%-10s %-40s %14s  %-14s %s\n' "$b" "$m" "$v" "$t" "$k"
  done
echo
echo "JSON lines (with notes): ${out#$root/}"
cat "$out"
