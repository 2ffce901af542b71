"""The numbers of a toy problem (:class:`~.toy_input.ToyProblem`), every step, exact.

    Q = X·W_Q,  K = X·W_K,  V = X·W_V                    (L, d_k), (L, d_k), (L, d_v)   exact
    S = Q·Kᵀ                                               (L, L)  raw scores              exact
                    (rotary: from the offsets, exact where query and key share a position)
    S' = S · c                                             (L, L)  c = 1/√d_k, …         (1/8 exact)
    E = exp(S' − shift),  Σ_i = Σ_j E_ij,  A = E / Σ      (L, L)  100 digits
    O = A·V                                                (L, d_v) the products w·v and their sums
    Y = O·W_O                                              (L, d_out) only when W_O is given

:func:`compute_exact` does it in :mod:`attnscope.exact` (Decimal object arrays: inputs read as the
decimals they were written as, linear steps exact, exp/softmax to 100 digits), which is what a
worked calculation shows and what the checker judges against. :func:`compute` is the same as
float64 arrays (each value the float nearest to the exact one), for ``Worked.values``, JSON and
plots; it raises InputError naming the step where float64 cannot hold a value.
"""

from __future__ import annotations

from decimal import localcontext
from typing import Any, Optional

import numpy as np

from .. import exact as E
from .. import reference as R
from ..errors import InputError
from ..i18n import Msg, error, text
from ..scorings import DEFAULT_EPS, get_scoring
from .places import INPUT, Where
from .toy_input import ToyProblem
from .toy_modern import Modern

__all__ = ["compute", "compute_exact", "check_finite", "STEP_NAMES", "rms", "rotate", "rotary_scores", "by_offset",
           "exact_factor"]

#: How an overflow error names each step (in English; the catalogue's errors.explain_step.* in any language).
STEP_NAMES = {s: text(f"errors.explain_step.{s}") for s in ("Q", "K", "V", "scores", "Q_normed", "K_normed", "Q_rot",
                                                             "K_rot", "scaled", "output", "projected", "QKV")}


def check_finite(step: str, values: np.ndarray, source: Where = INPUT, allowed=None) -> None:
    """InputError naming the step and the first entry when ``values`` holds ∞ or NaN (where
    ``allowed``; blocked scores are −∞ by design). A worked calculation full of ∞ and NaN explains
    nothing: the inputs are beyond what float64 holds at this step."""
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values)
    if allowed is not None:
        bad &= np.broadcast_to(np.asarray(allowed, dtype=bool), bad.shape)
    if bad.any():
        idx = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
        at = "[" + ", ".join(str(int(i)) for i in idx) + "]" if idx else ""  # from 0, as shown
        raise error(InputError, "errors.explain_overflow_step", source=source,
                    step_name=Msg(f"errors.explain_step.{step}") if step in STEP_NAMES else step, at=at,
                    value=values[idx])


def exact_factor(p: ToyProblem):
    """The Decimal factor on the scores (:func:`attnscope.exact.score_factor`)."""
    return E.score_factor(p.scoring, p.d_k, p.temperature, p.modern.query_pre_attn_scalar)


def rms(m: Modern, x: np.ndarray, which: str) -> np.ndarray:
    """QK-norm's RMSNorm of each row of the Decimal array ``x`` with the q or k weight."""
    w = m.q_weight if which == "q" else m.k_weight
    return E.rms_norm(x, w, m.rms_eps, m.rms_offset)


def rotate(m: Modern, x: np.ndarray) -> np.ndarray:
    """Each row of the Decimal array ``x`` (L, d) turned at its position."""
    d = x.shape[1]
    assert m.rope_base is not None  # turned only with rotary positions
    return E.rotate(x, m.pos(x.shape[0]), E.rope_inv_freq(d, m.rope_base), R.rope_pairs(d, m.pairing))


def by_offset(m: Modern, scoring: str) -> bool:
    """Whether the scores of ``scoring`` after rotary positions are computed from the operands before
    the rotation and the query–key offset (:func:`rotary_scores`): with rotary positions and a
    scoring whose preparation is none, or cosine's x/|x| (a rotation keeps |x|); qknorm's
    subtraction of the mean does not commute with the rotation."""
    return m.rope_base is not None and (scoring == "cosine" or get_scoring(scoring).prepare_np is None)


def rotary_scores(m: Modern, q: np.ndarray, k: np.ndarray, scoring: str) -> np.ndarray:
    """(L, L) scores of the Decimal operands *before* the rotation q, k (L, d) from their offsets
    (:func:`attnscope.exact.rotary_scores`): where query and key share a position the turns cancel
    and the score is exactly q·k of the scoring's operands. Only where :func:`by_offset`."""
    assert m.rope_base is not None  # with rotary positions only
    d = q.shape[1]
    qn, kn = E.prepare_qk(q, k, scoring, DEFAULT_EPS)  # cosine: unit rows, the same after the turn
    pos = m.pos(q.shape[0])
    return E.rotary_scores(qn, kn, pos, pos, E.rope_inv_freq(d, m.rope_base), R.rope_pairs(d, m.pairing))


def _operands(m: Modern, Q, K, V) -> dict:
    """Every step from the full Q, K, V to the dot product's operands, exact: ``Qh``, ``Kh``, ``Vh``
    (the worked head), ``Q_normed``/``K_normed`` (QK-norm), ``Q_rot``/``K_rot`` (rotary positions)."""
    out = {"Qh": m.q_head(Q), "Kh": m.kv_slice(K), "Vh": m.kv_slice(V)}
    q, k = out["Qh"], out["Kh"]
    if m.qk_norm:
        q = out["Q_normed"] = rms(m, q, "q")
        k = out["K_normed"] = rms(m, k, "k")
    out.update(Qpre=q, Kpre=k)
    if m.rope_base is not None:
        q = out["Q_rot"] = rotate(m, q)
        k = out["K_rot"] = rotate(m, k)
    out.update(Qop=q, Kop=k)
    return out


def compute_exact(p: ToyProblem) -> dict:
    """Every intermediate as a Decimal object array: X, Q, K, V, Qh/Kh/Vh (the worked head),
    Q_normed/K_normed, Q_rot/K_rot (when asked for), Qop/Kop (the dot product's operands), Qn/Kn
    (as the scoring prepares them, cosine and qknorm), scores, factor (a Decimal), scaled, masked,
    shift (L,), exp, sums (L,), weights, products (L, L, d_v: weight × value), output and
    (with W_O) projected."""
    out: dict = {}
    if p.projected:
        X = out["X"] = E.array(p.X)
        Q, K, V = (E.matmul(X, E.array(w)) for w in (p.W_Q, p.W_K, p.W_V))  # (L, d_k), (L, d_k), (L, d_v)
    else:
        Q, K, V = E.array(p.Q), E.array(p.K), E.array(p.V)
    out.update(Q=Q, K=K, V=V)
    out.update(_operands(p.modern, Q, K, V))
    qn, kn = E.prepare_qk(out["Qop"], out["Kop"], p.scoring, DEFAULT_EPS)  # (L, d_k) each
    if get_scoring(p.scoring).prepare_np is not None:
        out.update(Qn=qn, Kn=kn)
    if by_offset(p.modern, p.scoring):  # exact where the turns cancel
        scores = rotary_scores(p.modern, out.pop("Qpre"), out.pop("Kpre"), p.scoring)  # (L, L)
    else:
        del out["Qpre"], out["Kpre"]
        scores = E.matmul(qn, kn.T)  # (L, L)
    f = exact_factor(p)
    with localcontext(E.CTX):
        scaled = scores * f  # (L, L)
    masked = np.where(p.allowed(), scaled, np.array(E.NEG_INF, dtype=object))  # (L, L), Decimals
    soft = E.softmax_parts(masked)
    products, output = E.weighted_sum(soft["weights"], out["Vh"])  # (L, L, d_v), (L, d_v)
    out.update(scores=scores, factor=f, scaled=scaled, masked=masked, shift=soft["shift"], exp=soft["exp"],
               sums=soft["sum"], weights=soft["weights"], products=products, output=output)
    if p.W_O is not None:
        out["projected"] = E.matmul(output, E.array(p.W_O))  # (L, d_out)
    return out


#: The steps :func:`compute` checks for values beyond float64, in order.
_CHECKED = ("Q", "K", "V", "Q_normed", "K_normed", "Q_rot", "K_rot", "scores", "scaled", "output", "projected")


def compute(p: ToyProblem, exact: Optional[dict] = None) -> dict:
    """:func:`compute_exact` as float64 arrays (``exact``: its result, when already computed);
    ``Qop``/``Kop`` are the operands, ``shift`` and ``sums`` (L,)."""
    ex = compute_exact(p) if exact is None else exact
    out: dict[str, Any] = {}
    for name, value in ex.items():
        if name == "factor":
            out[name] = float(value)
            continue
        out[name] = E.floats(value)
        if name in _CHECKED:
            check_finite(name, out[name], p.source)
    return out
