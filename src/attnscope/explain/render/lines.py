"""Expansion blocks as a left-hand side and a chain of right-hand sides.

``expansion(ctx, block)`` → ``(lhs, [rhs₁, rhs₂, …])`` where each rhs is a list of terms to be
joined by " + " (so a renderer can wrap long sums). Read as ``lhs = rhs₁ = rhs₂ = …``. The numbers
come out in the context's flavour (Unicode text or TeX math).
"""

from __future__ import annotations

from ..blocks import Divide, DotRow, ScaleLine, SumLine, WeightedSum
from .base import Ctx


def expansion(ctx: Ctx, b) -> tuple[str, list[list[str]]]:
    lhs = ctx.sym(b.lhs)
    if isinstance(b, DotRow):
        if len(b.entries) == 1:
            return lhs, [[f"{ctx.factor(a)}{ctx.times}{ctx.factor(c)}" for a, c in b.entries[0]],
                         [ctx.num(b.values[0])]]
        sep = ",\\ " if ctx.flavour == "tex" else ", "
        inner = sep.join(ctx.dot_terms(e) for e in b.entries)
        return lhs, [[f"[{inner}]"], [ctx.vec(b.values)]]
    if isinstance(b, SumLine):
        return lhs, [[ctx.factor(x) if i else ctx.num(x, in_group=True) for i, x in enumerate(b.terms)],
                     [ctx.num(b.value)]]
    if isinstance(b, Divide):
        slash = r" \,/\, " if ctx.flavour == "tex" else " / "
        if len(b.nums) == 1:
            return lhs, [[ctx.num(b.nums[0]) + slash + ctx.num(b.den)], [ctx.num(b.values[0])]]
        return lhs, [[ctx.vec(b.nums) + slash + ctx.num(b.den)], [ctx.vec(b.values)]]
    if isinstance(b, ScaleLine):
        if b.divisor is not None:
            op = (r" \,/\, " if ctx.flavour == "tex" else " / ") + ctx.sym(b.divisor)
        else:
            op = (r" \times " if ctx.flavour == "tex" else " × ") + ctx.num(b.factor)
        return lhs, [[ctx.vec(b.items) + op], [ctx.vec(b.values)]]
    if isinstance(b, WeightedSum):
        more = b.truncated
        first = [f"{ctx.num(w, in_group=True)}{ctx.times}{ctx.vec(v, more=more)}" for w, v in zip(b.weights, b.vectors)]
        products = b.products if b.products is not None else [[w * x for x in v] for w, v in zip(b.weights, b.vectors)]
        prods = [ctx.vec(pr, more=more) for pr in products]
        return lhs, [first, prods, [ctx.vec(b.value, more=more)]]
    raise TypeError(f"not an expansion block: {type(b).__name__}")


def text_lines(ctx: Ctx, b, width: int = 96) -> list[str]:
    """The expansion as plain lines: ``lhs = …`` then ``    = …`` aligned under the first ``=``."""
    from .base import wrap_terms
    lhs, chain = expansion(ctx, b)
    lines: list[str] = []
    pad = " " * len(lhs)
    for n, terms in enumerate(chain):
        head = f"{lhs} = " if n == 0 else f"{pad} = "
        for line in wrap_terms(head, terms, "", width=width):
            lines.extend(_wrap_commas(line, width, " " * (len(pad) + 4)))
    return lines


def _wrap_commas(line: str, width: int, indent: str) -> list:
    """A line still wider than ``width`` (one long vector) broken after ", " inside it."""
    out = []
    while len(line) > width:
        cut = line.rfind(", ", 0, width)
        if cut <= len(indent):
            break
        out.append(line[:cut + 1])
        line = indent + line[cut + 2:]
    out.append(line)
    return out
