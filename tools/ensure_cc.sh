#!/usr/bin/env bash
# The compiled-loop tests (tests/attribution/test_pair_norms.py, test_factored.py) build GlobEnc's and
# ALTI's pair loop with the machine's C compiler, as attnscope does for its users on first use.
# Exit 0 when one is there ($CC, cc or gcc); else install Debian's gcc when this user may (root, or
# sudo without a password); else print the one command to run, exit 1.
set -euo pipefail
[ -n "${CC:-}" ] && command -v "$CC" >/dev/null 2>&1 && exit 0
NEED="the compiled-loop tests need a C compiler" FOR="the compiled-loop tests" OR_SET=CC \
  exec /bin/bash "${0%/*}/ensure_debian.sh" gcc cc gcc
