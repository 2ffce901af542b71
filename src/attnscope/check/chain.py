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
    sc, m, d = p.scoring, p.modern, p.d_k
    # the dot product's operands, step by step: (link name, value from the world, taint (L, d))
    qcols = slice(m.head * d, (m.head + 1) * d)
    kcols = slice(m.kv_head * d, (m.kv_head + 1) * d)
    q_op = ("Q", lambda w: m.q_head(w["Q"]), lambda T: T["Q"][:, qcols])
    k_op = ("K", lambda w: m.kv_slice(w["K"]), lambda T: T["K"][:, kcols])
    feats = dims(d)
    steps = []
    if m.qk_norm:
        steps.append(("Q_normed", "K_normed", lambda x, which: m.rms(x, which), "row"))
    if m.rope_base is not None:
        steps.append(("Q_rot", "K_rot", lambda x, which: m.rotate(x), "pair"))
    for qname, kname, fn, reach in steps:
        new_ops = []
        for name, (prev, value, taint), which in ((qname, q_op, "q"), (kname, k_op, "k")):
            links.append(Link(name, v[name], lambda w, value=value, fn=fn, which=which: fn(value(w), which),
                              lambda T, prev=prev, taint=taint, reach=reach: {prev: _reach(taint(T), reach, m.pairing)},
                              rows, feats))
            new_ops.append((name, lambda w, name=name: w[name], lambda T, name=name: T[name]))
        q_op, k_op = new_ops
    (qn, qval, qtaint), (kn, kval, ktaint) = q_op, k_op

    def scores(w):
        return R.raw_scores(*R.prepare_qk(qval(w), kval(w), sc))  # (L, L)

    links.append(Link("scores", v["scores"], scores,
                      lambda T: {qn: np.repeat(qtaint(T).any(1, keepdims=True), L, 1),
                                 kn: np.repeat(ktaint(T).any(1)[None, :], L, 0)}, rows, keys))
    links.append(Link("scaled", np.where(allowed, v["scaled"], -np.inf),
                      lambda w: np.where(allowed, w["scores"] * f, -np.inf),
                      lambda T: {"scores": T["scores"]}, rows, keys))
    links.append(Link("exp", v["exp"], lambda w: R.shifted_exp(w["scaled"], shift),
                      lambda T: {"scaled": T["scaled"]}, rows, keys))
    links.append(Link("sums", v["sums"][:, None], lambda w: w["exp"].sum(1, keepdims=True),
                      lambda T: {"exp": T["exp"].any(1, keepdims=True)}, rows, ["Σ"], vector="col"))
    links.append(Link("weights", v["weights"], lambda w: R.divide_by_sum(w["exp"], w["sums"]),
                      lambda T: {"exp": T["exp"], "sums": np.repeat(T["sums"], L, 1)}, rows, keys))
    d_v = v["Vh"].shape[1]
    vcols = slice(m.kv_head * d_v, (m.kv_head + 1) * d_v)
    links.append(Link("output", v["output"], lambda w: w["weights"] @ m.kv_slice(w["V"]),
                      lambda T: {"weights": np.repeat(T["weights"].any(1, keepdims=True), d_v, 1),
                                 "V": np.repeat(T["V"][:, vcols].any(0)[None, :], L, 0)}, rows, dims(d_v)))
    if p.W_O is not None:
        d_o = p.W_O.shape[1]
        links.append(Link("projected", v["projected"], lambda w: w["output"] @ p.W_O,
                          lambda T: {"output": np.repeat(T["output"].any(1, keepdims=True), d_o, 1)},
                          rows, dims(d_o)))
    return Chain("toy", links, meta={"tokens": toks, "name": p.name, "L": L})


def _reach(taint: np.ndarray, reach: str, pairing: str) -> np.ndarray:
    """Which entries of a step (L, d) come from tainted entries of its input ``taint`` (L, d):
    "row" (RMSNorm: every feature of the row), "pair" (a rotation: the entry and its partner)."""
    if reach == "row":
        return np.repeat(taint.any(1, keepdims=True), taint.shape[1], 1)
    a, b = R.rope_pairs(taint.shape[1], pairing)
    partner = np.empty(taint.shape[1], dtype=int)
    partner[a], partner[b] = b, a
    return taint | taint[:, partner]


def _rotation_links(o: dict, qpos: int, labels: list) -> list:
    """A decoder row's steps before the scores (:func:`attnscope.explain.row_decoder.decoder_row`):
    QK-norm of the query's q and every k (with QK-norm), then q and every k turned at their
    positions, and the raw scores from them."""
    n, d = o["k_pre"].shape
    feats = [str(c + 1) for c in range(d)]
    links = []
    q_prev = (None, lambda w: o["q_pre"][None, :])
    k_prev = (None, lambda w: o["k_pre"])
    if "rms" in o:
        r = o["rms"]
        links += [Link("Q_normed", r["q_normed"][None, :], lambda w: r["q_normed"][None, :], lambda T: {}, ["-"], feats,
                       vector="row"),
                  Link("K_normed", r["k_normed"], lambda w: r["k_normed"], lambda T: {}, labels, feats)]
        q_prev = ("Q_normed", lambda w: w["Q_normed"])
        k_prev = ("K_normed", lambda w: w["K_normed"])
    inv, pos = o["inv_freq"], np.arange(n)
    for name, exact, prev, where, rows, vec in (("Q_rot", o["q_rot"][None, :], q_prev, [qpos], ["-"], "row"),
                                                ("K_rot", o["k_rot"], k_prev, pos, labels, None)):
        links.append(Link(name, exact, lambda w, prev=prev, where=where: R.rotate(prev[1](w), where, inv, "half"),
                          lambda T, prev=prev: {} if prev[0] is None else {prev[0]: _reach(T[prev[0]], "pair", "half")},
                          rows, feats, vector=vec))
    links.append(Link("scores", o["raw"][None, :], lambda w: R.raw_scores(w["Q_rot"][0], w["K_rot"])[None, :],
                      lambda T: {"Q_rot": np.repeat(T["Q_rot"].any(1, keepdims=True), n, 1),
                                 "K_rot": T["K_rot"].any(1)[None, :]}, ["-"], labels, vector="row"))
    return links


def row_chain(raw: np.ndarray, keys: list, factor: float, allowed: Optional[np.ndarray] = None,
              V: Optional[np.ndarray] = None, meta: Optional[dict] = None, source: str = "problem",
              operands: Optional[dict] = None, qpos: int = 0) -> Chain:
    """One query row: raw scores (S,) are given (or come from a model), V (S, d_v) optional.
    ``operands``: a decoder row's q and k before rotation (then the chain starts there)."""
    from ..explain.row import row_values
    S = len(raw)
    vals = row_values(raw, factor, allowed, V, source)
    ok = np.isfinite(vals["masked"])[None, :]  # (1, S)
    shift = vals["shift"]
    labels = [f"{j} ({k})" for j, k in enumerate(keys)]
    first = _rotation_links(operands, qpos, labels) if operands is not None else [
        Link("scores", vals["scores"][None, :], lambda w: vals["scores"][None, :], lambda T: {},
             ["-"], labels, vector="row")]
    links = first + [
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
