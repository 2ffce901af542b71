"""``attnscope exercise``: a fresh hand-calculation problem, a blank answers file, and (on request)
the worked solution.

  attnscope exercise --tokens 3 --dim 2 --seed 7           the problem; writes exercise-7-answers.yaml
  attnscope exercise --seed 7 --solution --lang zh         the worked solution and the answers, in Chinese
  attnscope check exercise-7-answers.yaml                  once you have filled it in

Without --seed a random one is drawn (and shown in the title, to get the same problem again).
An existing answers file is never overwritten.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import MAX_SEED, IntRange
from .explain import add_output_options, check_output, emit


def register(sub) -> None:
    p = sub.add_parser("exercise", help="a fresh hand-calculation exercise and its blank answers file",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=IntRange(2, 8), default=3, help="number of tokens, 2..8 (default 3)")
    p.add_argument("--dim", type=IntRange(1, 4), default=2, help="vector size d_model = d_k = d_v, 1..4 (default 2)")
    p.add_argument("--seed", type=IntRange(0, MAX_SEED), help="seed of the problem (default: a random one)")
    p.add_argument("--style", choices=("int", "decimal"), default="int",
                   help="small integers or one-decimal numbers (default int)")
    p.add_argument("--solution", action="store_true", help="print the worked solution and the answers too")
    p.add_argument("--answers", metavar="FILE", help="where to write the blank answers file "
                                                     "(default exercise-SEED-answers.yaml)")
    p.add_argument("--no-answers", action="store_true", help="do not write an answers file")
    add_output_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import InputError
    from ..exercise import make_exercise
    from ..explain.doc import t
    from ..explain.render.base import Ctx
    check_output(args)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") % 100000
    ex = make_exercise(tokens=args.tokens, dim=args.dim, seed=seed, style=args.style, lang=args.lang)
    if not args.no_answers and args.answers and os.path.isdir(args.answers):
        raise InputError(f"--answers {args.answers} is a folder; give the answers file's name, e.g. "
                         f"{os.path.join(args.answers, f'exercise-{seed}-answers.yaml')}")
    emit(ex.solution() if args.solution else ex.problem(), args)
    if not args.no_answers:
        path = args.answers or f"exercise-{seed}-answers.yaml"
        ctx = Ctx(args.lang)
        if os.path.exists(path):
            print(ctx.text(t("ex.kept", path=path)), file=sys.stderr)
        else:
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(ex.answers_file())
            except OSError as e:
                raise InputError(f"cannot write the answers file {path}: {e.strerror}") from None
            print(ctx.text(t("ex.wrote", path=path)), file=sys.stderr)
    return 0
