"""``attnscope plot``: a figure of attention written to PNG, SVG or PDF (by the file's extension).

    attnscope plot "The cat sat on the mat." --layer 0 --head 3 -o head.png
    attnscope plot "我喜欢人工智能" --kind grid -o grid.svg
    attnscope plot --kind hist -o scores.pdf                 # the second article's experiment
    attnscope plot --kind softmax --scores 15.3,22.7,18.2,2.1,1.8 --temperatures 1,8 -o t.png
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..errors import InputError

KINDS = ("heatmap", "grid", "hist", "softmax")
FORMATS = (".png", ".svg", ".pdf")


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw attention as a PNG/SVG/PDF figure",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="?", help="the text to trace (not needed for --kind hist/softmax with --scores)")
    p.add_argument("--kind", choices=KINDS, default="heatmap",
                   help="heatmap: one head; grid: every layer × head; hist: scaled vs unscaled scores; "
                        "softmax: a row's softmax at several temperatures (default: heatmap)")
    p.add_argument("--layer", type=int, default=0, help="layer, 0-based (default 0)")
    p.add_argument("--head", type=int, default=0, help="head, 0-based (default 0)")
    p.add_argument("--query", type=int, default=0, help="query position for --kind softmax (default 0)")
    p.add_argument("--scores", help="comma-separated scores for --kind softmax instead of a text")
    p.add_argument("--temperatures", default=None,
                   help="comma-separated temperatures for --kind softmax (default 0.5,1,2,8; with a "
                        "text 1,√d_k,2√d_k)")
    p.add_argument("--d-k", type=int, default=256, help="d_k of the random experiment of --kind hist without text")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--dpi", type=int, default=150)
    p.add_argument("-o", "--output", required=True, help="output file: .png, .svg or .pdf")
    p.set_defaults(func=run)


def _floats(s: str, what: str) -> list[float]:
    try:
        return [float(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise InputError(f"{what} must be comma-separated numbers, got {s!r}") from None


def run(args) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"cannot tell the format of {out.name!r}: use a .png, .svg or .pdf file name")
    needs_text = args.kind in ("heatmap", "grid") or (args.kind == "softmax" and args.scores is None)
    if needs_text and not (args.text and args.text.strip()):
        raise InputError(f"--kind {args.kind} needs a text to trace")
    from .. import plot

    tr = None
    if args.text and args.text.strip() and not (args.kind == "softmax" and args.scores is not None):
        from ..models import load
        from ..viewer.run import trace_texts
        tr = trace_texts(load(args.model), [args.text])
    if args.kind == "heatmap":
        fig = plot.head_heatmap(tr, args.layer, args.head)
    elif args.kind == "grid":
        fig = plot.heads_grid(tr)
    elif args.kind == "hist":
        fig = plot.score_histograms(tr, layer=None, d_k=args.d_k) if tr is not None else \
            plot.score_histograms(d_k=args.d_k)
    else:
        if args.scores is not None:
            x, labels = _floats(args.scores, "--scores"), None
            temps = _floats(args.temperatures, "--temperatures") if args.temperatures else (0.5, 1.0, 2.0, 8.0)
        else:
            from ..viewer import source
            s = source.steps(tr, args.layer, args.head, args.query)
            x, labels = s["raw"], s["tokens"]
            r = math.sqrt(s["d_k"])
            temps = _floats(args.temperatures, "--temperatures") if args.temperatures else (1.0, r, 2 * r)
        fig = plot.softmax_temperatures(x, temps, labels=labels)
    try:
        fig.savefig(out, dpi=args.dpi)
    except OSError as e:
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KB)")
    return 0
