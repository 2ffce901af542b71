"""The calculation as a chain of steps that the checker can re-run from a learner's own numbers.

Each :class:`Link` knows its exact values (Decimal object arrays, :mod:`attnscope.exact`), how to
recompute itself from the values of earlier links (``world``: the learner's numbers where they wrote
some, recomputed values where they did not; in the same exact arithmetic), and which entries of
earlier links each of its entries depends on. Every link is a 2-D array; a vector answer (a row of a real model, the row
sums) is a (1, n) or (n, 1) array.

Chains: :func:`toy_chain` (Q, K, V, scores, scaled, exp, sums, weights, output[, projected]) and
:func:`row_chain` (scores, scaled, exp, sum, weights, output) for one query row. The exponentials
and their sums (``by_shift``) may be written as e^s' or as e^(s' − m) (m the row's largest score):
both are right, and the checker says which one the learner used (:mod:`.judge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Callable, Optional

import numpy as np

from .. import exact as E
from .. import reference as R
from ..explain.toy_input import ToyProblem
from ..explain.toy_modern import Modern
from ..explain.toy_numbers import by_offset, compute, compute_exact, rms, rotary_scores, rotate
from ..scorings import DEFAULT_EPS


@dataclass
class Link:
    """One step of the chain.

    ``recompute(world) -> (rows, cols)``: the step from the world's earlier values (Decimals).
    ``depends(taint) -> {input name: (rows, cols) bool}``: for each earlier link, whether the
    entries this entry is computed from are tainted (wrong or carried).
    ``rows``/``cols``: labels for the report. ``vector``: the learner writes a flat list.
    ``by_shift``: e^s' and e^(s' − m) both accepted (exp, the row sums). ``slack``: an extra
    tolerance of "correct", per entry (a model's own float32 error), float.
    """

    name: str
    exact: np.ndarray
    # Called with one argument (the world, the taint); ``...``: the lambdas that make them carry loop
    # values as default arguments, which a one-argument Callable type does not admit.
    recompute: Callable[..., np.ndarray]
    depends: Callable[..., dict]
    rows: list
    cols: list
    vector: Optional[str] = None  # None (matrix), "row" ((1, n) written as a list) or "col" ((n, 1))
    max_cols: bool = False        # the learner may write the first n columns only (output of a real row)
    by_shift: bool = False
    slack: Optional[np.ndarray] = None
    # a by_shift link of one head of a multi-head chain (check/multihead.py): its own rows' m (else the
    # chain's shift) and the link that holds the learner's scaled scores of those rows
    shift: Optional[np.ndarray] = None
    scaled: str = "scaled"


@dataclass
class Chain:
    kind: str                      # "toy" or "row"
    links: list
    meta: dict = field(default_factory=dict)
    shift: Optional[np.ndarray] = None  # (rows,) Decimal: the m of each row's e^(s' − m) (0: none)

    def names(self) -> list:
        return [lk.name for lk in self.links]

    def link(self, name: str) -> Link:
        return next(lk for lk in self.links if lk.name == name)


# ----------------------------------------------------------------------------------------------
# the recomputations, on Decimal worlds
# ----------------------------------------------------------------------------------------------

def _D(a) -> np.ndarray:
    """A world array as Decimals (a link of another chain may hold float64: read by shortest form)."""
    a = np.asarray(a)
    return a if a.dtype == object else E.array(a)


def _mask_scale(scores: np.ndarray, factor, ok: np.ndarray) -> np.ndarray:
    with localcontext(E.CTX):
        scaled = scores * factor
    return np.where(ok, scaled, np.array(E.NEG_INF, dtype=object))  # Decimals


def _sums(e: np.ndarray) -> np.ndarray:
    with localcontext(E.CTX):
        return np.array([[sum(r, E.ZERO)] for r in e], dtype=object)


def _divide(e: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """e / Σ, row by row (``sums`` (rows, 1)); 0 where the sum is 0 (a row that sees no key)."""
    out = np.full(e.shape, E.ZERO, dtype=object)
    with localcontext(E.CTX):
        for i in range(e.shape[0]):
            s = sums[i, 0]
            if s != 0 and s.is_finite():
                out[i] = [x / s for x in e[i]]
    return out


def _softmax_links(rows: list, keys: list, ok: np.ndarray, factor, exact: dict, total: str, vector) -> list:
    """scaled, exp, the sum(s) and the weights, for the (rows, S) scores in ``exact``."""
    n_rows, S = ok.shape
    sums_vec = "col" if vector is None else vector
    return [
        Link("scaled", exact["masked"], lambda w: _mask_scale(w["scores"], factor, ok),
             lambda T: {"scores": T["scores"]}, rows, keys, vector=vector),
        # e^(s' − m) with m each row's own shift (from these numbers: the learner's largest score)
        Link("exp", exact["exp"], lambda w: E.softmax_parts(w["scaled"])["exp"], lambda T: {"scaled": T["scaled"]}, rows,
             keys, vector=vector, by_shift=True),
        Link(total, exact["sums"], lambda w: _sums(w["exp"]), lambda T: {"exp": T["exp"].any(1, keepdims=True)},
             rows, ["Σ"], vector=sums_vec, by_shift=True),
        Link("weights", exact["weights"], lambda w: _divide(w["exp"], w[total]),
             lambda T: {"exp": T["exp"], total: np.repeat(T[total], S, 1)}, rows, keys, vector=vector),
    ]


def toy_chain(p: ToyProblem) -> Chain:
    x = compute_exact(p)
    compute(p, x)  # InputError naming the step where float64 cannot hold a value, as explain says
    L, toks = p.L, list(p.tokens)
    allowed = p.allowed()
    rows = [f"{i} ({tk})" for i, tk in enumerate(toks)]
    keys = [f"{j} ({tk})" for j, tk in enumerate(toks)]
    dims = lambda n: [str(c) for c in range(n)]  # noqa: E731
    links = []
    for n in ("Q", "K", "V"):
        links.append(Link(n, x[n], recompute=lambda w, n=n: x[n], depends=lambda T: {},
                          rows=rows, cols=dims(x[n].shape[1])))
    sc, m, d = p.scoring, p.modern, p.d_k
    # the dot product's operands, step by step: (link name, value from the world, taint (L, d))
    qcols = slice(m.head * d, (m.head + 1) * d)
    kcols = slice(m.kv_head * d, (m.kv_head + 1) * d)
    q_op = ("Q", lambda w: m.q_head(_D(w["Q"])), lambda T: T["Q"][:, qcols])
    k_op = ("K", lambda w: m.kv_slice(_D(w["K"])), lambda T: T["K"][:, kcols])
    feats = dims(d)
    steps = []
    pre_ops = (q_op, k_op)  # the operands the rotation turns (after QK-norm, when asked for)
    if m.qk_norm:
        steps.append(("Q_normed", "K_normed", lambda v, which: rms(m, v, which), "row"))
    if m.rope_base is not None:
        steps.append(("Q_rot", "K_rot", lambda v, which: rotate(m, v), "pair"))
    for qname, kname, fn, reach in steps:
        if qname == "Q_rot":
            pre_ops = (q_op, k_op)
        new_ops = []
        for name, (prev, value, taint), which in ((qname, q_op, "q"), (kname, k_op, "k")):
            links.append(Link(name, x[name], lambda w, value=value, fn=fn, which=which: fn(value(w), which),
                              lambda T, prev=prev, taint=taint, reach=reach: {prev: _reach(taint(T), reach, m.pairing)},
                              rows, feats))
            new_ops.append((name, lambda w, name=name: w[name], lambda T, name=name: T[name]))
        q_op, k_op = new_ops
    (qn, qval, qtaint), (kn, kval, ktaint) = q_op, k_op

    def prepared(w):
        return E.prepare_qk(qval(w), kval(w), sc, DEFAULT_EPS)

    def scores(w):
        q, k = prepared(w)
        out = E.matmul(q, k.T)  # (L, L)
        if by_offset(m, sc):
            _offset_scores(out, qval(w), kval(w), pre_ops[0][1](w), pre_ops[1][1](w), m, sc)
        return out

    links.append(Link("scores", x["scores"], scores,
                      lambda T: {qn: np.repeat(qtaint(T).any(1, keepdims=True), L, 1),
                                 kn: np.repeat(ktaint(T).any(1)[None, :], L, 0)}, rows, keys))
    links += _softmax_links(rows, keys, allowed, x["factor"],
                            {"masked": x["masked"], "exp": x["exp"], "sums": x["sums"][:, None], "weights": x["weights"]},
                            "sums", None)
    d_v = x["Vh"].shape[1]
    vcols = slice(m.kv_head * d_v, (m.kv_head + 1) * d_v)
    links.append(Link("output", x["output"], lambda w: E.matmul(w["weights"], m.kv_slice(_D(w["V"]))),
                      lambda T: {"weights": np.repeat(T["weights"].any(1, keepdims=True), d_v, 1),
                                 "V": np.repeat(T["V"][:, vcols].any(0)[None, :], L, 0)}, rows, dims(d_v)))
    if p.W_O is not None:
        d_o = p.W_O.shape[1]
        W_O = E.array(p.W_O)
        links.append(Link("projected", x["projected"], lambda w: E.matmul(w["output"], W_O),
                          lambda T: {"output": np.repeat(T["output"].any(1, keepdims=True), d_o, 1)},
                          rows, dims(d_o)))
    return Chain("toy", links, meta={"tokens": toks, "name": p.name, "L": L}, shift=x["shift"])


def _offset_scores(out: np.ndarray, q_rot: np.ndarray, k_rot: np.ndarray, q_pre: np.ndarray, k_pre: np.ndarray,
                   m: Modern, scoring: str) -> None:
    """Replace in ``out`` (L, L) the scores whose query and key rows in the world are the turned
    rows of the world's operands before the rotation (the learner did not write their own) by the
    scores from the offsets (:func:`~attnscope.explain.toy_numbers.rotary_scores`): the same
    values, exact where query and key share a position."""
    same_q = [all(a == b for a, b in zip(r, t)) for r, t in zip(q_rot, rotate(m, q_pre))]
    same_k = [all(a == b for a, b in zip(r, t)) for r, t in zip(k_rot, rotate(m, k_pre))]
    if not (any(same_q) and any(same_k)):
        return
    exact = rotary_scores(m, q_pre, k_pre, scoring)  # (L, L)
    for i in np.flatnonzero(same_q):
        for j in np.flatnonzero(same_k):
            out[i, j] = exact[i, j]


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
    positions, and the raw scores from them. The model's numbers are float64: they enter by their
    exact binary values, and the rotation is recomputed in float64."""
    n, d = o["k_pre"].shape
    feats = [str(c) for c in range(d)]
    bx = lambda a: E.array(a, binary=True)  # noqa: E731
    links = []
    # (link name of the operand, or None for the model's own; its value from the world)
    q_prev: tuple[Optional[str], Callable] = (None, lambda w: bx(o["q_pre"][None, :]))
    k_prev: tuple[Optional[str], Callable] = (None, lambda w: bx(o["k_pre"]))
    if "rms" in o:
        r = o["rms"]
        qn, kn = bx(r["q_normed"][None, :]), bx(r["k_normed"])
        links += [Link("Q_normed", qn, lambda w: qn, lambda T: {}, ["-"], feats, vector="row"),
                  Link("K_normed", kn, lambda w: kn, lambda T: {}, labels, feats)]
        q_prev = ("Q_normed", lambda w: w["Q_normed"])
        k_prev = ("K_normed", lambda w: w["K_normed"])
    inv, pos = o["inv_freq"], np.arange(n)
    for name, exact, prev, where, rows, vec in (("Q_rot", o["q_rot"][None, :], q_prev, [qpos], ["-"], "row"),
                                                ("K_rot", o["k_rot"], k_prev, pos, labels, None)):
        turn = lambda a, where=where: R.rotate(a, where, inv, "half")  # noqa: E731
        links.append(Link(name, bx(exact), lambda w, prev=prev, turn=turn: bx(turn(E.floats(prev[1](w)))),
                          lambda T, prev=prev: {} if prev[0] is None else {prev[0]: _reach(T[prev[0]], "pair", "half")},
                          rows, feats, vector=vec))
    links.append(Link("scores", bx(o["raw"][None, :]), lambda w: E.matmul(w["Q_rot"], w["K_rot"].T),
                      lambda T: {"Q_rot": np.repeat(T["Q_rot"].any(1, keepdims=True), n, 1),
                                 "K_rot": T["K_rot"].any(1)[None, :]}, ["-"], labels, vector="row"))
    return links


def row_chain(raw: np.ndarray, keys: list, factor, allowed: Optional[np.ndarray] = None,
              V: Optional[np.ndarray] = None, meta: Optional[dict] = None, source: str = "problem",
              operands: Optional[dict] = None, qpos: int = 0, written: bool = False) -> Chain:
    """One query row: raw scores (S,) are given (or come from a model), V (S, d_v) optional.
    ``operands``: a decoder row's q and k before rotation (then the chain starts there).
    ``written``: the scores, V and factor are numbers a person wrote (read as decimals: 15.3 is
    15.3); else float64 results of a model (read by their exact binary values). ``factor`` may be
    a Decimal (exact, e.g. 1/8)."""
    from ..explain.row import row_values
    S = len(raw)
    row_values(raw, float(factor), allowed, V, source)  # InputError naming the step for ∞ or NaN
    conv = (lambda a: E.array(a)) if written else (lambda a: E.array(a, binary=True))
    f = factor if isinstance(factor, Decimal) else (E.dec(factor) if written else E.dec_binary(factor))
    ok = (np.ones(S, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool))[None, :]  # (1, S)
    scores = conv(np.asarray(raw, dtype=np.float64))[None, :]  # (1, S)
    masked = _mask_scale(scores, f, ok)
    soft = E.softmax_parts(masked)
    labels = [f"{j} ({k})" for j, k in enumerate(keys)]
    first = _rotation_links(operands, qpos, labels) if operands is not None else [
        Link("scores", scores, lambda w: scores, lambda T: {}, ["-"], labels, vector="row")]
    links = first + _softmax_links(["-"], labels, ok, f, {"masked": masked, "exp": soft["exp"],
                                                          "sums": soft["sum"][:, None], "weights": soft["weights"]},
                                   "sum", "row")
    if V is not None:
        Vx = conv(np.asarray(V, dtype=np.float64))  # (S, d_v)
        d_v = Vx.shape[1]
        _, out = E.weighted_sum(soft["weights"], Vx)
        links.append(Link("output", out, lambda w: E.matmul(w["weights"], Vx),
                          lambda T: {"weights": np.repeat(T["weights"].any(1, keepdims=True), d_v, 1)},
                          ["-"], [str(c) for c in range(d_v)], vector="row", max_cols=True))
    return Chain("row", links, meta=dict(meta or {}, keys=list(keys)), shift=soft["shift"])
