"""The calculation as a chain of steps that the checker can re-run from a learner's own numbers.

Each :class:`Link` knows its exact float64 values, how to recompute itself from the values of
earlier links (``world``: the learner's numbers where they wrote some, recomputed values where they
did not), and which entries of earlier links each of its entries depends on. Every link is a 2-D
array; a vector answer (a row of a real model, the row sums) is a (1, n) or (n, 1) array.

Chains: :func:`toy_chain` (Q, K, V, scores, scaled, exp, sums, weights, output[, projected]) and
:func:`row_chain` (scores, scaled, exp, sum, weights, output) for one query row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .. import reference as R
from ..explain.toy import compute
from ..explain.toy_input import ToyProblem


@dataclass
class Link:
    """One step of the chain.

    ``recompute(world) -> (rows, cols)``: the step from the world's earlier values.
    ``depends(taint) -> {input name: (rows, cols) bool}``: for each earlier link, whether the
    entries this entry is computed from are tainted (wrong or carried).
    ``rows``/``cols``: labels for the report. ``vector``: the learner writes a flat list.
    """

    name: str
    exact: np.ndarray
    recompute: Callable[[dict], np.ndarray]
    depends: Callable[[dict], dict]
    rows: list
    cols: list
    vector: Optional[str] = None  # None (matrix), "row" ((1, n) written as a list) or "col" ((n, 1))
    max_cols: bool = False        # the learner may write the first n columns only (output of a real row)


@dataclass
class Chain:
    kind: str                      # "toy" or "row"
    links: list
    meta: dict = field(default_factory=dict)

    def names(self) -> list:
        return [lk.name for lk in self.links]

    def link(self, name: str) -> Link:
        return next(lk for lk in self.links if lk.name == name)


def toy_chain(p: ToyProblem) -> Chain:
    v = compute(p)
    L, toks = p.L, list(p.tokens)
    f, allowed, shift = p.factor(), p.allowed(), v["shift"][:, None]
    rows = [f"{i + 1} ({tk})" for i, tk in enumerate(toks)]
    keys = [f"{j + 1} ({tk})" for j, tk in enumerate(toks)]
    dims = lambda n: [str(c + 1) for c in range(n)]  # noqa: E731
    none = lambda shape: (lambda T: {})  # noqa: E731
    links = []
    for n in ("Q", "K", "V"):
        links.append(Link(n, v[n], recompute=lambda w, n=n: v[n], depends=none(v[n].shape),
                          rows=rows, cols=dims(v[n].shape[1])))
    sc = p.scoring

    def scores(w):
        return R.raw_scores(*R.prepare_qk(w["Q"], w["K"], sc))  # (L, L)

    links.append(Link("scores", v["scores"], scores,
                      lambda T: {"Q": np.repeat(T["Q"].any(1, keepdims=True), L, 1),
                                 "K": np.repeat(T["K"].any(1)[None, :], L, 0)}, rows, keys))
    links.append(Link("scaled", np.where(allowed, v["scaled"], -np.inf),
                      lambda w: np.where(allowed, w["scores"] * f, -np.inf),
                      lambda T: {"scores": T["scores"]}, rows, keys))
    links.append(Link("exp", v["exp"], lambda w: R.shifted_exp(w["scaled"], shift),
                      lambda T: {"scaled": T["scaled"]}, rows, keys))
    links.append(Link("sums", v["sums"][:, None], lambda w: w["exp"].sum(1, keepdims=True),
                      lambda T: {"exp": T["exp"].any(1, keepdims=True)}, rows, ["Σ"], vector="col"))
    links.append(Link("weights", v["weights"], lambda w: R.divide_by_sum(w["exp"], w["sums"]),
                      lambda T: {"exp": T["exp"], "sums": np.repeat(T["sums"], L, 1)}, rows, keys))
    d_v = v["V"].shape[1]
    links.append(Link("output", v["output"], lambda w: w["weights"] @ w["V"],
                      lambda T: {"weights": np.repeat(T["weights"].any(1, keepdims=True), d_v, 1),
                                 "V": np.repeat(T["V"].any(0)[None, :], L, 0)}, rows, dims(d_v)))
    if p.W_O is not None:
        d_o = p.W_O.shape[1]
        links.append(Link("projected", v["projected"], lambda w: w["output"] @ p.W_O,
                          lambda T: {"output": np.repeat(T["output"].any(1, keepdims=True), d_o, 1)},
                          rows, dims(d_o)))
    return Chain("toy", links, meta={"tokens": toks, "name": p.name, "L": L})


def row_chain(raw: np.ndarray, keys: list, factor: float, allowed: Optional[np.ndarray] = None,
              V: Optional[np.ndarray] = None, meta: Optional[dict] = None, source: str = "problem") -> Chain:
    """One query row: raw scores (S,) are given (or come from a model), V (S, d_v) optional."""
    from ..explain.row import row_values
    S = len(raw)
    vals = row_values(raw, factor, allowed, V, source)
    ok = np.isfinite(vals["masked"])[None, :]  # (1, S)
    shift = vals["shift"]
    labels = [f"{j} ({k})" for j, k in enumerate(keys)]
    links = [
        Link("scores", vals["scores"][None, :], lambda w: vals["scores"][None, :], lambda T: {},
             ["-"], labels, vector="row"),
        Link("scaled", vals["masked"][None, :], lambda w: np.where(ok, w["scores"] * factor, -np.inf),
             lambda T: {"scores": T["scores"]}, ["-"], labels, vector="row"),
        Link("exp", vals["exp"][None, :], lambda w: R.shifted_exp(w["scaled"], shift),
             lambda T: {"scaled": T["scaled"]}, ["-"], labels, vector="row"),
        Link("sum", np.array([[vals["sum"]]]), lambda w: w["exp"].sum(1, keepdims=True),
             lambda T: {"exp": T["exp"].any(1, keepdims=True)}, ["-"], ["Σ"], vector="row"),
        Link("weights", vals["weights"][None, :], lambda w: R.divide_by_sum(w["exp"], w["sum"]),
             lambda T: {"exp": T["exp"], "sum": np.repeat(T["sum"], S, 1)}, ["-"], labels, vector="row"),
    ]
    if V is not None:
        V = np.asarray(V, dtype=np.float64)  # (S, d_v)
        d_v = V.shape[1]
        links.append(Link("output", vals["output"][None, :], lambda w: w["weights"] @ V,
                          lambda T: {"weights": np.repeat(T["weights"].any(1, keepdims=True), d_v, 1)},
                          ["-"], [str(c + 1) for c in range(d_v)], vector="row", max_cols=True))
    return Chain("row", links, meta=dict(meta or {}, keys=list(keys)))
