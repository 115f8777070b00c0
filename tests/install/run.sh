#!/usr/bin/env bash
# Install the build into a temporary prefix, then build and run small
# consumer projects against the installed files only:
#   1. CMake: find_package(lockweave CONFIG REQUIRED), lockweave::runtime
#      (and lockweave::runtime_static); a C++17 program through
#      <lockweave.hpp> and, with lockweave_generate(), a woven member
#      function, when there is a C++ compiler;
#   2. pkg-config --cflags --libs lockweave, compiled by hand, and
#      --static --cflags --libs with -static; --cflags is the header's
#      directory alone, the rpath and --variable=lockweave_gen are the
#      installed paths, normalized;
#   3. if the package ships lockweave_generate(), a project weaving its own
#      annotated function with it, and one weaving a static library whose
#      header declares an annotated function, used by a program that links
#      only that library;
# that lockweave-ctl runs from the prefix and both commands' man pages are
# installed and render without warnings; and that README.md's build lines
# configure lockweave without its tests, samples and benchmarks.
# Each program runs against a private redis-server (lw_with_redis).
#
# usage: run.sh CMAKE BUILD_DIR SOURCE_DIR WORK_DIR WITH_REDIS CC GENERATOR
set -euo pipefail

cmake_cmd=$1 build_dir=$2 src_dir=$3 work=$4 with_redis=$5 cc=$6 generator=$7
here=$src_dir/tests/install

step() { printf '\n== %s\n' "$*"; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step "cmake --install into $prefix"
"$cmake_cmd" --install "$build_dir" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
test -f "$prefix/include/lockweave.h"

pc_file=$(find "$prefix" -name lockweave.pc -print -quit)
cfg_file=$(find "$prefix" -name lockweaveConfig.cmake -print -quit)
if [[ -z $pc_file || -z $cfg_file ]]; then
  echo "installed tree lacks lockweave.pc or lockweaveConfig.cmake:" >&2
  find "$prefix" -type f >&2
  exit 1
fi
echo "pkg-config file: ${pc_file#$prefix/}"
echo "CMake package:   ${cfg_file#$prefix/}"

# Nothing from the source or build tree may leak into the consumers: they
# see only the prefix (and the system).
# Installed programs run as they are: no LD_LIBRARY_PATH, from any
# directory.
unset LD_LIBRARY_PATH
step "installed lockweave-gen runs"
(cd / && "$prefix/bin/lockweave-gen" --version)

step "installed lockweave-ctl runs"
(cd / && "$prefix/bin/lockweave-ctl" --version)
# An empty server: nothing listed, exit status 1.
status=0
(cd / && "$with_redis" "$prefix/bin/lockweave-ctl" list) || status=$?
if [[ $status != 1 ]]; then
  echo "installed lockweave-ctl list on an empty server: status $status, want 1" >&2
  exit 1
fi

step "man pages"
for page in lockweave-ctl.1 lockweave-gen.1; do
  file=$(find "$prefix" -path "*/man1/$page" -print -quit)
  if [[ -z $file ]]; then
    echo "$page is not installed under $prefix/.../man1" >&2
    exit 1
  fi
  echo "${file#$prefix/}"
  # groff -ww: every warning; the page must render without one.
  warnings=$(groff -man -ww -z "$file" 2>&1)
  if [[ -n $warnings ]]; then
    echo "$page: $warnings" >&2
    exit 1
  fi
done

step "CMake consumer (find_package)"
"$cmake_cmd" -S "$here/consumer" -B "$work/consumer" -G "$generator" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
"$cmake_cmd" --build "$work/consumer"
"$with_redis" "$work/consumer/consumer"
"$with_redis" "$work/consumer/consumer_static"

if command -v c++ >/dev/null; then
  step "C++ consumer (find_package): <lockweave.hpp>, a woven member function"
  "$cmake_cmd" -S "$here/consumer_cxx" -B "$work/consumer_cxx" -G "$generator" \
    -DCMAKE_PREFIX_PATH="$prefix"
  "$cmake_cmd" --build "$work/consumer_cxx"
  "$with_redis" "$work/consumer_cxx/consumer_cxx"
else
  step "no C++ compiler: C++ consumer not built"
fi

step "pkg-config consumer"
export PKG_CONFIG_PATH=$(dirname "$pc_file")
lib_dir=$(dirname "$(find "$prefix" -name liblockweave.so -print -quit)")
cflags=$(pkg-config --cflags lockweave)
libs=$(pkg-config --libs lockweave)
echo "pkg-config --cflags lockweave: $cflags"
echo "pkg-config --libs lockweave:   $libs"
# <lockweave.h> needs its own directory and nothing else: no hiredis -I (its
# sds.h, read.h, async.h would shadow a project's own), no -D (hiredis'
# -D_FILE_OFFSET_BITS=64 changes off_t on 32-bit targets).
for flag in $cflags; do
  if [[ $flag != "-I$prefix/include" ]]; then
    echo "pkg-config --cflags lockweave gives $flag; want only -I$prefix/include" >&2
    exit 1
  fi
done
# The rpath names the library's directory as it is: PREFIX/lib, not
# PREFIX/lib/pkgconfig/../..//lib.
rpath_re='-Wl,-rpath,([^ ]*)'
if [[ ! $libs =~ $rpath_re || ${BASH_REMATCH[1]} != "$lib_dir" ]]; then
  echo "pkg-config --libs lockweave: want the rpath -Wl,-rpath,$lib_dir" >&2
  exit 1
fi
# shellcheck disable=SC2086  # the flags are meant to split
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer_pc" \
  "$here/consumer/consumer.c" $cflags $libs
runpath=$(readelf -d "$work/consumer_pc" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p')
if [[ $runpath != "$lib_dir" ]]; then
  echo "consumer_pc's run path is '$runpath', want '$lib_dir'" >&2
  exit 1
fi
"$with_redis" "$work/consumer_pc"

step "pkg-config --static consumer"
static_flags=$(pkg-config --static --cflags --libs lockweave)
echo "pkg-config --static --cflags --libs lockweave: $static_flags"
# Everything linked statically: every library the archive needs must be
# named.  glibc warns about getaddrinfo and dlopen in a static program.
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -static -o "$work/consumer_pc_static" \
  "$here/consumer/consumer.c" $static_flags 2>"$work/static.log" ||
  { cat "$work/static.log" >&2; exit 1; }
"$with_redis" "$work/consumer_pc_static"

step "pkg-config --variable=lockweave_gen lockweave"
gen=$(pkg-config --variable=lockweave_gen lockweave)
echo "$gen"
if [[ $gen != "$prefix/bin/lockweave-gen" || ! -x $gen ]]; then
  echo "want the installed $prefix/bin/lockweave-gen, executable" >&2
  exit 1
fi
(cd / && "$gen" --version)

if [[ -f $(dirname "$cfg_file")/LockweaveGenerate.cmake ]]; then
  step "CMake consumer weaving with lockweave_generate()"
  "$cmake_cmd" -S "$here/consumer_gen" -B "$work/consumer_gen" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
  "$cmake_cmd" --build "$work/consumer_gen"
  "$with_redis" "$work/consumer_gen/consumer_gen"

  step "CMake consumer of a static library woven with lockweave_generate()"
  "$cmake_cmd" -S "$here/consumer_lib" -B "$work/consumer_lib" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
  "$cmake_cmd" --build "$work/consumer_lib"
  "$with_redis" "$work/consumer_lib/consumer_lib"
else
  step "no LockweaveGenerate.cmake installed: generator consumer not built"
fi

step "README.md's build lines configure no tests, samples or benchmarks"
readme=$src_dir/README.md
# The configure line (continued lines joined), run on a scratch build tree.
configure=$(awk '/^cmake -S \. -B build / {
    line = $0
    while (line ~ /\\$/ && (getline more) > 0) { sub(/\\$/, "", line); line = line " " more }
    print line; exit }' "$readme")
configure=${configure%%#*}
echo "$configure"
if [[ -z $configure ]] || ! grep -q '^cmake --build build' "$readme" ||
   ! grep -q 'cmake --install build' "$readme"; then
  echo "README.md lacks 'cmake -S . -B build ...', 'cmake --build build' or" \
    "'cmake --install build'" >&2
  exit 1
fi
read -ra args <<<"$configure"
args=("${args[@]:5}")
[[ " ${args[*]} " == *" -G "* ]] || args+=(-G "$generator")
"$cmake_cmd" -S "$src_dir" -B "$work/readme" -DCMAKE_C_COMPILER="$cc" "${args[@]}" \
  >"$work/readme.log" || { cat "$work/readme.log"; exit 1; }
for dir in tests samples bench fuzz; do
  if [[ -e $work/readme/$dir ]]; then
    echo "README.md's configure line builds $dir/ too (slow); it should not" >&2
    exit 1
  fi
done
if [[ ! -e $work/readme/gen ]]; then
  echo "README.md's configure line leaves out lockweave-gen" >&2
  exit 1
fi

step "install consumers: ok"
rm -rf "$work"
