"""The pieces of explain's error messages that name a place or count things ("file, key W_Q,
row 1, column 2 (from 0)", "3 rows", "a list"), as :class:`~attnscope.i18n.Msg` values, so that a
keyed error built from them is written wholly in the command's ``--lang``.

A place is a ``str`` (a file path, an option such as ``--scores``, a code name) or a Msg built
here; either renders as a key's value. In English every piece reads exactly as the f-strings these
helpers replaced (``str(at_key("a.yaml", "X")) == "a.yaml, key X"``).
"""

from __future__ import annotations

from typing import Any, Sequence, Union

from ..i18n import Msg
from .numbers import Written

#: A place in an input: a plain string or a Msg from the helpers below.
Where = Union[str, Msg]


def at_key(source: Where, key: Any) -> Msg:
    """``{source}, key {key}``: a key of a problem file."""
    return Msg("errors.explain_at_key", source=source, name=key)


def at_row(where: Where, row: int) -> Msg:
    """``{where}, row {row} (from 0)``."""
    return Msg("errors.explain_at_row", where=where, row=row)


def at_cell(where: Where, row: int, column: int) -> Msg:
    """``{where}, row {row}, column {column} (from 0)``."""
    return Msg("errors.explain_at_cell", where=where, row=row, column=column)


def at_entry(where: Where, entry: int) -> Msg:
    """``{where}, entry {entry} (from 0)``."""
    return Msg("errors.explain_at_entry", where=where, entry=entry)


def dotted(where: Where, sub: str) -> Msg:
    """``{where}.{sub}``: a key inside a key (``rope.positions``)."""
    return Msg("errors.explain_dotted", where=where, sub=sub)


def count(n: int, noun: str) -> Msg:
    """``1 row``, ``3 rows``, ``1,024 numbers`` (as :func:`.numbers.counted`); ``noun``: row,
    column, entry, number, label, score, token."""
    return Msg(f"errors.explain_n_{noun}{'_one' if n == 1 else ''}", n=f"{n:,}")


def kind(x: Any) -> Union[Msg, str]:
    """What ``x`` is, for "got …": nothing, a list, a mapping, the number 0.5, or its type and repr."""
    if x is None:
        return Msg("errors.explain_kind_nothing")
    if isinstance(x, (list, tuple)):
        return Msg("errors.explain_kind_list")
    if isinstance(x, dict):
        return Msg("errors.explain_kind_mapping")
    if isinstance(x, Written):
        return Msg("errors.explain_kind_number", text=x.text)
    return Msg("errors.explain_kind_other", type=type(x).__name__, value=repr(x))


#: Where a problem given as a mapping (not a file, not an example) came from.
INPUT = Msg("errors.explain_source_input")


def ordinal_list(items) -> str:
    """``0:[CLS] 1:我 2:喜`` — tokens with their positions, for a row's introduction and its errors."""
    return " ".join(f"{i}:{t}" for i, t in enumerate(items))


def distinct_labels(labels: Sequence[str]) -> list[str]:
    """Labels that each name one row: where one comes twice (我, 爱, 我) every label takes its position
    (0:我, 1:爱, 2:我), as :func:`ordinal_list` and explain name a model's keys; all of them, so that no
    label typed as ``1:我`` can meet a numbered one."""
    labels = list(labels)
    return [f"{i}:{x}" for i, x in enumerate(labels)] if len(set(labels)) < len(labels) else labels
