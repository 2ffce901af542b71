"""Where the rounded numbers of an expansion line do not give its rounded result.

Every number a worked calculation shows is the exact value rounded on its own (half-up, at the
decimals), so the shown terms of a sum, product or quotient need not give the shown result:
16.9188 + 2.0281 + 34.3133 is 53.2602, and the exact sum shows as 53.2603. :func:`relations` says,
for each link of ``expansion(ctx, block)``'s chain (:mod:`.lines`), "=" or "≈": "≈" where the shown
numbers, worked exactly and rounded to the shown result's last place, do not give it. The renderers
keep the lines' "=" and name those lines in a note under them (:func:`.base.text_blocks`).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Optional

from ..blocks import Divide, DotRow, SumLine, WeightedSum


def _shown(ctx, x) -> Optional[Decimal]:
    """The value ``x`` is shown as (in a group), exactly; None for ±∞ and NaN."""
    s = ctx.shown(x, in_group=True)
    return None if s.special is not None else Decimal(s.digits).scaleb(s.exp or 0)


def _gives(ctx, computed: Optional[Decimal], result) -> bool:
    """Whether ``computed`` (worked exactly from shown numbers), rounded to the last place of the
    shown ``result``, is the shown result."""
    shown = ctx.shown(result, in_group=True)
    if computed is None or shown.special is not None:
        return True  # ±∞, masked: nothing to add up
    place = Decimal(shown.digits).as_tuple().exponent
    assert isinstance(place, int)  # a finite number's
    place += shown.exp or 0
    if place == 0 and not shown.exp:  # an integer shown as one (Σ_j p_j = 1): 1.0001 does not give it
        place = -ctx.decimals
    with localcontext() as c:
        c.prec, c.Emin, c.Emax = 80, -999999, 999999
        return computed.quantize(Decimal(1).scaleb(place), rounding=ROUND_HALF_UP) == \
            Decimal(shown.digits).scaleb(shown.exp or 0)


def _exact(f, *xs: Optional[Decimal]) -> Optional[Decimal]:
    if any(x is None for x in xs):
        return None
    with localcontext() as c:
        c.prec, c.Emin, c.Emax = 80, -999999, 999999
        return f(*xs)


def relations(ctx, b) -> list[str]:
    """"=" or "≈" for each link of ``expansion(ctx, b)``'s chain (the first, ``lhs = rhs₁``, is "=")."""
    def sums(pairs, results) -> bool:  # Σ a·b of shown numbers against each shown result
        return all(_gives(ctx, _exact(lambda *v: sum(v[i] * v[i + 1] for i in range(0, len(v), 2)),
                                      *[_shown(ctx, x) for pr in row for x in pr]), r)
                   for row, r in zip(pairs, results))
    if isinstance(b, DotRow):
        ok = [sums(b.entries, b.values)]
    elif isinstance(b, SumLine):
        ok = [sums([[(t, 1) for t in b.terms]], [b.value])]
    elif isinstance(b, Divide):
        den = _shown(ctx, b.den)
        ok = [den == 0 or all(_gives(ctx, _exact(lambda n, d: n / d, _shown(ctx, n), den), v)
                              for n, v in zip(b.nums, b.values))]
    elif isinstance(b, WeightedSum):
        products = b.products if b.products is not None else [[w * x for x in v] for w, v in zip(b.weights, b.vectors)]
        ok = [sums([[(w, x)] for w, v, pr in zip(b.weights, b.vectors, products) for x in v],
                   [p for pr in products for p in pr]),
              sums([[(pr[c], 1) for pr in products] for c in range(len(b.value))], b.value)]
    else:  # a scaling line: ÷ √d_k, irrational, is rounded whatever one does
        ok = [True]
    return ["="] + ["=" if k else "≈" for k in ok]
