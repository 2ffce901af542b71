"""How numbers are shown, and how a written number is read back.

Rounding happens here, at display time only, and it is *half-up on the decimal value*: the exact
value of a hand-sized calculation (:mod:`attnscope.exact`: 4.445 is 4.445, so it shows as 4.45 at
two places), or the shortest decimal form of a float (``repr``), which is what a learner does with
a calculator: 0.0825 shown to 3 decimals is 0.083, even though the binary float nearest to 0.0825
lies just below it. The checker (:mod:`attnscope.check`) judges with the same values, so what
``explain`` prints is exactly what ``check`` accepts.

A shown number is a :class:`Shown`: its digits, and a power of ten when the value is too large or
too small (non-zero, but it would round to 0) to be read in fixed notation. Each renderer writes
the power its own way (``3.0590e-7``, ``3.0590\\times10^{-7}``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from typing import Optional

import numpy as np

#: Above this magnitude numbers are shown as mantissa × 10^e.
BIG = 1e6


@dataclass(frozen=True)
class Shown:
    """A number as it is displayed: ``digits`` (e.g. "-3.0590"), times ``10**exp`` when exp is set.

    ``special`` is "inf", "-inf" or "nan" for non-finite values (digits is then empty).
    """

    digits: str
    exp: Optional[int] = None
    special: Optional[str] = None

    def plain(self) -> str:
        """Unicode form for terminals and Markdown: ``1.5``, ``3.0590e-7``, ``−∞``."""
        if self.special is not None:
            return {"inf": "∞", "-inf": "−∞", "nan": "NaN"}[self.special]
        return self.digits if self.exp is None else f"{self.digits}e{self.exp}"

    def tex(self) -> str:
        if self.special is not None:
            return {"inf": r"\infty", "-inf": r"-\infty", "nan": r"\mathrm{NaN}"}[self.special]
        return self.digits if self.exp is None else rf"{self.digits}\times10^{{{self.exp}}}"


def _context(d: Decimal, decimals: int) -> Context:
    """A decimal context precise enough to hold ``d`` at ``decimals`` places (the default 28
    digits are not: 1e-30 at 30 decimals, or a 29-decimal answer, would raise InvalidOperation)."""
    return _context_of(max(28, d.adjusted() + 1 + max(decimals, 0) + 2))


@lru_cache(maxsize=256)
def _context_of(prec: int) -> Context:
    return Context(prec=prec, Emin=-999999999, Emax=999999999)


def as_decimal(x) -> Decimal:
    """The decimal value of a shown number: a Decimal as it is (the exact values of
    :mod:`attnscope.exact`), a Fraction exactly where it terminates, an int exactly, a float by
    its shortest form (``repr``: what a learner reads on a calculator)."""
    if isinstance(x, Decimal):
        return x
    if isinstance(x, Fraction):
        from ..exact import dec
        return dec(x)
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return Decimal(int(x))
    x = float(x)
    if math.isnan(x):
        return Decimal("NaN")
    if math.isinf(x):
        return Decimal("Infinity") if x > 0 else Decimal("-Infinity")
    return Decimal(repr(x))


def round_half_up(x, decimals: int) -> Decimal:
    """``x`` rounded half-up at ``decimals`` places, from its decimal value (:func:`as_decimal`)."""
    q = Decimal(1).scaleb(-decimals)
    d = as_decimal(x)
    return d.quantize(q, rounding=ROUND_HALF_UP, context=_context(d, decimals))


def is_int(x) -> bool:
    d = as_decimal(x)
    return d.is_finite() and abs(d) < BIG and d == d.to_integral_value()


def show(x, decimals: int, as_int: Optional[bool] = None, in_group: bool = False, alone: bool = False) -> Shown:
    """The displayed form of ``x`` (a float, or an exact Decimal/Fraction) with ``decimals`` places.

    ``as_int``: True shows an integer-valued x without decimals, False always with them, None
    decides per number. Non-zero values that would round to zero, and values ≥ 1e6 in size, are
    shown as ``decimals + 1`` significant digits times a power of ten.

    ``in_group``: the number stands among others at ``decimals`` places (a vector, a matrix row).
    There a value that is merely below the last place (|x| ≥ 10^-(decimals+2)) is written 0.0000
    like its neighbours instead of ``-2.2839e-5``; far smaller ones (a saturated softmax's
    9.3576e-14) keep their power of ten, which is the point of showing them.

    ``alone``: the number stands by itself in a sentence. There a value that the places would
    leave with one digit (θ = 1.0746e-4 as 0.0001; below 9.5·10^-decimals) keeps its power of ten.
    """
    d = as_decimal(x)
    if d.is_nan():
        return Shown("", special="nan")
    if d.is_infinite():
        return Shown("", special="inf" if d > 0 else "-inf")
    if as_int is None:
        as_int = is_int(d)
    if as_int and is_int(d):
        return Shown(str(int(d)))
    size = abs(d)
    tiny = d != 0 and size < Decimal(5).scaleb(-decimals - 1)
    if tiny and in_group and size >= Decimal(1).scaleb(-decimals - 2):
        tiny = False
    if alone and d != 0 and size < Decimal("9.5").scaleb(-decimals):
        tiny = True
    if size >= BIG or tiny:
        mant, exp = mantissa(d, decimals)
        return Shown(fixed(mant), exp=exp)
    return Shown(fixed(round_half_up(d, decimals)))


def mantissa(d: Decimal, decimals: int) -> tuple[Decimal, int]:
    """``d`` (finite, non-zero) as m × 10^e with m rounded half-up at ``decimals`` places, 1 ≤ |m| < 10."""
    exp = d.adjusted()
    q = Decimal(1).scaleb(-decimals)
    ctx = _context(Decimal(1), decimals)
    mant = d.scaleb(-exp).quantize(q, rounding=ROUND_HALF_UP, context=ctx)
    if abs(mant) >= 10:  # 9.99996 -> 10.0000: renormalise
        exp += 1
        mant = d.scaleb(-exp).quantize(q, rounding=ROUND_HALF_UP, context=ctx)
    return mant, exp


def fixed(d: Decimal) -> str:
    """``d`` in fixed notation, as many places as it has (no exponent), never "-0.0000"."""
    s = f"{d:f}"
    if s.startswith("-") and set(s[1:]) <= set("0."):
        s = s[1:]  # no "-0.0000"
    return s


def short(x: float) -> str:
    """The shortest text that reads back as ``x`` (15.3, -10, 0.76): for numbers given as input."""
    x = float(x)
    if is_int(x):
        return str(int(x))
    return repr(x)


def fmt(x: float, decimals: int, as_int: Optional[bool] = None) -> str:
    """``show(...).plain()``."""
    return show(x, decimals, as_int).plain()


def percent(p) -> str:
    """A share as a percentage at one decimal: 0.4567 → ``45.7%``."""
    return fmt(100 * p, 1) + "%"


def matrix_is_int(values) -> bool:
    """True when every finite entry is an integer (then a matrix is shown without decimals)."""
    flat = [as_decimal(v) for v in np.asarray(values, dtype=object).ravel()]
    finite = [v for v in flat if v.is_finite()]
    return bool(finite) and all(is_int(v) for v in finite)


# ----------------------------------------------------------------------------------------------
# reading a written number back (used by the checker)
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Written:
    """A number as a learner wrote it: its value and the place of its last written digit.

    ``decimals`` is the number of digits after the decimal point (3 for ``0.710``; 4 for
    ``1.2e-3``; 0 for ``5``; -2 for ``5e2``). ``text`` is the literal text.
    """

    value: float
    decimals: int
    text: str

    @property
    def exact(self) -> Decimal:
        """The written value exactly (``0.710`` is 0.710; ``1.7705e44`` is 1.7705×10^44); ±Infinity."""
        t = _ascii(self.text)
        low = t.lower()
        if low in _INF_WORDS:
            return Decimal("Infinity") if _INF_WORDS[low] > 0 else Decimal("-Infinity")
        try:
            d = Decimal(t[1:] if t.startswith("+") else t)
            if d.is_finite():
                return d
        except InvalidOperation:
            pass
        return as_decimal(self.value)  # a YAML spelling such as 0x1F: its value

    @property
    def scientific(self) -> bool:
        """Written with a power of ten (``1.7705e44``): then judged and reported by significant digits."""
        t = _ascii(self.text).lower()
        return "e" in t and t not in _INF_WORDS and not t.startswith("0x")

    @property
    def significant(self) -> int:
        """The number of significant digits written (5 for ``1.7705e44``; 1 for ``0.0003``)."""
        d = self.exact
        return len(d.as_tuple().digits) if d.is_finite() and d != 0 else 1

    @property
    def unit(self) -> float:
        """One unit in the last written digit: 10**-decimals (0.0 below float64's range)."""
        return 10.0 ** (-self.decimals) if -self.decimals < 308 else math.inf

    @property
    def overflows(self) -> bool:
        """True for a number too large for float64 (``1e400``), as opposed to a written infinity."""
        return math.isinf(self.value) and _ascii(self.text).lower() not in _INF_WORDS


_INF_WORDS = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "∞": math.inf, "-∞": -math.inf,
              "−∞": -math.inf, "infinity": math.inf, "-infinity": -math.inf, ".inf": math.inf,
              "-.inf": -math.inf, "+.inf": math.inf}

#: A Chinese input method's full-width signs, point and exponent: Decimal reads full-width digits
#: (０.５) but not these (０．５, －1), which look the same as ASCII in an error message.
_FULL_WIDTH = str.maketrans({"−": "-", "－": "-", "＋": "+", "．": ".", "ｅ": "e", "Ｅ": "E"})


def _ascii(text) -> str:
    """``text`` stripped, with a Unicode minus and full-width signs as ASCII and no ``_``."""
    return str(text).strip().translate(_FULL_WIDTH).replace("_", "")


def parse_written(text: str) -> Optional[Written]:
    """Read ``text`` as a written number, keeping its precision; None if it is not a number.

    Accepts plain decimals, scientific notation, a Unicode minus sign, full-width digits and signs
    (``－０．５``) and infinities (``-inf``, ``−∞``), which stand for masked scores.
    """
    t = _ascii(text)
    low = t.lower()
    if low in _INF_WORDS:
        return Written(_INF_WORDS[low], 0, str(text).strip())
    if low.startswith("+"):
        t = t[1:]
    try:
        d = Decimal(t)
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    return Written(float(d), -int(d.as_tuple().exponent), str(text).strip())


# ----------------------------------------------------------------------------------------------
# counts in sentences
# ----------------------------------------------------------------------------------------------

def counted(n: int, singular: str, plural: str = "") -> str:
    """``1 batch``, ``3 batches``, ``1,024 texts``: a count with its noun in the right number.

    ``plural`` defaults to ``singular + "s"``. Thousands are grouped with commas.
    """
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def sci(x: float) -> str:
    """A difference in scientific notation with two significant digits (``1.2e-07``), as the
    checks against the model's trace print it."""
    return f"{x:.1e}"
