"""``attnscope patch``: activation patching of heads (or of the residual stream) between two prompts.

    attnscope patch --clean "When Mary and John went to the store, John gave a drink to" \\
                    --corrupted "When Mary and John went to the store, Mary gave a drink to" \\
                    --answer " Mary" --wrong " John" -o ioi.png -o ioi.json
    attnscope patch ... --what residual --site resid_pre -o resid.png

Runs the clean and the corrupted prompt, then the corrupted one again with one activation taken
from the clean run: one head's output z (--what heads, every layer x head) or the residual stream
at one position (--what residual, every layer x position). Each time it measures the logit
difference logit(answer) - logit(wrong) at the last position, raw and normalised as
(patched - corrupted) / (clean - corrupted): 0 = no effect, 1 = the clean answer is restored.

Both prompts must be the same number of tokens, and --answer and --wrong one token each (mind
the leading space of a word that follows another). -o writes a figure (.png, .svg, .pdf) or the
numbers (.json); give it more than once for several files. --lang zh prints the lines and writes
the figure's words in Chinese (the numbers and the .json are the same in every language).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import InputError
from ..i18n import error
from . import MAX_INDEX, IntList, IntRange, add_command, add_lang_option, add_overwrite_option, check_output_file, save_figure
from .plot import MAX_DPI, MIN_DPI


def register(sub) -> None:
    from ..patching import BATCH, SITES

    p = add_command(sub, "patch", "activation patching: which heads or positions carry the answer", __doc__)
    p.add_argument("--clean", required=True, metavar="TEXT", help="the prompt whose activations are copied")
    p.add_argument("--corrupted", required=True, metavar="TEXT",
                   help="the prompt they are copied into (the same number of tokens)")
    p.add_argument("--answer", required=True, metavar="TOKEN", help="the clean prompt's answer token, e.g. ' Mary'")
    p.add_argument("--wrong", required=True, metavar="TOKEN", help="the token it is compared with, e.g. ' John'")
    p.add_argument("--model", default="smollm2-135m", metavar="NAME_OR_PATH",
                   help="a causal language model: smollm2-135m, gemma-3-270m, a folder or a .gguf file "
                        "(default: %(default)s)")
    p.add_argument("--what", choices=("heads", "residual"), default="heads",
                   help="heads: each head's output z; residual: the residual stream at one position "
                        "(default: %(default)s)")
    p.add_argument("--site", choices=tuple(SITES), default=None,  # None: a --site given with --what heads is seen
                   help="where --what residual patches: resid_pre (what enters the layer), attn_in (the "
                        "attention's normalised input), resid_mid (after the attention), resid_post (after "
                        "the layer) (default: resid_pre)")
    p.add_argument("--layers", type=IntList(0, MAX_INDEX, unique=True), default=None, metavar="LIST",
                   help="comma-separated layers to patch, each once and counted from 0, e.g. 0,5,10 (default: all)")
    p.add_argument("--batch-size", type=IntRange(1, 65536), default=BATCH, metavar="K",
                   help="patched copies per forward pass (default: %(default)s)")
    p.add_argument("--raw", action="store_true", help="colour the figure by the raw metric, not the normalised one")
    p.add_argument("--top", type=IntRange(0, MAX_INDEX), default=10, metavar="N",
                   help="print the N strongest cells (default: %(default)s)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: cpu)")
    p.add_argument("--dpi", type=IntRange(MIN_DPI, MAX_DPI), default=None,  # None: a given one is seen (figure_dpi)
                   help="resolution of a .png, 10..2400 (default: 150)")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="write the figure (.png, .svg, .pdf) or the numbers (.json); repeatable")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lang_option(p, "language of the printed lines and the figure (default: en)")
    add_overwrite_option(p, {"output": "-o"})


def _check_outputs(paths, overwrite: bool) -> list[Path]:
    outs = [Path(p) for p in paths]
    for given, out in zip(paths, outs):
        if not str(given).strip():
            raise error(InputError, "errors.o_empty_patch")
        if out.is_dir():  # "-o ." or "-o results/": a name is missing, not a format
            raise error(InputError, "cli.o_folder", path=repr(str(given)), example=repr(str(out / "patch.png")))
        check_output_file(out, overwrite, "errors.cli_patch_suffix", "errors.cli_patch_no_folder")
    return outs


def run(args) -> int:
    from . import FIGURES, check_device, figure_dpi

    check_device(args.device)
    outs = _check_outputs(args.output, args.overwrite)  # before the work, not after it
    if args.site is not None and args.what == "heads":  # heads patch each head's z: the site would be dropped
        raise error(InputError, "errors.cli_patch_site_heads", site=args.site)
    if args.raw and not any(out.suffix.lower() in FIGURES for out in outs):  # it colours a figure only
        raise error(InputError, "errors.cli_patch_raw_figure")
    args.dpi = figure_dpi(args, outs)

    from ..analysis.summary import say  # patch's lines are in the analysis catalogue (analysis*.toml)
    from ..models import load
    from ..patching import patch

    model = load(args.model, device=args.device)
    r = patch(model, args.clean, args.corrupted, args.answer, args.wrong, what=args.what, site=args.site,
              layers=args.layers, batch_size=args.batch_size, progress=not args.no_progress and sys.stderr.isatty())
    for line in summary(r, args.top, args.lang):
        print(line)
    for out in outs:
        if out.suffix.lower() == ".json":
            r.save(out)
        else:
            save_figure(r.figure(normalized=not args.raw, lang=args.lang), out, args.dpi)
        print(say("wrote", args.lang, path=out))
    return 0


def summary(r, top: int, lang: str = "en") -> list[str]:
    """The lines ``patch`` prints of a result ``r``: the prompts, the metric, the cost, and the
    ``top`` strongest cells, in ``lang``."""
    from ..analysis.summary import say
    n = len(r.clean_tokens)
    out = [say("patch_head_1" if n == 1 else "patch_head", lang, model=r.model_name, n=n, metric=r.metric)]
    diff = [i for i, (a, b) in enumerate(zip(r.clean_tokens, r.corrupted_tokens)) if a != b]
    where = say("list_sep", lang).join(f"{i} ({r.clean_tokens[i]!r} → {r.corrupted_tokens[i]!r})" for i in diff)
    out.append(say("patch_differ_1" if len(diff) == 1 else "patch_differ_n", lang, where=where) if diff
               else say("patch_same", lang))
    out.append(say("patch_clean", lang, clean=r.clean, corrupted=r.corrupted))
    out.append(say("patch_evals", lang, n=r.layer_evaluations, share=r.layer_evaluations / r.layer_evaluations_full,
                   full=r.layer_evaluations_full))
    if not r.defined:  # the same sentence as r.note()
        out.append(say("patch_note", lang, note=say("patch_undefined", lang, metric=r.metric, clean=r.clean)))
    if top:
        what = say("patch_heads", lang) if r.what == "heads" else say("patch_positions", lang, site=r.site)
        scale = say("patch_normalised" if r.defined else "patch_raw", lang)
        out.append(say("patch_strongest", lang, what=what, scale=scale))
        for label, v in r.top(top):
            out.append(f"  {label:>24}  {v:+.3f}" if not math.isnan(v) else f"  {label:>24}  n/a")
    return out
