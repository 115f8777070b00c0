#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [TARGET...]: build the libFuzzer targets (clang,
# ASan+UBSan) in build/fuzz, replay the saved crashes in fuzz/regress/, then
# fuzz each target for SECONDS (default 60) from a scratch copy of its seed
# corpus (the tree is never written).  Exits non-zero when any target
# crashes, leaks, times out or hits its memory limit; the input that did it is
# kept under build/fuzz/artifacts/<target>/ with the command to replay it.
#
# Environment: LW_FUZZ_JOBS targets at once (default 2), CC (default
# clang-14), LW_FUZZ_KEEP=1 keeps the scratch corpora (new inputs worth
# committing to fuzz/corpus/).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(annot keytmpl url reply)
jobs=${LW_FUZZ_JOBS:-2}
cc=${CC:-clang-14}
build=build/fuzz
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

mkdir -p "$build"
echo "== fuzz: configure and build $build with $cc"
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLW_WERROR=ON -DLW_FUZZ=ON \
  -DLW_SANITIZE=address,undefined -DLW_BUILD_TESTS=OFF \
  -DLW_BUILD_SAMPLES=OFF -DLW_BUILD_BENCH=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --parallel "$jobs" \
  --target "${targets[@]/#/fuzz_}" >"$build/build.log" 2>&1 ||
  { cat "$build/build.log"; exit 1; }

scratch=$(mktemp -d /tmp/lw-fuzz.XXXXXX)
if [[ ${LW_FUZZ_KEEP:-} == 1 ]]; then
  echo "== fuzz: scratch corpora kept in $scratch"
else
  trap 'rm -rf "$scratch"' EXIT
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one TARGET: replay regressions, then fuzz; output in $scratch/T.log.
fuzz_one() {
  local t=$1 bin=$build/fuzz/fuzz_$1 art=$build/artifacts/$1
  local log=$scratch/$t.log corpus=$scratch/corpus-$t dict=()
  mkdir -p "$art" "$corpus"
  cp fuzz/corpus/"$t"/* "$corpus"/
  [[ -f fuzz/dict/$t.dict ]] && dict=(-dict=fuzz/dict/"$t".dict)
  {
    if [[ -d fuzz/regress/$t ]]; then
      "$bin" -runs=0 -artifact_prefix="$art/" fuzz/regress/"$t" || return 1
    fi
    # -close_fd_mask=2: the generator's diagnostics for every bad input
    # would drown the log; libFuzzer and the sanitizers keep a copy of
    # stderr for their reports.
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -close_fd_mask=2 \
      -artifact_prefix="$art/" "${dict[@]}" "$corpus"
  } >"$log" 2>&1
}

pids=() names=() failed=()
for t in "${targets[@]}"; do
  # At most $jobs at once: each wants a core (fuzz_reply two).
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "== fuzz: $t for ${seconds}s"
  fuzz_one "$t" &
  pids+=($!) names+=("$t")
done
for i in "${!pids[@]}"; do
  t=${names[$i]}
  if wait "${pids[$i]}"; then
    echo "== fuzz: $t ok: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch/$t.log" | tail -1)"
  else
    failed+=("$t")
    echo "== fuzz: $t FAILED; last lines of its log:"
    tail -60 "$scratch/$t.log"
    for a in "$build"/artifacts/"$t"/*; do
      [[ -e $a ]] || continue
      echo "   input kept: $a"
      echo "   replay:     $build/fuzz/fuzz_$t $a"
    done
  fi
done
if ((${#failed[@]})); then
  echo "== fuzz: failed: ${failed[*]} (add the input to fuzz/regress/<target>/ once fixed)"
  exit 1
fi
echo "== fuzz: all targets ran ${seconds}s without a finding"
