#!/usr/bin/env bash
# ensure-packages.sh PACKAGE...: install the Debian packages that are missing,
# and only those.  apt-get update runs once, and only when something must be
# installed, so a prepared machine needs neither network nor root.
set -euo pipefail

missing=()
for pkg in "$@"; do
  if command -v dpkg-query >/dev/null 2>&1; then
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$pkg")
  fi
done
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "ensure-packages: not a Debian system; assuming $* are present" >&2
  exit 0
fi
((${#missing[@]} == 0)) && exit 0

echo "ensure-packages: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "ensure-packages: need root (or sudo) to install ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y \
  --no-install-recommends "${missing[@]}"
