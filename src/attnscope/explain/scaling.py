"""The lesson "why divide by √d_k", every number computed.

1. Dot products grow with the dimension (the article's q = k = [0.5, …, 0.5]: q·k = d/4).
2. The variance argument: entries of q and k independent, mean 0, variance 1 ⇒ each product q_i k_i
   has mean 0 and variance E[q_i²]E[k_i²] = 1, so Var(q·k) = d_k and Var(q·k/√d_k) = 1; checked
   against a seeded sample for a ladder of d_k.
3. softmax of score vectors with and without the scale (the articles' [20, −10, 5] and
   [15.3, 22.7, 18.2, 2.1, 1.8]), next to what the article printed where it printed something.
4. The softmax Jacobian ∂p/∂s = diag(p) − p pᵀ: near one-hot rows make every entry ≈ 0, so the
   scores (and q, k behind them) get almost no gradient — saturated rows stop learning.
"""

from __future__ import annotations

import math
from decimal import localcontext
from typing import Any, Optional, Sequence

import numpy as np

from .. import exact as E
from ..errors import InputError
from ..i18n import Msg, error
from ..reference import softmax
from .doc import Block, Formula, Matrix, Para, Step, Sym, Table, VecParam, Worked, t
from .numbers import fmt, round_half_up, short

#: The score vectors of the articles (000: the row of 喜 and the saturation example).
DEFAULT_VECTORS = ([20.0, -10.0, 5.0], [15.3, 22.7, 18.2, 2.1, 1.8])

#: What the source article (000) printed for softmax of these vectors at d_k = 64 (÷8), as printed
#: (its digits are the point: 0.270 is a slip for 0.269), so that the lesson can set the computed
#: values beside them. Keys: (vector, scaled). "≈0" is the article's own.
ARTICLE_PRINTED = {
    ((20.0, -10.0, 5.0), False): ["0.9999", "0.0000", "0.0001"],
    ((20.0, -10.0, 5.0), True): ["0.76", "0.02", "0.22"],
    ((15.3, 22.7, 18.2, 2.1, 1.8), False): ["0.001", "0.997", "0.002", "≈0", "≈0"],
    ((15.3, 22.7, 18.2, 2.1, 1.8), True): ["0.187", "0.473", "0.270", "0.036", "0.035"],
}


def article_digits(printed: Sequence[str], p) -> tuple[list, list]:
    """The computed probabilities ``p`` at the precision of each printed entry (half-up, from
    their exact values), and the entries (from 0) where the printed digits differ. "≈0" stands
    for a value below half a unit of the row's other entries."""
    places = max(len(x.split(".")[1]) for x in printed if "." in x)
    shown, diffs = [], []
    for j, (x, pj) in enumerate(zip(printed, p)):
        d = len(x.split(".")[1]) if "." in x else places
        c = f"{round_half_up(pj, d):f}"
        shown.append(c)
        if (float(c) != 0.0) if x.startswith("≈") else (c != x):
            diffs.append((j, x, c))
    return shown, diffs

LADDER = (4, 16, 64, 256, 1024)


def jacobian(p: np.ndarray) -> np.ndarray:
    """∂p_i/∂s_j = p_i (δ_ij − p_j) = diag(p) − p pᵀ, (n, n)."""
    return np.diag(p) - np.outer(p, p)


#: The lesson's sample: pairs per d_k and seed (the exercise's answer 1 quotes the same d_k = 64 value).
SAMPLES, SEED = 10000, 0


def sampled_variance(d: int, samples: int = SAMPLES, seed: int = SEED, chunk: int = 2048) -> tuple[float, float]:
    """Sample variance of q·k and of q·k/√d over ``samples`` pairs of standard normal vectors. Each d
    draws from its own generator (seed, d), so its value is the same whatever else is sampled: the
    lesson's row of d = 64 at any --dk and the exercise's answer quote one number."""
    rng = np.random.default_rng([seed, d])
    dots = []
    left = samples
    while left > 0:
        n = min(chunk, left, max(1, 2**22 // d))  # at most 32 MiB per array, whatever d is
        q = rng.standard_normal((n, d))  # (n, d)
        k = rng.standard_normal((n, d))  # (n, d)
        dots.append(np.einsum("nd,nd->n", q, k))  # (n,)
        left -= n
    x = np.concatenate(dots)
    return float(x.var(ddof=1)), float((x / math.sqrt(d)).var(ddof=1))


def explain_scaling(d_k: int = 64, seed: int = SEED, samples: int = SAMPLES,
                    vectors: Optional[Sequence[Any]] = None) -> Worked:
    """The scaling lesson for ``d_k``; ``vectors``: score vectors to softmax, or one vector (default:
    the articles')."""
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or not 1 <= d_k <= 65536:
        raise error(InputError, "errors.explain_integer_range", name="d_k", low=1, high=65536, value=repr(d_k))
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or not 2 <= samples <= 10**7:
        raise error(InputError, "errors.explain_integer_range", name="samples", low=2, high=10000000,
                    value=repr(samples))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise error(InputError, "errors.explain_non_negative", name="seed", value=repr(seed))
    if vectors is None:
        vectors = DEFAULT_VECTORS
    if len(vectors) == 0:  # the softmax and Jacobian steps need a vector
        raise error(InputError, "errors.explain_no_vectors")
    if len(vectors) and not isinstance(vectors[0], (list, tuple, np.ndarray)):
        vectors = [vectors]
    from .inputs import vector
    vecs = [vector(vec, Msg("errors.explain_scores_vector", i=i)) for i, vec in enumerate(vectors)]
    root = math.sqrt(d_k)
    steps = []
    root_shown = short(root) if float(root).is_integer() else root
    intro = [Para(t("sc.intro", dk=d_k, root=root_shown)),
             Formula("Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V",
                     r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V")]

    # 1. growth with d
    ds = sorted({2, 4, d_k})
    steps.append(Step("growth", t("sc.step_growth"), [
        Para(t("sc.growth")),
        Table([t("sc.col_d"), t("sc.col_qk_half")], [[d, short(np.full(d, 0.5) @ np.full(d, 0.5))] for d in ds])]))

    # 2. variance
    ladder = sorted(set(LADDER) | {d_k})
    rows: list[list] = []
    sampled = {}
    for d in ladder:
        var, var_scaled = sampled_variance(d, samples, seed)
        sampled[d] = (var, var_scaled)
        rows.append([d, float(d), var, math.sqrt(d), var_scaled])
    steps.append(Step("variance", t("sc.step_variance"), [
        Para(t("sc.var_theory")),
        Formula("Var(q·k) = Σ_i Var(q_i k_i) = Σ_i E[q_i²] E[k_i²] = d_k,   Var(q·k / √d_k) = 1",
                r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)"
                r"=\sum_{i=1}^{d_k}\mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2]=d_k,\qquad"
                r"\operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1"),
        Para(t("sc.var_sample", n=samples, seed=seed)),
        Table([t("sc.col_d"), t("sc.col_var_theory"), t("sc.col_var_sampled"), t("sc.col_std"),
               t("sc.col_var_scaled")], rows),
        Para(t("sc.var_result", dk=d_k, var=sampled[d_k][0], std=math.sqrt(sampled[d_k][0]),
               vs=sampled[d_k][1])),
    ]))

    # 3. softmax with and without the scale
    blocks: list[Block] = [Para(t("sc.softmax_intro", dk=d_k, root=root_shown))]
    soft = []  # (scores, softmax, softmax scaled) of each vector: the values, and the first one's Jacobian
    for vec in vecs:
        p_raw, p_scaled = softmax(vec), softmax(vec / root)
        soft.append((vec, p_raw, p_scaled))
        # the shown probabilities: exact (attnscope.exact), so that every digit is the true one
        s_x = E.array(vec)[None, :]  # (1, n)
        with localcontext(E.CTX):
            s_scaled = s_x * E.score_factor("scaled", d_k)
        x_raw, x_scaled = (E.softmax_parts(s, np.zeros(1, dtype=object) + E.ZERO)["weights"][0] for s in (s_x, s_scaled))
        rows = [[j, short(vec[j]), x_raw[j], s_scaled[0, j], x_scaled[j]] for j in range(len(vec))]
        blocks.append(Table([t("sc.col_j"), t("sc.col_s"), t("sc.col_p_raw"), t("sc.col_s_scaled"),
                             t("sc.col_p_scaled")], rows, caption=t("sc.vec_caption", v=_lit(vec))))
        blocks.append(Para(t("sc.softmax_max", top=float(p_raw.max()), top_s=float(p_scaled.max()),
                             h=_entropy(p_raw), h_s=_entropy(p_scaled), hmax=math.log(len(vec)))))
        key = tuple(float(x) for x in vec)
        for scaled, p in ((False, x_raw), (True, x_scaled)):
            printed = ARTICLE_PRINTED.get((key, scaled))
            if printed is not None and (not scaled or d_k == 64):
                shown, diffs = article_digits(printed, p)
                blocks.append(Para(t("sc.article_scaled" if scaled else "sc.article_raw",
                                     printed="[" + ", ".join(printed) + "]", computed=VecParam(list(p)),
                                     v=_lit(vec)), style="warn"))
                blocks.append(Para(t("sc.article_digits", shown="[" + ", ".join(shown) + "]",
                                     diffs=[t("sc.article_diff", j=j, p=x, c=c) for j, x, c in diffs])
                                   if diffs else t("sc.article_same"), style="warn"))
    steps.append(Step("softmax", t("sc.step_softmax"), blocks))

    # 4. Jacobian
    vec, p_raw, p_scaled = soft[0]  # there is at least one vector (checked above)
    J_raw, J_scaled = jacobian(p_raw), jacobian(p_scaled)
    names = [str(j) for j in range(len(vec))]
    target = int(np.argmax(vec))
    y = np.zeros_like(p_raw)
    y[target] = 1.0
    blocks = [Formula("∂p_i/∂s_j = p_i (δ_ij − p_j),   J = diag(p) − p·pᵀ",
                      r"\frac{\partial p_i}{\partial s_j}=p_i(\delta_{ij}-p_j),\qquad J=\operatorname{diag}(p)-pp^{\top}"),
              Para(t("sc.jac_why")),
              Matrix(Sym("J", "J"), J_raw, rows=names, cols=names, caption=t("sc.jac_raw", v=_lit(vec))),
              Matrix(Sym("J", "J"), J_scaled, rows=names, cols=names,
                     caption=t("sc.jac_scaled", v=_lit(vec), root=root_shown)),
              Para(t("sc.jac_norms", a=float(np.abs(J_raw).max()), b=float(np.abs(J_scaled).max()),
                     fa=float(np.linalg.norm(J_raw)), fb=float(np.linalg.norm(J_scaled)),
                     ratio=fmt(float(np.linalg.norm(J_scaled) / max(np.linalg.norm(J_raw), 1e-300)), 0))),
              Para(t("sc.ce_grad", target=target, g=VecParam(list(p_raw - y)), gs=VecParam(list(p_scaled - y)))),
              Para(t("sc.jac_conclusion"))]
    key = tuple(float(x) for x in vec)
    if key == tuple(DEFAULT_VECTORS[0]):
        blocks.append(Para(t("sc.article_grad", g="[-0.0001, 0, 0]", gs="[-0.24, 0.02, 0.22]"), style="warn"))
    steps.append(Step("jacobian", t("sc.step_jacobian"), blocks))

    values = {"variance": {d: {"theory": float(d), "sampled": sampled[d][0], "sampled_scaled": sampled[d][1]}
                           for d in ladder},
              "softmax": [{"scores": list(map(float, v)), "unscaled": a.tolist(), "scaled": b.tolist()}
                          for v, a, b in soft],
              "jacobian_unscaled": J_raw, "jacobian_scaled": J_scaled}
    meta = {"d_k": d_k, "sqrt_d_k": root, "seed": seed, "samples": samples}
    return Worked("scaling", t("sc.title", dk=d_k), intro, steps, values=values, meta=meta)


def _lit(xs) -> str:
    """A vector given as input or quoted from the article, shown as written: [15.3, 22.7]."""
    return "[" + ", ".join(short(x) for x in xs) + "]"


def _entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())
