"""``attnscope plot``: a figure of attention written to PNG, SVG or PDF (by the file's extension).

    attnscope plot "The cat sat on the mat." --layer 0 --head 3 -o head.png
    attnscope plot "我喜欢人工智能" --kind grid -o grid.svg
    attnscope plot "我喜欢人工智能" --lang zh -o head.png      # title, axes and colour bar in Chinese
    attnscope plot --kind hist -o scores.pdf                 # the third article's experiment
    attnscope plot "The cat sat on the mat." --attribution rollout --layer 5 -o rollout.png
    attnscope plot "The cat sat on the mat." --attribution norm --kind grid -o norms.svg
    attnscope plot --kind softmax --scores 15.3,22.7,18.2,2.1,1.8 --temperatures 1,8 -o t.png
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import error, text
from . import FIGURES, MAX_INDEX, IntRange, add_command, add_lang_option, add_overwrite_option, check_new_file, save_figure
from .explain import labels_arg

KINDS = ("heatmap", "grid", "hist", "softmax")
MIN_DPI, MAX_DPI = 10, 2400
#: The largest PNG written (pixels): 100 megapixels is 400 MB of RGBA while it is drawn.
MAX_PIXELS = 100_000_000
MAX_D_K = 16384  # the random experiment draws 2 × 1000 × d_k normals
#: --attribution's choices: attnscope.attribution.shown.SHOWN, written out so that --help needs no torch (a test
#: checks they agree)
ATTRIBUTIONS = ("norm", "rollout", "alti", "value_zeroing")


def register(sub) -> None:
    p = add_command(sub, "plot", "draw attention as a PNG/SVG/PDF figure", __doc__)
    p.add_argument("text", nargs="?", help="the text to trace (not needed for --kind hist/softmax with --scores)")
    p.add_argument("--kind", choices=KINDS, default="heatmap",
                   help="heatmap: one head; grid: every layer × head; hist: scaled vs unscaled scores; "
                        "softmax: a row's softmax at several temperatures (default: heatmap)")
    # --layer, --head, --query and --d-k default to None so that a given one is seen (refuse_unread); defaults in run
    p.add_argument("--layer", type=IntRange(0, MAX_INDEX), default=None, help="layer, 0-based (default 0)")
    p.add_argument("--head", type=IntRange(0, MAX_INDEX), default=None, help="head, 0-based (default 0)")
    p.add_argument("--query", type=IntRange(0, MAX_INDEX), default=None, help="query position for --kind softmax (default 0)")
    p.add_argument("--scores", help="comma-separated scores for --kind softmax instead of a text")
    p.add_argument("--labels", metavar="A,B,C", help="comma-separated labels: one per score of --scores, or one per "
                   "token of the text (--kind heatmap, softmax), e.g. 我,喜,欢")
    p.add_argument("--temperatures", default=None,
                   help="comma-separated temperatures for --kind softmax (default 0.5,1,2,8; with a "
                        "text 1,√d_k,2√d_k)")
    p.add_argument("--d-k", type=IntRange(1, MAX_D_K), default=None,
                   help=f"d_k of the random experiment of --kind hist without text, 1..{MAX_D_K} (default 256)")
    p.add_argument("--attribution", choices=ATTRIBUTIONS, default=None,
                   help="--kind heatmap/grid: draw this attribution instead of the raw weights — norm: each head's "
                   "‖α·f(x)‖, rows normalised; rollout, alti, value_zeroing: accumulated from layer 0 up to --layer "
                   "(one matrix a layer); the viewer's switch shows the same")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--dpi", type=IntRange(MIN_DPI, MAX_DPI), default=150,
                   help=f"resolution of a .png in dots per inch, {MIN_DPI}..{MAX_DPI} (default 150; "
                        "SVG and PDF are vector drawings)")
    add_lang_option(p, "language of the title, axes and colour bar (default: en)")
    p.add_argument("-o", "--output", required=True, help="output file: .png, .svg or .pdf")
    add_overwrite_option(p)


def _floats(s: str, what: str) -> list[float]:
    try:
        xs = [float(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        from ..explain.full_width import no_full_width_separator  # on this path only: explain loads torch
        no_full_width_separator([s], what)  # '1，2，3': a Chinese input method's comma, named as explain names it
        raise error(InputError, "cli.numbers", what=what, value=repr(s)) from None
    if not xs:
        raise error(InputError, "cli.numbers_empty", what=what)
    bad = [x for x in xs if not math.isfinite(x)]
    if bad:
        raise error(InputError, "cli.numbers_finite", what=what, value=bad[0])
    return xs


def _labels(args):
    """--labels as a list (None without it); the figure checks their number."""
    if args.labels is None:
        return None
    if args.kind in ("grid", "hist"):
        raise error(InputError, "cli.labels_kind", kind=args.kind)
    labels = labels_arg(args.labels)  # '我，喜，欢' is named, as explain's --labels does, not counted as one label
    if any(not x for x in labels):
        raise error(InputError, "cli.labels_empty", value=repr(args.labels))
    return labels


def run(args) -> int:
    out = Path(args.output)
    if not args.output.strip():
        raise error(InputError, "cli.o_empty")
    if out.is_dir():  # "-o ." or "-o figures/": a name is missing, not a format
        raise error(InputError, "cli.o_folder", path=repr(args.output), example=repr(str(out / "scores.png")))
    if out.suffix.lower() not in FIGURES:
        raise error(InputError, "cli.format", name=repr(out.name))
    if not out.parent.is_dir():  # before the model loads and traces, not after
        raise error(InputError, "errors.cli_patch_no_folder", path=out, folder=out.parent)
    check_new_file(out, args.overwrite)
    _labels(args)  # a bad --labels stops before the model loads
    needs_text = args.kind in ("heatmap", "grid") or (args.kind == "softmax" and args.scores is None)
    if needs_text and not (args.text and args.text.strip()):
        raise error(InputError, "cli.needs_text", kind=args.kind)
    if args.attribution is not None and args.kind not in ("heatmap", "grid"):
        raise error(InputError, "errors.plot_attribution_kind", kind=args.kind)
    refuse_unread(args)
    args.layer, args.head, args.query = args.layer or 0, args.head or 0, args.query or 0
    args.d_k = args.d_k or 256
    from .. import plot

    tr = None
    if args.attribution is None and args.text and args.text.strip() and not (args.kind == "softmax" and args.scores is not None):
        from ..models import load
        model = load(args.model)
        if is_seq2seq(model.config):  # its stacks' names are encoder.*, decoder.*: the figures read one stack
            raise error(InputError, "errors.cli_plot_seq2seq", name=model.name, where=args.model)
        names = ["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v"]
        if "layers.0.attn.bias" in model.hook_names:  # a score term (DeBERTa's, ALiBi's): the weights need it
            names.append("layers.*.attn.bias")
        tr = model.trace([args.text], names=names)
    if args.attribution is not None:
        fig = attribution_figure(args)
    elif args.kind == "heatmap":
        fig = plot.head_heatmap(tr, args.layer, args.head, labels=_labels(args), lang=args.lang)
    elif args.kind == "grid":
        fig = plot.heads_grid(tr, lang=args.lang)
    elif args.kind == "hist":
        fig = plot.score_histograms(tr, layer=None, d_k=args.d_k, lang=args.lang) if tr is not None else \
            plot.score_histograms(d_k=args.d_k, lang=args.lang)
    else:
        note = None
        if args.scores is not None:
            x, labels = _floats(args.scores, "--scores"), _labels(args)
            if labels is not None and len(labels) != len(x):  # the figure's own error names its arguments, labels and x
                raise error(InputError, "cli.labels_count_scores_one" if len(labels) == 1 else "cli.labels_count_scores",
                            n=len(labels), m=len(x))
            temps: Sequence[float] = _floats(args.temperatures, "--temperatures") if args.temperatures else (0.5, 1.0, 2.0, 8.0)
        else:
            from ..reference.traced import score_term, trace_row
            s = trace_row(tr, args.layer, args.head, args.query)
            labels = _labels(args) or s["tokens"]
            if len(labels) != len(s["tokens"]):
                raise error(InputError, "cli.labels_count_one" if len(labels) == 1 else "cli.labels_count",
                            n=len(labels), m=len(s["tokens"]))
            seen = s["allowed"]  # (n,) the keys the query sees: not a causal model's later ones, nor a window's older
            r = 1 / s["factor"]  # the model's own T: √d_k, or e.g. Gemma 3's √query_pre_attn_scalar
            # on q·k's scale, with the model's score term (ALiBi, DeBERTa) if any, so that T = r gives its weights
            has_term = score_term(tr, args.layer, 0) is not None
            x = s["scaled"][seen] * r if has_term else s["raw"][seen]  # (n_seen,)
            labels = [t for t, ok in zip(labels, seen) if ok]
            temps = _floats(args.temperatures, "--temperatures") if args.temperatures else (1.0, r, 2 * r)
            note = text("plot.softmax_note_term" if has_term else "plot.softmax_note", args.lang, t=f"{r:g}")
        fig = plot.softmax_temperatures(x, temps, labels=labels, lang=args.lang, note=note)
    if out.suffix.lower() == ".png":
        w, h = (float(v) * args.dpi for v in fig.get_size_inches())
        if w * h > MAX_PIXELS:
            most = int(math.sqrt(MAX_PIXELS / (w * h)) * args.dpi)
            raise error(InputError, "errors.cli_plot_dpi", dpi=args.dpi, w=f"{w:,.0f}", h=f"{h:,.0f}",
                        mp=MAX_PIXELS // 10**6, most=most)
    save_figure(fig, out, args.dpi)
    print(text("plot.cli_wrote", args.lang, path=out, kb=out.stat().st_size / 1024))
    return 0


def refuse_unread(args) -> None:
    """InputError naming the first option given that the figure asked for does not read: it would be
    dropped, and the same figure drawn (--layer with --kind grid, --model with --scores, …)."""
    from ..attribution.shown import PER_HEAD

    has_text = bool(args.text and args.text.strip())
    if args.attribution is not None:
        what = f"--kind {args.kind} --attribution {args.attribution}"
        reads = {"model"} if args.kind == "grid" else {"model", "layer"} | ({"head"} if args.attribution in PER_HEAD else set())
    elif args.kind in ("heatmap", "grid"):
        what, reads = f"--kind {args.kind}", {"model", "layer", "head", "labels"} if args.kind == "heatmap" else {"model"}
    elif args.kind == "hist":
        what, reads = ("--kind hist TEXT", {"model"}) if has_text else ("--kind hist", {"d_k"})
    elif args.scores is not None:
        if has_text:
            raise error(InputError, "errors.cli_plot_text_unread")
        what, reads = "--kind softmax --scores", {"scores", "labels", "temperatures"}
    else:
        what, reads = "--kind softmax TEXT", {"model", "layer", "head", "query", "labels", "temperatures"}
    for dest, flag in UNREAD_FLAGS.items():
        if dest not in reads and getattr(args, dest) is not None:
            raise error(InputError, "errors.cli_plot_unread", flag=flag, what=what)


#: The options refuse_unread checks: argparse's name → the flag.
UNREAD_FLAGS = {"layer": "--layer", "head": "--head", "query": "--query", "scores": "--scores", "labels": "--labels",
                "temperatures": "--temperatures", "d_k": "--d-k", "model": "--model"}


def attribution_figure(args):
    """The figure of ``--attribution`` (--kind heatmap or grid): the viewer switch's matrices."""
    from ..models import load
    from ..plot.attribution import attribution_grid, attribution_heatmap
    model = load(args.model)
    if args.kind == "grid":
        return attribution_grid(model, args.text, args.attribution, lang=args.lang)
    return attribution_heatmap(model, args.text, args.attribution, args.layer, args.head, lang=args.lang)
