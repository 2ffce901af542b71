"""``attnscope exercise``: a fresh hand-calculation problem, a blank answers file, and (on request)
the worked solution.

  attnscope exercise --tokens 3 --dim 2 --seed 7           the problem; writes exercise-7-answers.yaml
  attnscope exercise --seed 7 --solution --lang zh         the worked solution and the answers, in Chinese
  attnscope exercise --labels 我,喜,欢 --seed 7            the tokens named as in your lesson
  attnscope exercise --text 我喜欢人工智能 --dim 2          one token per character (per word with spaces)
  attnscope check exercise-7-answers.yaml                  once you have filled it in

Without --seed a random one is drawn (and shown in the title, to get the same problem again).
An existing answers file is never overwritten.
"""

from __future__ import annotations

import os
import sys

from ..errors import InputError
from ..i18n import error
from . import MAX_SEED, IntRange, add_command, write_text
from .explain import add_output_options, check_output, emit, labels_arg


def register(sub) -> None:
    p = add_command(sub, "exercise", "a fresh hand-calculation exercise and its blank answers file", __doc__)
    p.add_argument("--tokens", type=IntRange(2, 8), help="number of tokens, 2..8 (default 3, or as many as --labels)")
    names = p.add_mutually_exclusive_group()
    names.add_argument("--labels", metavar="A,B,C", help="the tokens' labels, comma separated (2..8; sets the number "
                       "of tokens)")
    names.add_argument("--text", metavar="TEXT", help="the tokens from a text: its words, or its characters when it "
                       "has no spaces (我喜欢 → 我, 喜, 欢)")
    p.add_argument("--dim", type=IntRange(1, 4), default=2, help="vector size d_model = d_k = d_v, 1..4 (default 2)")
    p.add_argument("--seed", type=IntRange(0, MAX_SEED), help="seed of the problem (default: a random one)")
    p.add_argument("--style", choices=("int", "decimal"), default="int",
                   help="small integers or one-decimal numbers (default int)")
    p.add_argument("--solution", action="store_true", help="print the worked solution and the answers too")
    p.add_argument("--answers", metavar="FILE", help="where to write the blank answers file "
                                                     "(default exercise-SEED-answers.yaml)")
    p.add_argument("--no-answers", action="store_true", help="do not write an answers file")
    add_output_options(p)


def run(args) -> int:
    from ..exercise import make_exercise
    from ..explain.doc import t
    from ..explain.render.base import Ctx
    check_output(args)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") % 100000
    labels = exercise_labels(args)
    ex = make_exercise(tokens=args.tokens if args.tokens is not None else 3, dim=args.dim, seed=seed,
                       style=args.style, lang=args.lang, labels=labels)
    if args.no_answers and args.answers is not None:  # one of them would be dropped
        raise error(InputError, "errors.answers_and_no_answers", path=args.answers)
    if not args.no_answers and args.answers and os.path.isdir(args.answers):
        raise error(InputError, "errors.answers_folder", path=args.answers,
                    example=os.path.join(args.answers, f"exercise-{seed}-answers.yaml"))
    if not args.no_answers and args.answers and not args.answers.lower().endswith((".yaml", ".yml")):
        # the file is YAML: under another name check would read it as JSON or TOML, or not at all
        raise error(InputError, "errors.answers_suffix", path=args.answers,
                    example=os.path.splitext(args.answers)[0] + ".yaml")
    folder = os.path.dirname(args.answers or "") or "."
    if not args.no_answers and not os.path.isdir(folder):  # before the problem is printed, not after
        raise error(InputError, "errors.answers_no_folder", path=args.answers, folder=folder)
    path = args.answers or f"exercise-{seed}-answers.yaml"
    if not args.no_answers and args.output and os.path.abspath(args.output) == os.path.abspath(path):
        # the problem would take the answers file's place (or replace the learner's answers with --overwrite)
        raise error(InputError, "errors.answers_is_output", path=args.output,
                    example=os.path.splitext(args.output)[0] + ".txt")
    emit(ex.solution() if args.solution else ex.problem(), args)
    if not args.no_answers:
        ctx = Ctx(args.lang)
        if os.path.exists(path):
            print(ctx.text(t("ex.kept", path=path)), file=sys.stderr)
        else:
            write_text(path, ex.answers_file(), "errors.answers_unwritable", path=path)
            print(ctx.text(t("ex.wrote", path=path)), file=sys.stderr)
    return 0


def exercise_labels(args):
    """The labels of --labels or --text (None without either); InputError when --tokens disagrees."""
    from ..exercise import labels_from_text
    if args.labels is None and args.text is None:
        return None
    if args.labels is not None:
        labels, flag = labels_arg(args.labels), "--labels"
    else:
        labels, flag = labels_from_text(args.text), "--text"
        if not 2 <= len(labels) <= 8:  # said of the text, which names no labels
            raise error(InputError, "errors.text_tokens_count", n=len(labels), labels=", ".join(labels))
    if args.tokens is not None and args.tokens != len(labels):
        raise error(InputError, "errors.labels_tokens", tokens=args.tokens, flag=flag, n=len(labels),
                    labels=", ".join(labels))
    return labels
