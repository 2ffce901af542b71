"""The size of src/attnscope in lines of Python, like for like with the count issue 24 was filed
against (32,263 lines at commit 006afdc, 1 Dec 2026).

    python tools/package_size.py            # the working tree against 006afdc
    python tools/package_size.py --base REV # against another commit

It also splits both counts by kind of line (code, docstring, comment, blank).

Issues 25-29, filed after issue 24, added features as new files (attribution, faithfulness, lenses,
circuits, patching, shards, streaming, multilingual-e5, the string catalogues, ...). Like for like
is the package without those files: every .py line under src/attnscope except the files that did
not exist at the base commit and belong to one of those features (FEATURE_FILES). Lines they added
to files that existed before still count against the package, so the comparison errs against it.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import tokenize
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


def kinds(source: str) -> dict[str, int]:
    """The lines of one module by kind: blank, docstring (any string statement), comment (a line
    with a comment and no code) and code (the rest). Each line counts once."""
    n = len(source.splitlines())
    blank = {i for i, line in enumerate(source.splitlines(), 1) if not line.strip()}
    doc: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            doc |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    code: set[int] = set()
    comment: set[int] = set()
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comment.add(tok.start[0])
        elif tok.type not in skip:
            code |= set(range(tok.start[0], tok.end[0] + 1))
    code -= doc
    return {"blank": len(blank), "docstring": len(doc), "comment": len(comment - code),
            "code": n - len(blank) - len(doc) - len(comment - code)}


def add(total: dict[str, int], source: str) -> None:
    for kind, n in kinds(source).items():
        total[kind] = total.get(kind, 0) + n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=FILING, help=f"the commit to compare with (default {FILING})")
    args = ap.parse_args()
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", args.base, PACKAGE], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    at_base = {p[len(PACKAGE) + 1:] for p in listed if p.endswith(".py")}
    base_sources = [subprocess.run(["git", "show", f"{args.base}:{PACKAGE}/{p}"], cwd=ROOT, check=True,
                                   capture_output=True, text=True).stdout for p in sorted(at_base)]
    base_lines = sum(len(s.splitlines()) for s in base_sources)
    sources = {p.relative_to(ROOT / PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in (ROOT / PACKAGE).rglob("*.py")}
    now = {p: len(s.splitlines()) for p, s in sources.items()}
    features = {p: n for p, n in now.items() if p not in at_base and FEATURE_FILES.search(p)}
    total, feature_lines = sum(now.values()), sum(features.values())
    like = total - feature_lines
    then_kinds: dict[str, int] = {}
    now_kinds: dict[str, int] = {}
    for source in base_sources:
        add(then_kinds, source)
    for p, source in sources.items():
        if p not in features:
            add(now_kinds, source)
    print(f"src/attnscope at {args.base}: {base_lines:,} lines of Python in {len(at_base)} files")
    print(f"now: {total:,} lines in {len(now)} files, of which issues 25-29's new feature files "
          f"{feature_lines:,} in {len(features)}")
    print(f"like for like: {like:,} lines, {like - base_lines:+,} against {args.base}")
    print(f"\n| lines by kind | {args.base} | like for like now | change |\n|---|---|---|---|")
    for kind in ("code", "docstring", "comment", "blank"):
        print(f"| {kind} | {then_kinds[kind]:,} | {now_kinds[kind]:,} | {now_kinds[kind] - then_kinds[kind]:+,} |")


if __name__ == "__main__":
    main()
