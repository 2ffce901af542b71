"""``attnscope example``: a built-in worked example, step by step, computed exactly (a toy problem).

The short form of ``attnscope explain --example NAME``, with the same output options:

  attnscope example                          the three-token example of the second article
  attnscope example three-tokens --lang zh --format markdown
"""

from __future__ import annotations

from ..examples import EXAMPLES
from . import add_command
from .explain import add_output_options, check_output, emit


def register(sub) -> None:
    p = add_command(sub, "example", "a built-in worked example (= explain --example NAME)", __doc__)
    p.add_argument("name", nargs="?", default="three-tokens", choices=sorted(EXAMPLES),
                   help="which example (default: three-tokens)")
    add_output_options(p)


def run(args) -> int:
    from ..explain import explain
    check_output(args)
    emit(explain(example=args.name), args)
    return 0
