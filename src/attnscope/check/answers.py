"""Reading a learner's answers: the ``answers`` mapping as written numbers (:class:`Written`, with
the decimals as written) per step of the chain, every shape checked."""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from ..errors import InputError
from ..explain import inputs
from ..explain.full_width import no_full_width_separator
from ..explain.numbers import Written, parse_written
from ..explain.places import count, kind
from ..explain.toy_input import norm_key
from ..i18n import Msg, error
from .chain import Chain, Link

#: Spellings accepted for the answer keys.
ALIASES = {
    "q": "Q", "k": "K", "v": "V",
    "scores": "scores", "score": "scores", "raw": "scores", "qkt": "scores", "s": "scores",
    "scaled": "scaled", "scaledscores": "scaled",
    "exp": "exp", "exps": "exp", "e": "exp", "exponentials": "exp",
    "sums": "sums", "sum": "sum", "rowsums": "sums",
    "weights": "weights", "softmax": "weights", "probabilities": "weights", "probs": "weights", "a": "weights",
    "output": "output", "outputs": "output", "out": "output", "o": "output", "z": "output",
    "projected": "projected", "y": "projected",
    "qnormed": "Q_normed", "knormed": "K_normed", "qhat": "Q_normed", "khat": "K_normed",
    "qrot": "Q_rot", "krot": "K_rot", "qrotated": "Q_rot", "krotated": "K_rot", "rotatedq": "Q_rot",
    "rotatedk": "K_rot", "qprime": "Q_rot", "kprime": "K_rot",
    # multi-head problems (check/multihead.py)
    "qkv": "QKV", "fused": "QKV", "xwqkv": "QKV", "concat": "concat", "concatenated": "concat",
    "concatenation": "concat",
}


def _written(x, where: Msg):
    """A Written (or None for a blank) from a parsed value."""
    value = inputs.number(x, where, allow_none=True, allow_inf=True)
    if value is None or isinstance(value, Written):
        return value
    if isinstance(x, (int, np.integer)):  # written without decimals: 1, not the float's 1.0
        return parse_written(str(int(x)))
    return parse_written(repr(float(value)))


def parse_answers(raw: Any, chain: Chain, source: Union[str, Msg]) -> dict:
    """The ``answers`` mapping → {link name: object array of Written/None}, shapes checked.
    ``source`` names the file (a Msg where it names a part of one, e.g. a head's section)."""
    if not isinstance(raw, dict):
        raise error(InputError, "errors.check_answers_kind", source=source, kind=kind(raw))
    names = chain.names()
    out = {}
    for key, value in raw.items():
        canon = ALIASES.get(norm_key(key), None)
        if canon in ("sum", "sums") and canon not in names:  # a row has one sum, a toy a sum per row: either spelling
            canon = "sums" if canon == "sum" else "sum"
        if canon is None or canon not in names:
            raise error(InputError, "errors.answers_unknown_key", source=source, name=repr(key), names=", ".join(names))
        if canon in out:
            raise error(InputError, "errors.answers_key_twice", source=source, name=repr(key), canon=canon)
        where = Msg("errors.check_where_key", source=source, name=key)
        out[canon] = _parse_link(value, chain.link(canon), where)
    if not out:
        raise error(InputError, "errors.answers_empty", source=source, names=", ".join(names))
    return out


def _parse_link(value, lk: Link, where: Msg) -> np.ndarray:
    n_rows, n_cols = lk.exact.shape
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if value is None:
        return np.full((n_rows, n_cols), None, dtype=object)
    if lk.vector == "row":
        if n_cols == 1 and not isinstance(value, (list, tuple)):
            value = [value]
        inputs.vector(value, where, allow_none=True, allow_inf=True, raw=True,
                      size=None if lk.max_cols else n_cols, max_size=n_cols if lk.max_cols else None)
        return np.array([[_written(c, Msg("errors.check_where_entry", where=where, j=j)) for j, c in enumerate(value)]],
                        dtype=object)  # the entries as given (checked above): an int stays one
    if lk.vector == "col":
        inputs.vector(value, where, allow_none=True, allow_inf=True, raw=True, size=n_rows)
        return np.array([[_written(c, Msg("errors.check_where_row", where=where, i=i))] for i, c in enumerate(value)],
                        dtype=object)
    if not isinstance(value, (list, tuple)):
        raise error(InputError, "errors.check_matrix_kind", where=where, rows=count(n_rows, "row"),
                    cols=count(n_cols, "number"), kind=kind(value))
    if len(value) != n_rows:
        raise error(InputError, "errors.check_matrix_rows", where=where, rows=count(n_rows, "row"), n=len(value))
    rows = [[None] * n_cols if r is None else r for r in value]
    for i, r in enumerate(rows):
        at = Msg("errors.check_where_row", where=where, i=i)
        if not isinstance(r, (list, tuple)):
            raise error(InputError, "errors.check_row_kind", where=at, cols=count(n_cols, "number"), kind=kind(r))
        if len(r) != n_cols:
            no_full_width_separator(r, at)
            raise error(InputError, "errors.check_row_len", where=at, cols=count(n_cols, "number"), n=len(r))
    return np.array([[_written(c, Msg("errors.check_where_cell", where=where, i=i, j=j)) for j, c in enumerate(r)]
                     for i, r in enumerate(rows)], dtype=object)
