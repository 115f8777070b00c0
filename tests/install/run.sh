#!/usr/bin/env bash
# Install the build into a temporary prefix, then build and run small
# consumer projects against the installed files only:
#   1. CMake: find_package(lockweave CONFIG REQUIRED), lockweave::runtime
#      (and lockweave::runtime_static);
#   2. pkg-config --cflags --libs lockweave, compiled by hand;
#   3. if the package ships lockweave_generate(), a project weaving its own
#      annotated function with it;
# and that lockweave-ctl runs from the prefix and both commands' man pages
# are installed and render without warnings.
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

step "pkg-config consumer"
export PKG_CONFIG_PATH=$(dirname "$pc_file")
flags=$(pkg-config --cflags --libs lockweave)
echo "pkg-config --cflags --libs lockweave: $flags"
# shellcheck disable=SC2086  # the flags are meant to split
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer_pc" \
  "$here/consumer/consumer.c" $flags
"$with_redis" "$work/consumer_pc"

if [[ -f $(dirname "$cfg_file")/LockweaveGenerate.cmake ]]; then
  step "CMake consumer weaving with lockweave_generate()"
  "$cmake_cmd" -S "$here/consumer_gen" -B "$work/consumer_gen" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
  "$cmake_cmd" --build "$work/consumer_gen"
  "$with_redis" "$work/consumer_gen/consumer_gen"
else
  step "no LockweaveGenerate.cmake installed: generator consumer not built"
fi

step "install consumers: ok"
rm -rf "$work"
