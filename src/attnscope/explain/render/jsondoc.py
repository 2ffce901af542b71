"""JSON: the same structure as the object, every number unrounded (float64 → JSON double).

Texts are translated (``lang``) and numbers inside sentences are shown at ``decimals``; the numbers
in ``values`` and in the blocks are not rounded. JSON has no infinity: a masked score (−∞) is
written as null, and its place is given by ``meta.masked``/the ``masked`` matrix being null there.
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal

import numpy as np

from ..blocks import INDEX_BASE, Formula, Matrix, Para, Sym, Table, VecParam
from .base import Ctx


def _num(x):
    if isinstance(x, dict):
        return {str(k): _num(v) for k, v in x.items()}
    if isinstance(x, (np.ndarray, list, tuple)):
        return [_num(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating, Decimal)):  # Decimal: an exact value, as the nearest double
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def _cell(ctx: Ctx, c):
    if isinstance(c, (float, int, np.floating, np.integer, Decimal)) and not isinstance(c, bool):
        return _num(c)
    if isinstance(c, Sym):
        return c.text
    if isinstance(c, VecParam):
        return _num(c.values)
    return ctx.text(c)


def block(ctx: Ctx, b) -> dict:
    if isinstance(b, Para):
        return {"type": "para", "text": ctx.text(b.text), "style": b.style or None}
    if isinstance(b, Formula):
        return {"type": "formula", "text": b.text, "tex": b.tex}
    if isinstance(b, Matrix):
        return {"type": "matrix", "symbol": b.sym.text if b.sym else None, "values": _num(b.values),
                "rows": list(b.rows) if b.rows else None, "cols": list(b.cols) if b.cols else None,
                "caption": ctx.text(b.caption) if b.caption else None}
    if isinstance(b, Table):
        return {"type": "table", "header": [ctx.text(h) for h in b.header],
                "rows": [[_cell(ctx, c) for c in r] for r in b.rows],
                "caption": ctx.text(b.caption) if b.caption else None}
    d = {"type": _snake(type(b).__name__), "lhs": b.lhs.text}
    for f in dataclasses.fields(b):
        if f.name == "lhs":
            continue
        v = getattr(b, f.name)
        d[f.name] = v.text if isinstance(v, Sym) else _num(v)
    return d


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def to_dict(w, lang: str = "en", decimals: int = 4) -> dict:
    ctx = Ctx(lang, decimals, "text")
    return {
        "kind": w.kind,
        "lang": lang,
        "decimals": decimals,
        "index_base": INDEX_BASE,  # positions, rows, columns, dimensions, heads and layers count from 0
        "title": ctx.text(w.title),
        "meta": {k: _num(v) for k, v in w.meta.items()},
        "values": {k: _num(v) for k, v in w.values.items()},
        "intro": [block(ctx, b) for b in w.intro],
        "steps": [{"key": s.key, "title": ctx.text(s.title), "blocks": [block(ctx, b) for b in s.blocks]}
                  for s in w.steps],
    }


def render(w, lang: str = "en", decimals: int = 4) -> str:
    return json.dumps(to_dict(w, lang, decimals), ensure_ascii=False, indent=2, allow_nan=False) + "\n"


__all__ = ["to_dict", "render", "block"]
