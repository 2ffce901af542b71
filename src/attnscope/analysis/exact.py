"""Exact sums of float64 numbers, whatever the order they are added in.

Float64 addition is not associative: the same numbers added in another order (one process, four
shards, a torchrun all-reduce) differ in the last bits. Here every finite float64 is kept as the
integer ``x · 2**1074`` (exact: 2**-1074 is the smallest positive float64, so every finite float64
is a whole multiple of it), the integers are added in Python's unbounded ints, and the total is
rounded to float64 once, when it is read (CPython's ``int / int`` is correctly rounded). Sums of
the same numbers are then the same bits in any order and any grouping.

Non-finite addends (inf, NaN) are added apart as floats: inf + inf, inf + (−inf) = NaN and
NaN + anything give the same in any order, and such a cell reads as that value.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

#: every finite float64 times 2**SCALE_BITS is an integer
SCALE_BITS = 1074
_ONE = 1 << SCALE_BITS


def to_scaled_int(x: float) -> int:
    """``x · 2**1074`` as an int, exactly (``x`` finite)."""
    n, d = x.as_integer_ratio()  # d is a power of two, at most 2**1074
    return n << (SCALE_BITS - d.bit_length() + 1)


def from_scaled_int(n: int) -> float:
    """``n / 2**1074`` rounded once to the nearest float64 (±inf past the largest)."""
    try:
        return n / _ONE
    except OverflowError:  # (n is too large for math.copysign, which converts it to a float)
        return math.inf if n > 0 else -math.inf


def encode(n: int) -> str:
    """A short text for a scaled int: ``"0"``, or the hex digits above its trailing zeros and
    their count (``"-1bp1070"`` = −0x1b · 2**1070); sums of float64s have many trailing zeros."""
    if n == 0:
        return "0"
    tz = (n & -n).bit_length() - 1
    return f"{'-' if n < 0 else ''}{abs(n) >> tz:x}p{tz}"


def decode(s: str) -> int:
    if s == "0":
        return 0
    digits, _, tz = s.partition("p")
    return int(digits, 16) << int(tz)


class ExactArray:
    """A flat array of exact float64 sums: :meth:`add` numbers into cells, :meth:`values` reads them.

    Args:
        size: the number of cells.
    """

    def __init__(self, size: int) -> None:
        self.ints = [0] * int(size)                   # finite addends, times 2**1074
        self.special = np.zeros(int(size), np.float64)  # the non-finite addends, as floats

    def __len__(self) -> int:
        return len(self.ints)

    def add(self, start: int, values: Iterable[float]) -> None:
        """Add ``values`` into the cells ``start, start+1, …``."""
        ints = self.ints
        for j, v in enumerate(values, start):
            if math.isfinite(v):
                ints[j] += to_scaled_int(v)
            else:
                with np.errstate(invalid="ignore"):  # inf + (-inf) is NaN, on purpose
                    self.special[j] += v

    def merge(self, other: "ExactArray") -> "ExactArray":
        """Add every cell of ``other`` (the same size) into this one; returns self."""
        self.ints = [a + b for a, b in zip(self.ints, other.ints)]
        with np.errstate(invalid="ignore"):  # inf + (-inf) is NaN, on purpose (as in add)
            self.special = self.special + other.special
        return self

    def values(self) -> np.ndarray:
        """``(size,)`` float64: each cell's sum, rounded once."""
        out = np.array([from_scaled_int(n) for n in self.ints], dtype=np.float64)
        return np.where(self.special != 0, self.special, out)  # NaN != 0 too

    def to_list(self) -> list[str]:
        """JSON-ready: one string per cell (``"nan"``, ``"inf"``, ``"-inf"`` for a non-finite one)."""
        return [repr(float(s)) if s != 0 else encode(n) for n, s in zip(self.ints, self.special)]

    @classmethod
    def from_list(cls, cells: Sequence[str]) -> "ExactArray":
        a = cls(len(cells))
        for i, s in enumerate(cells):
            if s in ("nan", "inf", "-inf"):
                a.special[i] = float(s)
            else:
                a.ints[i] = decode(s)
        return a
