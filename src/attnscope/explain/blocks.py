"""The pieces of a worked calculation (:class:`~.doc.Worked`), independent of how they are shown.

A step (:class:`Step`) is a list of blocks. Blocks hold float64 numbers (never rounded) and
translatable text (:class:`T`, a label key with parameters, looked up in :mod:`.i18n` by the
renderer), which :mod:`.render` shows as a terminal table, Markdown, LaTeX or JSON.

Math symbols are :class:`Sym` s with a Unicode form (terminal, Markdown) and a TeX form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

import numpy as np

__all__ = ["COUNTING", "INDEX_BASE", "SUBSCRIPTS", "SUPERSCRIPTS", "Block", "Cell", "Divide", "DotRow", "Formula", "Matrix",
           "Para", "ScaleLine", "Step", "SumLine", "Sym", "T", "Table", "VecParam", "WeightedSum", "dot_rows", "sub", "t",
           "t_or", "vec", "words"]

#: The label of the line that states how everything is counted: from 0 (positions, rows, columns,
#: dimensions, heads, layers), as the trace, the viewer and ``--position``/``--head``/``--layer`` do.
#: :class:`~.doc.Worked` adds it to every intro; the check report states it too.
COUNTING = "counting"
#: The first index of every position, row, column, dimension, head and layer shown (JSON: index_base).
INDEX_BASE = 0


@dataclass(frozen=True)
class Sym:
    """A math symbol: ``text`` for terminals/Markdown, ``tex`` for LaTeX."""

    text: str
    tex: str


#: Digits as Unicode subscripts and superscripts (o₂; W_Q⁽¹⁾, 10⁻³), for symbols and the renderers' TeX → Unicode.
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
SUPERSCRIPTS = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")


def sub(name: str, tex: str, *idx: int) -> Sym:
    """``sub("o", "o", 2)`` → o₂ / o_{2}; several indices are joined (a₂₃ / a_{2,3})."""
    text = name + "".join(str(i) for i in idx).translate(SUBSCRIPTS) if all(0 <= i < 10 for i in idx) \
        else name + "_" + ",".join(str(i) for i in idx)
    return Sym(text, f"{tex}_{{{','.join(str(i) for i in idx)}}}")


@dataclass
class T:
    """Translatable text: a key of :data:`.i18n.LABELS` and the values of its ``{placeholders}``.

    Parameter values may be str, int, float (formatted with the output's decimals), :class:`Sym`
    or another :class:`T`. ``texts`` (language → template) gives the text itself instead of a
    key, for words that live elsewhere (a scoring's words in :mod:`attnscope.scorings`).
    """

    key: str
    params: dict = field(default_factory=dict)
    texts: Optional[Mapping[str, str]] = None


def t(key: str, **params: Any) -> T:
    return T(key, params)


def t_or(key: str, fallback: str, **params: Any) -> T:
    """``t(key)`` when the labels have ``key`` (a scoring's own wording), else ``t(fallback)``."""
    from .i18n import EN
    return T(key if key in EN else fallback, params)


def words(texts: Mapping[str, str], **params: Any) -> T:
    """Text given in every language (``{"en": …, "zh": …}``; English where a language is missing)."""
    return T("", params, dict(texts))


@dataclass
class VecParam:
    """A vector used as a text parameter; renderers show it as [a, b, …] at the output's decimals."""

    values: list
    exact: bool = False  # show as given (15.3, 1.5), not at the output's decimals


def vec(x, exact: bool = False) -> VecParam:
    """A vector (d,) as a text parameter, its entries as floats (``exact``: input numbers, shown as given)."""
    return VecParam([float(a) for a in x], exact=exact)


# ----------------------------------------------------------------------------------------------
# blocks
# ----------------------------------------------------------------------------------------------

@dataclass
class Para:
    """A paragraph of text."""

    text: T
    style: str = ""  # "" | "note" | "warn"


@dataclass
class Formula:
    """A displayed formula, language-neutral."""

    text: str
    tex: str


@dataclass
class Matrix:
    """A labelled matrix (m, n) of float64 values.

    ``rows``/``cols``: header labels (tokens, or 0..n−1 when None). ``as_int``: show without decimals
    (None: decide from the values).
    """

    sym: Optional[Sym]
    values: np.ndarray
    rows: Optional[list] = None
    cols: Optional[list] = None
    as_int: Optional[bool] = None
    caption: Optional[T] = None
    exact: bool = False  # input numbers: shown as given (1.5), not at the output's decimals


Cell = Union[float, int, str, T, Sym, None]


@dataclass
class Table:
    """A table whose header cells are text; body cells are numbers, text or symbols."""

    header: list
    rows: list
    caption: Optional[T] = None


@dataclass
class DotRow:
    """Row·column products written out: ``lhs = [a·b + c·d, …] = [v, …]``.

    ``entries[j]`` is the list of (a, b) pairs that sum to ``values[j]``. One entry is a scalar.
    """

    lhs: Sym
    entries: list
    values: list


def dot_rows(lhs, A, B, out) -> list:
    """Every row of ``A (m, n) · B (n, p)`` written out: ``lhs(i) = [A[i, 0]·B[0, j] + …, …] = out[i]``."""
    return [DotRow(lhs(i), [[(A[i, c], B[c, j]) for c in range(B.shape[0])] for j in range(B.shape[1])], list(out[i]))
            for i in range(A.shape[0])]


@dataclass
class SumLine:
    """``lhs = t₁ + t₂ + … = value``."""

    lhs: Sym
    terms: list
    value: float


@dataclass
class Divide:
    """``lhs = [n₁, n₂, …] / den = [v₁, v₂, …]`` (or a scalar when one numerator)."""

    lhs: Sym
    nums: list
    den: float
    values: list


@dataclass
class ScaleLine:
    """``lhs = [s₁, …] × factor = [v₁, …]``, or ``÷ divisor`` when ``divisor`` is given."""

    lhs: Sym
    items: list
    values: list
    factor: Optional[float] = None
    divisor: Optional[Sym] = None


@dataclass
class WeightedSum:
    """``lhs = w₁·v₁ + w₂·v₂ + … = [products summed] = value``.

    ``products``: the products w_j·v_j as the caller computed them (exactly, for a toy); None:
    the renderer multiplies the floats. ``vectors`` may be truncated to their first dimensions (``truncated`` says so); ``labels``
    name the rows (tokens) and are shown in a legend.
    """

    lhs: Sym
    weights: list
    vectors: list
    value: list
    labels: Optional[list] = None
    truncated: bool = False
    products: Optional[list] = None  # products[j][c] = weights[j]·vectors[j][c], computed by the caller


Block = Union[Para, Formula, Matrix, Table, DotRow, SumLine, Divide, ScaleLine, WeightedSum]


@dataclass
class Step:
    key: str
    title: T
    blocks: list
