"""``attnscope evaluate-attribution``: how faithful each attribution method is, measured on a corpus.

On texts of the built-in corpus (builtin:python-docs, paragraphs in a seeded random order, each cut
to at most --max-tokens tokens), every method explains the model's output (a decoder: the logit of
its top next-token prediction; an encoder: its pooled embedding) and is judged against the model:

* Spearman's rho of its scores with leave-one-out's (each token removed in turn);
* deletion and insertion (ERASER): the top 1, 5, 10, 20, 50 % of the tokens it ranks first removed
  (comprehensiveness) or kept alone (sufficiency), and their means over the bins (AOPC);

each as a mean over the texts with a bootstrap 95 % interval (fixed seed). Token-to-token methods
are read at the row of the output: a decoder's last row, an encoder's mean of rows (mean pooling)
or row 0 ([CLS] pooling). Writes results.json (every number, per text too), report.md (the
table and a verdict computed from the numbers) and curves.png into -o.

    attnscope evaluate-attribution --texts 500 --limit value_zeroing=150 -o faith-minilm

--reuse DIR takes an earlier run's per-text numbers over (same model, texts, seed, --max-tokens)
for the methods it ran with the same options, and computes only the rest: more texts for the
costly methods, or a method added, without running the others again.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from . import (
    MAX_INDEX,
    MAX_SEED,
    IntRange,
    add_command,
    add_lang_option,
    add_overwrite_option,
    check_device,
    check_new_results,
    full_width_comma,
)

MAX_TEXTS = 100_000


def register(sub) -> None:
    p = add_command(sub, "evaluate-attribution", "measure attribution methods against leave-one-out and "
                    "deletion/insertion (ERASER) on the built-in corpus", __doc__)
    p.add_argument("--model", default=None, metavar="PATH",
                   help="a checkpoint folder, a .gguf file or an installed model (smollm2-135m, gemma-3-270m); "
                   "default: the packaged all-MiniLM-L6-v2")
    p.add_argument("--texts", type=IntRange(1, MAX_TEXTS), default=500, metavar="N",
                   help="how many texts (default: %(default)s)")
    p.add_argument("--methods", default=None, metavar="M,M,…",
                   help="methods to evaluate, comma-separated (default: every method but flow, and random)")
    p.add_argument("--limit", action="append", default=[], metavar="METHOD=N",
                   help="run METHOD on the first N texts only (repeatable; for the costly ones)")
    p.add_argument("--max-tokens", type=IntRange(6, MAX_INDEX), default=48, metavar="T",
                   help="cut each text to its longest whole-word prefix of at most T tokens (default: %(default)s)")
    # the --ig-* options default to None so that one given without integrated_gradients is seen (IG_DEFAULTS after)
    p.add_argument("--ig-steps", type=IntRange(1, 10_000), default=None, metavar="S",
                   help="integrated gradients: steps (default: 32)")
    p.add_argument("--ig-baseline", default=None, metavar="zero|ID",
                   help="integrated gradients: a zero embedding output, or a token id at every position "
                   "(default: zero)")
    p.add_argument("--ig-rule", default=None, choices=("midpoint", "trapezoid"),
                   help="integrated gradients: the quadrature rule (default: midpoint)")
    p.add_argument("--ig-power", type=float, default=None, metavar="P",
                   help="integrated gradients: the points at alpha = u^P, crowded near the baseline for P > 1 "
                   "(default: 1.0)")
    p.add_argument("--reuse", default=None, metavar="DIR",
                   help="an earlier run (its folder or results.json) on the same model, texts and settings: "
                   "its per-text numbers are taken over for the methods it ran with the same options")
    p.add_argument("--seed", type=IntRange(0, MAX_SEED), default=0,
                   help="seed of the text order, the random ranking and the bootstrap (default: %(default)s)")
    p.add_argument("-o", "--out", default="evaluate-attribution", metavar="DIR",
                   help="output folder (default: %(default)s)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: cpu)")
    p.add_argument("--threads", type=IntRange(1, 4096), default=None, metavar="N",
                   help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lang_option(p, "language of report.md and the figure (default: en)")
    add_overwrite_option(p)


#: The --ig-* options' defaults: argparse's name → (value, flag).
IG_DEFAULTS = {"ig_steps": (32, "--ig-steps"), "ig_baseline": ("zero", "--ig-baseline"), "ig_rule": ("midpoint", "--ig-rule"),
               "ig_power": (1.0, "--ig-power")}


def parse_limits(items: list[str]) -> dict[str, int]:
    from ..errors import InputError
    from ..i18n import error
    out: dict[str, int] = {}
    for item in items:
        name, sep, n = item.partition("=")
        if not sep or not n.strip().isdecimal() or int(n) < 1:  # isdigit() passes '²', which int() refuses
            raise error(InputError, "errors.faithfulness_limit", item=repr(item))
        if name.strip() in out:  # the first limit would be dropped
            raise error(InputError, "errors.faithfulness_limit_twice", name=name.strip())
        out[name.strip()] = int(n)
    return out


def run(args) -> int:
    import torch

    from ..attribution.gradients import ig_points
    from ..errors import InputError
    from ..faithfulness import report
    from ..faithfulness.reuse import read_results
    from ..faithfulness.run import DEFAULT_METHODS, check_methods, evaluate
    from ..i18n import error, text
    from ..models import load

    check_device(args.device)
    out = Path(args.out)
    check_new_results(out, report.FILES, args.overwrite)
    sep = full_width_comma(args.methods)
    if sep is not None:
        raise error(InputError, "errors.faithfulness_methods_full_width", value=repr(args.methods), sep=sep)
    methods = check_methods([m.strip() for m in args.methods.split(",") if m.strip()] if args.methods is not None
                            else list(DEFAULT_METHODS))  # --methods "": none named, not the defaults
    limits = parse_limits(args.limit)
    if limits:
        check_methods(list(limits))
        unused = [m for m in limits if m not in methods]
        if unused:  # its limit would be dropped
            raise error(InputError, "errors.faithfulness_limit_unused", name=unused[0], methods=", ".join(methods))
    for dest, (default, flag) in IG_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
        elif "integrated_gradients" not in methods:  # it would be dropped
            raise error(InputError, "errors.faithfulness_ig_unused", flag=flag)
    baseline = None
    if args.ig_baseline != "zero":
        if not args.ig_baseline.isdecimal():
            raise error(InputError, "errors.faithfulness_baseline", value=repr(args.ig_baseline))
        baseline = int(args.ig_baseline)
    ig_points(1, args.ig_rule, args.ig_power)  # a bad --ig-power: one sentence now, not every text failing later
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    model = load(args.model, device=args.device)
    if baseline is not None and baseline >= model.config.vocab_size:  # else every text fails, one by one
        raise error(InputError, "errors.attribution_baseline_token", token=baseline, last=model.config.vocab_size - 1)
    ig = {"steps": args.ig_steps, "baseline": baseline, "progress": False}
    if (args.ig_rule, args.ig_power) != ("midpoint", 1.0):  # the default points: options as runs before them wrote
        ig.update(rule=args.ig_rule, power=args.ig_power)
    options: dict = {"integrated_gradients": ig}
    if "flow" in methods:  # flow refuses texts over FLOW_MAX_TOKENS (64) by default (its time); the run's cut decides here
        options["flow"] = {"max_tokens": args.max_tokens}
    earlier = read_results(args.reuse) if args.reuse else None
    res = evaluate(model, n_texts=args.texts, methods=methods, max_tokens=args.max_tokens, seed=args.seed,
                   limits=limits, options=options, progress=not args.no_progress, reuse=earlier)
    res["command"] = "attnscope evaluate-attribution " + " ".join(
        shlex.quote(a) for a in sys.argv[2:] if a not in ("--overwrite", "--no-progress"))
    paths = report.write(res, out, args.lang)
    print(text("faithfulness.progress", args.lang, n=len(paths), out=out, seconds=f"{time.perf_counter() - started:.0f}"))
    return 0
