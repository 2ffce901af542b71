"""The pieces of an error message that name a place or a thing in a learner's input, as
:class:`~attnscope.i18n.Msg` objects so that the whole error reads in the command's ``--lang``:
where in an answers file ("answers.yaml, key weights, row 2 (from 0)"), what was found there
(``kind``: "a list", "the number 1.5") and a count with its noun ("2 rows", "1 number").

A place is handed to :mod:`attnscope.explain.inputs`, which types ``where`` as ``str`` and only
formats it: :func:`place` passes the Msg on (its ``str()`` is the English place, byte for byte as
before)."""

from __future__ import annotations

from typing import Any, cast

from ..explain.numbers import Written
from ..i18n import Msg

#: The nouns :func:`count` knows (singular form -> key stem).
NOUNS = {"row": "errors.check_n_row", "number": "errors.check_n_number", "column": "errors.check_n_column"}


def kind(x: Any) -> Msg:
    """What ``x`` is, as :func:`attnscope.explain.inputs.kind_of` says it in English."""
    if x is None:
        return Msg("errors.check_kind_nothing")
    if isinstance(x, (list, tuple)):
        return Msg("errors.check_kind_list")
    if isinstance(x, dict):
        return Msg("errors.check_kind_mapping")
    if isinstance(x, Written):
        return Msg("errors.check_kind_number", text=x.text)
    return Msg("errors.check_kind_other", type=type(x).__name__, value=repr(x))


def count(n: int, noun: str) -> Msg:
    """``n`` with ``noun`` in the right number ("1 row", "1,024 numbers"), as ``counted`` writes it."""
    return Msg(NOUNS[noun] + ("_one" if n == 1 else ""), n=f"{n:,}")


def place(where: Msg) -> str:
    """``where`` for a function typed ``where: str`` that only formats it (explain.inputs)."""
    return cast(str, where)
