"""The tuned-lens half of ``attnscope lens``: ``--train-tuned FILE`` (train on the built-in corpus,
save, measure on the held-out texts) and ``--tuned FILE`` (one text through the logit lens and the
tuned lens side by side). Options are declared in :mod:`attnscope.cli.lens`."""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from rich.cells import cell_len

from ..errors import InputError
from ..i18n import error, text
from . import IntRange, check_new_file, save_figure

#: Training options: (flag, default, low, high, help).
TRAIN_OPTIONS = (
    ("--texts", 400, 1, 100_000, "with --train-tuned: training texts of the built-in corpus"),
    ("--held-out", 40, 1, 100_000, "with --train-tuned: held-out texts, measured after training"),
    ("--length", 64, 2, 1_000_000, "with --train-tuned: each text cut to its first T tokens"),
    ("--steps", 300, 1, 1_000_000, "with --train-tuned: Adam steps"),
    ("--batch", 8, 1, 100_000, "with --train-tuned: texts per step"),
    ("--seed", 0, 0, 2**32 - 1, "with --train-tuned: the seed of the split and of the order of the texts"),
)


#: --lr's default
LR = 3e-4
#: The options of one text's lens (declared in attnscope.cli.lens), which --train-tuned does not read: name → flag.
TEXT_OPTIONS = {"text": "--text", "position": "--position", "target": "--target", "top": "--top"}


def add_options(p) -> None:
    """``--tuned``, ``--train-tuned`` and the training options."""
    p.add_argument("--tuned", default=None, metavar="FILE",
                   help="also read the text through this tuned lens (.safetensors), beside the logit lens")
    p.add_argument("--train-tuned", default=None, metavar="FILE",
                   help="train a tuned lens on builtin:python-docs, write it to FILE (.safetensors) and print "
                        "its KL beside the logit lens's on the held-out texts (-o: .json numbers, .png figure)")
    # the training options default to None so that one given without --train-tuned is seen (check() fills them in)
    for flag, default, low, high, words in TRAIN_OPTIONS:
        p.add_argument(flag, type=IntRange(low, high), default=None, metavar="N", help=f"{words} (default: {default})")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default=None,
                   help="with --train-tuned: Adam, or SGD with Nesterov momentum 0.9 (Belrose et al.'s) (default: adam)")
    p.add_argument("--lr", type=float, default=None,
                   help=f"with --train-tuned: the peak learning rate (default: {LR})")
    p.add_argument("--threads", type=IntRange(1, 4096), default=None, metavar="N",
                   help="torch CPU threads (default: torch's choice)")


def check(args) -> None:
    """The tuned-lens options' combinations, before any work."""
    if args.tuned is not None and args.train_tuned is not None:
        raise error(InputError, "errors.tuned_both")
    if args.dla and (args.tuned is not None or args.train_tuned is not None):
        raise error(InputError, "errors.tuned_not_dla")
    if args.text is None and args.train_tuned is None:
        raise error(InputError, "errors.tuned_needs_text")
    training: dict[str, tuple[str, object]] = {f[2:].replace("-", "_"): (f, default) for f, default, *_ in TRAIN_OPTIONS}
    training.update(optimizer=("--optimizer", "adam"), lr=("--lr", LR))
    for dest, (flag, default) in training.items():  # each would be dropped without --train-tuned
        if args.train_tuned is None and getattr(args, dest) is not None:
            raise error(InputError, "errors.tuned_train_option", flag=flag)
        setattr(args, dest, default if getattr(args, dest) is None else getattr(args, dest))
    if args.train_tuned is not None:  # it reads the held-out texts, not a text at one position
        given = [flag for dest, flag in TEXT_OPTIONS.items() if getattr(args, dest) is not None]
        if given:
            raise error(InputError, "errors.tuned_train_text_option", flag=given[0])
    args.position, args.top = -1 if args.position is None else args.position, args.top or 3
    if args.tuned is not None and not Path(args.tuned).is_file():
        raise error(InputError, "errors.tuned_missing", path=repr(args.tuned))
    if args.train_tuned is not None:
        out = Path(args.train_tuned)
        if out.suffix.lower() != ".safetensors":
            raise error(InputError, "errors.tuned_suffix", name=repr(args.train_tuned))
        if not out.parent.is_dir():
            raise error(InputError, "errors.tuned_no_folder", path=repr(str(out)), folder=repr(str(out.parent)))
        check_new_file(out, args.overwrite, "--train-tuned")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise error(InputError, "errors.tuned_lr", value=repr(args.lr))


def train(args, model, outs: list[Path]) -> int:
    """``--train-tuned``: train, save, measure on the held-out texts, print the table, write -o."""
    from ..lens.figures import kl_figure
    from ..lens.tuned_train import held_out_kl, train_tuned_lens

    lang, steps = args.lang, args.steps

    def progress(step: int, loss: float) -> None:
        if step == 1 or step % 10 == 0 or step == steps:
            print(text("tuned.step", lang, n=step, steps=steps, kl=f"{loss:.4f}"), file=sys.stderr, flush=True)

    lens, losses = train_tuned_lens(model, texts=args.texts, held_out=args.held_out, length=args.length, steps=steps,
                                    batch=args.batch, lr=args.lr, optimizer=args.optimizer, seed=args.seed,
                                    progress=progress)
    lens.settings["command"] = command_line(args)
    lens.save(args.train_tuned)
    print(text("tuned.trained", lang, points=len(lens.points) - 1, texts=args.texts,
               seconds=lens.settings["train_seconds"], path=args.train_tuned))
    started = time.perf_counter()
    result = held_out_kl(model, lens)
    result.update(settings={k: v for k, v in lens.settings.items() if k != "held_out_indices"}, losses=losses,
                  eval_seconds=round(time.perf_counter() - started, 1))
    logit = np.array([t["logit"] for t in result["texts"]]).mean(0)  # (P,)
    tuned = np.array([t["tuned"] for t in result["texts"]]).mean(0)  # (P,)
    print(text("tuned.held_head", lang, texts=len(result["texts"]), tokens=sum(t["tokens"] for t in result["texts"])))
    print(f"{text('tuned.col_logit', lang):>38} {text('tuned.col_tuned', lang):>11}")
    for name, a, b in zip(lens.points, logit, tuned):
        print(f"{name:<26} {a:11.4f} {b:11.4f}")
    print(text("tuned.lower", lang, n=int((tuned[:-1] < logit[:-1]).sum()), m=len(logit) - 1))
    write_outputs(outs, result, lambda: kl_figure(lens.points, logit, tuned, lang), args.dpi, lang)
    return 0


def write_outputs(outs: list[Path], result: dict, figure, dpi: int, lang: str) -> None:
    """Each -o file: the numbers ``result`` as .json, else ``figure()`` drawn at ``dpi``; one line each."""
    for out in outs:
        if out.suffix.lower() == ".json":
            out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        else:
            save_figure(figure(), out, dpi)
        print(text("lens.wrote", lang, path=out))


def command_line(args) -> str:
    """The training command, every setting spelt out (what recreates the file)."""
    words = ["attnscope", "lens", "--model", args.model, "--train-tuned", args.train_tuned]
    for flag, *_ in TRAIN_OPTIONS:
        words += [flag, str(getattr(args, flag[2:].replace("-", "_")))]
    words += ["--optimizer", args.optimizer, "--lr", repr(args.lr)]
    words += ["--threads", str(args.threads)] if args.threads else []
    return " ".join(shlex.quote(w) for w in words)


def pad(words: str, width: int, right: bool = False) -> str:
    """``words`` padded to ``width`` terminal columns (a Chinese character takes two)."""
    fill = " " * max(0, width - cell_len(words))
    return fill + words if right else words + fill


#: the top-token column's least width, in terminal columns
TOPS = 40


def header(lang: str, width: int = TOPS) -> str:
    """The lens table's column names, aligned with its rows (widths 26, ``width``, 9, 6, 10)."""
    return (pad(text("lens.col_point", lang), 27) + block_header(lang, width))


def block_header(lang: str, width: int = TOPS) -> str:
    """One lens's columns: top tokens, target p, rank, KL (widths ``width``, 9, 6, 10)."""
    return (pad(text("lens.col_top", lang), width + 1) + pad(text("lens.col_p", lang), 8, True)
            + pad(text("lens.col_rank", lang), 7, True) + pad(text("lens.col_kl", lang), 11, True))


def tops(r, p: int, i: int) -> str:
    """The top tokens and their probabilities at point p, position i."""
    return ", ".join(f"{t!r} {float(q):.2f}" for t, q in zip(r.top_tokens(p, i), r.top_probs[p, i]))


def tops_width(results, i: int) -> int:
    """The top-token column's width at position i: TOPS, or the widest cell of ``results`` (else a
    row past it, as --top 5 gives, pushed its numbers right of their column)."""
    return max([TOPS] + [cell_len(tops(r, p, i)) for r in results for p in range(len(r.points))])


def cells(r, p: int, i: int, width: int = TOPS) -> str:
    """One lens's cells at point p, position i: top tokens (padded in terminal columns: a Chinese
    character takes two), target p, rank, KL."""
    numbers = f"{float(r.target_prob[p, i]):8.4f} {int(r.target_rank[p, i]):6d} {float(r.kl[p, i]):10.4f}"
    return f"{pad(tops(r, p, i), width)} {numbers}"


def show(args, model, outs: list[Path]) -> int:
    """``--tuned FILE --text …``: the logit lens and the tuned lens at one position, side by side."""
    from ..lens import logit_lens
    from ..lens.figures import tuned_figure
    from ..lens.tuned import load_tuned_lens, tuned_lens

    lang = args.lang
    lens = load_tuned_lens(args.tuned, model)
    r = logit_lens(model, args.text, target=args.target, k=args.top)
    t = tuned_lens(model, args.text, lens, target=args.target, k=args.top)
    L = len(r.tokens)
    if not -L <= args.position < L:
        raise error(InputError, "errors.lens_position", position=args.position, n=L, last=L - 1)
    i = args.position % L
    print(text("tuned.head", lang, path=args.tuned, model=model.name, position=i, token=repr(r.tokens[i]),
               target=repr(r.decode(int(r.target_ids[i])))))
    w = tops_width([r, t], i)
    print(pad("", 27) + pad(text("tuned.col_logit", lang), w + 28) + text("tuned.col_tuned", lang))
    print(header(lang, w) + " " + block_header(lang, w))
    for p, point in enumerate(r.points):
        print(f"{point.name:<26} {cells(r, p, i, w)} {cells(t, p, i, w)}")
    result = {"logit_lens": r.to_dict(), "tuned_lens": t.to_dict(), "tuned_file": str(args.tuned),
              "tuned_settings": {k: v for k, v in lens.settings.items() if k != "held_out_indices"}}
    write_outputs(outs, result, lambda: tuned_figure(r, t, lang), args.dpi, lang)
    return 0
