#!/usr/bin/env bash
# Build attnscope's wheel and prove it works on its own: install it into an empty venv (CPU torch
# first, so that nothing pulls the CUDA build) and run the worked example, which needs the
# package data (the article's YAML inputs). Run by .ci/run; usage: tools/check_wheel.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m pip install -q build
"$PY" -m build -q --wheel --outdir "$work/dist" . >/dev/null
wheel=$(ls "$work"/dist/attnscope-*.whl)
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "torch==2.13.0"
"$work/venv/bin/pip" install -q "$wheel"
cd "$work"  # away from the source tree: only the installed wheel can be imported
out=$("$work/venv/bin/attnscope" explain --example three-tokens)
grep -q "0.3057" <<<"$out" || { echo "check_wheel: the worked example did not print its weights" >&2; exit 1; }
"$work/venv/bin/python" - <<'PY'
import importlib.resources as r
import attnscope
assert r.files("attnscope").joinpath("py.typed").is_file(), "py.typed missing from the wheel"
print("wheel ok:", attnscope.__version__, attnscope.__file__)
PY
