#!/usr/bin/env bash
# tests/faults/run.sh [--build DIR] [--soak MINUTES] [CASE...]
#
# Runs the fault cases (default: all of `lw_faults --list`) one after the
# other and prints a table of sections, faults and violations per case.
#   no --soak        the short version (what ctest -L faults runs)
#   --soak MINUTES   MINUTES in all, split evenly over the fault cases given
#                    (the two self-tests keep a short run: they only prove
#                    the checker can see a violation)
# Builds lw_faults in DIR (default build/faults) first.  Records and the
# table (results.tsv) go to DIR/tests/faults/<short|soak>-<time>/.
# Exits non-zero if any case failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build/faults
soak=""
cases=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --soak) soak=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) cases+=("$1"); shift ;;
  esac
done
if [[ -n $soak && ! $soak =~ ^[0-9]+$ ]]; then
  echo "run.sh: --soak takes whole minutes" >&2
  exit 2
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DLW_WERROR=ON >/dev/null
fi
cmake --build "$build" --target lw_faults lw_faults_check lw_faults_worker \
  lockweave-ctl >/dev/null
bin=$build/tests/faults
ctl=$build/tools/ctl/lockweave-ctl
((${#cases[@]})) || mapfile -t cases < <("$bin/lw_faults" --list)

nfault=0
for c in "${cases[@]}"; do [[ $c == selftest-* ]] || nfault=$((nfault + 1)); done
per=6
if [[ -n $soak ]]; then
  per=$((soak * 60 / (nfault ? nfault : 1)))
  ((per >= 10)) || per=10
fi
out=$bin/$([[ -n $soak ]] && echo soak || echo short)-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
results=$out/results.tsv
echo "fault runs: ${#cases[@]} cases, ${per} s each (self-tests 6 s); records in $out"

failed=()
for c in "${cases[@]}"; do
  s=$per
  [[ $c == selftest-* ]] && s=6
  echo "== $c (${s} s)"
  if ! "$bin/lw_faults" --case "$c" --seconds "$s" --out "$out/$c" \
      --ctl "$ctl" --results "$results"; then
    failed+=("$c")
  fi
done
echo
column -t -s $'\t' "$results" 2>/dev/null || cat "$results"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all cases passed"
