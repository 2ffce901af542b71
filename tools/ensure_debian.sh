#!/usr/bin/env bash
# What `make test` needs from Debian, made sure of before any long install: exit 0 when one of the
# commands given is on PATH; else install the package when this user may (root, or sudo without a
# password); else print the one command to run and exit 1.
#   NEED="the browser tests need Chromium" FOR="the browser tests" OR_SET=ATTNSCOPE_CHROMIUM \
#     ensure_debian.sh PACKAGE COMMAND...
set -euo pipefail
package=$1
shift
found() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 && return 0; done
  return 1
}
found "$@" && exit 0
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "make test: $NEED; install it with: sudo apt-get install -y $package" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make test: $NEED and this machine has no apt-get; install $package, or set $OR_SET to its path" >&2
  exit 1
fi
echo "make test: installing Debian's $package for $FOR (apt-get)…" >&2
export DEBIAN_FRONTEND=noninteractive
{ "${as_root[@]}" apt-get install -y -q "$package" || { "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q "$package"; }; } >/dev/null \
  || { echo "make test: apt-get could not install $package; run: sudo apt-get install -y $package" >&2; exit 1; }
found "$@" || { echo "make test: $package is still not on PATH after apt-get; install it, or set $OR_SET" >&2; exit 1; }
