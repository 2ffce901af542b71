#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (Playwright cannot download its browsers here).
# Exit 0 when chromium is there (or $ATTNSCOPE_CHROMIUM names it); else install Debian's package
# when this user may (root, or sudo without a password); else print the one command to run, exit 1.
set -euo pipefail
[ -n "${ATTNSCOPE_CHROMIUM:-}" ] && [ -x "$ATTNSCOPE_CHROMIUM" ] && exit 0
NEED="the browser tests need Chromium" FOR="the browser tests" OR_SET=ATTNSCOPE_CHROMIUM \
  exec /bin/bash "${0%/*}/ensure_debian.sh" chromium chromium chromium-browser
