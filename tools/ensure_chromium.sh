#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (Playwright cannot download its browsers here).
# Exit 0 when chromium is there (or $ATTNSCOPE_CHROMIUM names it); else install Debian's package
# when this user may (root, or sudo without a password); else print the one command to run, exit 1.
set -euo pipefail
found() {
  [ -n "${ATTNSCOPE_CHROMIUM:-}" ] && [ -x "$ATTNSCOPE_CHROMIUM" ] && return 0
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1
}
found && exit 0
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "make test: the browser tests need Chromium; install it with: sudo apt-get install -y chromium" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make test: the browser tests need Chromium and this machine has no apt-get; install chromium, or set ATTNSCOPE_CHROMIUM to its path" >&2
  exit 1
fi
echo "make test: installing Debian's chromium for the browser tests (apt-get)…" >&2
export DEBIAN_FRONTEND=noninteractive
{ "${as_root[@]}" apt-get install -y -q chromium || { "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q chromium; }; } >/dev/null \
  || { echo "make test: apt-get could not install chromium; run: sudo apt-get install -y chromium" >&2; exit 1; }
found || { echo "make test: chromium is still not on PATH after apt-get; install it, or set ATTNSCOPE_CHROMIUM" >&2; exit 1; }
