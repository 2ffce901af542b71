"""The size of src/attnscope in lines of Python, like for like with the count issue 24 was filed
against (32,263 lines at commit 006afdc, 1 Dec 2026).

    python tools/package_size.py            # the working tree against 006afdc
    python tools/package_size.py --base REV # against another commit

Issues 25-29, filed after issue 24, added features as new files (attribution, faithfulness, lenses,
circuits, patching, shards, streaming, multilingual-e5, the string catalogues, ...). Like for like
is the package without those files: every .py line under src/attnscope except the files that did
not exist at the base commit and belong to one of those features (FEATURE_FILES). Lines they added
to files that existed before still count against the package, so the comparison errs against it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "src/attnscope"
FILING = "006afdc"

#: the files of issues 25-29's features, relative to src/attnscope (counted only where new since the base)
FEATURE_FILES = re.compile(
    r"^(attribution|faithfulness|lens|circuits|patching|i18n|reference)/"
    r"|^analysis/(shards|exact|fingerprint|settings|streamed|norm_report|norm_shares|decoder_copying)\.py$"
    r"|^models/(e5_file|e5_model|e5_tokenizer|streaming|placement|precision|reasons)\.py$"
    r"|^cli/(lens|lens_tuned|circuit|evaluate_attribution|explain_attribution|explain_circuit)\.py$"
    r"|^explain/(attribution_doc|attribution_labels|attribution_values|circuit_doc|circuit_values|places)\.py$"
    r"|^viewer/(attribution_view|lens_view)\.py$|^check/(classroom|rollout)\.py$"
    r"|^trace/(memory|replay|derived)\.py$|^kernels/derived\.py$|^plot/attribution\.py$"
    r"|^(pieces|cache|wording)\.py$")


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=FILING, help=f"the commit to compare with (default {FILING})")
    args = ap.parse_args()
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", args.base, PACKAGE], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    at_base = {p[len(PACKAGE) + 1:] for p in listed if p.endswith(".py")}
    base_lines = sum(len(subprocess.run(["git", "show", f"{args.base}:{PACKAGE}/{p}"], cwd=ROOT, check=True,
                                        capture_output=True, text=True).stdout.splitlines()) for p in sorted(at_base))
    now = {p.relative_to(ROOT / PACKAGE).as_posix(): lines(p) for p in (ROOT / PACKAGE).rglob("*.py")}
    features = {p: n for p, n in now.items() if p not in at_base and FEATURE_FILES.search(p)}
    total, feature_lines = sum(now.values()), sum(features.values())
    like = total - feature_lines
    print(f"src/attnscope at {args.base}: {base_lines:,} lines of Python in {len(at_base)} files")
    print(f"now: {total:,} lines in {len(now)} files, of which issues 25-29's new feature files "
          f"{feature_lines:,} in {len(features)}")
    print(f"like for like: {like:,} lines, {like - base_lines:+,} against {args.base}")


if __name__ == "__main__":
    main()
