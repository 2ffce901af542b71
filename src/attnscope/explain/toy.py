"""The worked calculation of attention on a small, hand-sized input.

    Q = X·W_Q,  K = X·W_K,  V = X·W_V                    (L, d_k), (L, d_k), (L, d_v)
    S = Q·Kᵀ                                               (L, L)  raw scores
    S' = S / √d_k                                          (L, L)  scaled ("why √d_k" is shown)
    E = exp(S'),  Σ_i = Σ_j E_ij,  A = E / Σ              (L, L)  softmax, row by row
    O = A·V                                                (L, d_v) each row a weighted sum of V rows
    Y = O·W_O                                              (L, d_out) only when W_O is given

Everything is numpy float64 (:mod:`attnscope.reference`); :func:`compute` returns the exact
values, :func:`explain_toy` the :class:`~.doc.Worked` that shows them. The input is a
:class:`~.toy_input.ToyProblem`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import reference as R
from ..errors import ConfigError, InputError
from ..reference import EXP_SHOW_LIMIT
from ..scorings import Scoring, get_scoring
from .doc import (
    Divide,
    DotRow,
    Formula,
    Matrix,
    Para,
    ScaleLine,
    Step,
    SumLine,
    Sym,
    VecParam,
    WeightedSum,
    Worked,
    sub,
    t,
    t_or,
    words,
)
from .modern import distance_step, gemma_scale_para, heads_step, rms_step, rotation_step, window_paras
from .numbers import fmt
from .toy_input import ToyProblem

__all__ = ["compute", "explain_toy", "check_finite", "prepares", "divides_by_root", "scoring_note",
           "STEP_NAMES"]

# ----------------------------------------------------------------------------------------------
# the numbers
# ----------------------------------------------------------------------------------------------

#: How an overflow error names each step.
STEP_NAMES = {"Q": "Q = X·W_Q", "K": "K = X·W_K", "V": "V = X·W_V", "scores": "S = Q·Kᵀ (the raw scores)",
              "Q_normed": "RMSNorm(Q)", "K_normed": "RMSNorm(K)", "Q_rot": "Q' (rotated)", "K_rot": "K' (rotated)",
              "scaled": "S' (the scaled scores)", "output": "O = A·V (the output)", "projected": "Y = O·W_O"}


def check_finite(step: str, values: np.ndarray, source: str = "input", allowed=None) -> None:
    """InputError naming the step and the first entry when ``values`` holds ∞ or NaN (where
    ``allowed``; blocked scores are −∞ by design). A worked calculation full of ∞ and NaN explains
    nothing: the inputs are beyond what float64 holds at this step."""
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values)
    if allowed is not None:
        bad &= np.broadcast_to(np.asarray(allowed, dtype=bool), bad.shape)
    if bad.any():
        idx = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
        at = "[" + ", ".join(str(int(i) + 1) for i in idx) + "]" if idx else ""
        raise InputError(f"{source}: float64 overflows in the step {STEP_NAMES.get(step, step)}: entry {at} is "
                         f"{values[idx]}; a worked calculation needs smaller inputs")


def prepares(scoring: str) -> bool:
    """Whether the scoring prepares q and k before the dot product (cosine, qknorm)."""
    return get_scoring(scoring).prepare_np is not None


def divides_by_root(scoring: str) -> bool:
    """Whether the scoring's factor is 1/√d_k, whatever d_k (scaled, qknorm): its step is shown as
    a division by √d_k, with the variance argument."""
    sc = get_scoring(scoring)
    return not sc.uses_temperature and all(
        math.isclose(float(sc.factor_for(d)), 1 / math.sqrt(d), rel_tol=1e-15) for d in (2, 3, 64))


def scoring_note(scoring: str):
    """The scoring's own sentence (from the registry) for the introduction."""
    sc: Scoring = get_scoring(scoring)
    return words(sc.words) if sc.words else t("toy.scale_factor", name=sc.name, c=sc.title)


def compute(p: ToyProblem) -> dict:
    """Every intermediate, float64: X, Q, K, V, (Qn, Kn), scores, scaled, masked, shift, exp,
    sums, weights, output and (with W_O) projected."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by step
        return _compute(p)


def _compute(p: ToyProblem) -> dict:
    out: dict = {}
    src = p.source
    if p.projected:
        out["X"] = p.X
        Q, K, V = p.X @ p.W_Q, p.X @ p.W_K, p.X @ p.W_V  # (L, d_k), (L, d_k), (L, d_v)
    else:
        Q, K, V = p.Q, p.K, p.V
    for name, m in (("Q", Q), ("K", K), ("V", V)):
        check_finite(name, m, src)
    out.update(Q=Q, K=K, V=V)
    ops = p.modern.operands(Q, K, V)  # the worked head; QK-norm and rotation when asked for
    for name in ("Q_normed", "K_normed", "Q_rot", "K_rot"):
        if name in ops:
            check_finite(name, ops[name], src)
            out[name] = ops[name]
    out.update(Qh=ops["Qh"], Kh=ops["Kh"], Vh=ops["Vh"], Qop=ops["q"], Kop=ops["k"])
    qn, kn = R.prepare_qk(ops["q"], ops["k"], p.scoring)  # (L, d_k) each: unchanged unless the scoring prepares them
    if prepares(p.scoring):
        out.update(Qn=qn, Kn=kn)
    allowed = p.allowed()
    scores = R.raw_scores(qn, kn)  # (L, L)
    check_finite("scores", scores, src)
    scaled = scores * p.factor()  # (L, L)
    check_finite("scaled", scaled, src)
    masked = np.where(allowed, scaled, -np.inf)  # (L, L)
    soft = R.softmax_parts(masked)  # shift (L, 1), exp (L, L), sum (L,), weights (L, L)
    out.update(scores=scores, scaled=scaled, masked=masked, shift=soft["shift"][:, 0], exp=soft["exp"],
               sums=soft["sum"], weights=soft["weights"])
    out["output"] = R.weighted_sum(soft["weights"], ops["Vh"])  # (L, d_v)
    check_finite("output", out["output"], src)
    if p.W_O is not None:
        out["projected"] = out["output"] @ p.W_O  # (L, d_out)
        check_finite("projected", out["projected"], src)
    return out


# ----------------------------------------------------------------------------------------------
# the worked calculation
# ----------------------------------------------------------------------------------------------

S_SYM = Sym("S", "S")
S2_SYM = Sym("S'", "S'")


def explain_toy(p: ToyProblem, expand: str = "auto") -> Worked:
    """The worked calculation of ``p`` as a :class:`Worked`.

    ``expand``: "auto" writes out row·column products and weighted sums while the sizes are small
    (d ≤ 4 and at most 6 tokens), "always", or "never".
    """
    if expand not in ("auto", "always", "never"):
        raise ConfigError(f"expand must be auto, always or never, got {expand!r}")
    v = compute(p)
    m = p.modern
    L, d_k, d_v = p.L, p.d_k, v["Vh"].shape[1]
    toks = p.tokens
    d_model = p.X.shape[1] if p.projected else None
    small_dot = expand == "always" or (expand == "auto" and L <= 6 and d_k <= 4 and (d_model or 0) <= 4)
    small_sum = expand == "always" or (expand == "auto" and L <= 6 and d_v <= 6)
    steps: list[Step] = []

    intro = [Para(t("toy.intro", L=L, tokens=" ".join(toks), dk=d_k, dv=d_v))]
    intro.append(Formula("Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V",
                         r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V"))
    if p.projected:
        intro.append(Matrix(Sym("X", "X"), p.X, rows=toks, caption=t("toy.x_caption", d=d_model), exact=True))
        for k in ("W_Q", "W_K", "W_V") + (("W_O",) if p.W_O is not None else ()):
            intro.append(Matrix(Sym(k, k), getattr(p, k), exact=True))
    if p.scoring != "scaled":
        intro.append(Para(scoring_note(p.scoring), style="note"))

    # 1-3. projections
    if p.projected:
        for name in ("Q", "K", "V"):
            W = getattr(p, f"W_{name}")
            blocks = [Formula(f"{name} = X·W_{name}", f"{name} = X W_{{{name[0]}}}"),
                      Para(t(f"toy.{name.lower()}_why"))]
            if small_dot:
                low = name.lower()
                for i in range(L):
                    blocks.append(DotRow(sub(low, low, i + 1),
                                         [[(p.X[i, m], W[m, j]) for m in range(W.shape[0])] for j in range(W.shape[1])],
                                         list(v[name][i])))
            blocks.append(Matrix(Sym(name, name), v[name], rows=toks))
            steps.append(Step(f"project_{name.lower()}", t(f"step.{name.lower()}"), blocks))
    else:
        steps.append(Step("given_qkv", t("step.given_qkv"),
                          [Matrix(Sym(n, n), v[n], rows=toks) for n in ("Q", "K", "V")]))

    steps += _modern_steps(p, v)

    if prepares(p.scoring):
        steps.append(Step("normalise", t_or(f"step.normalise_{p.scoring}", "step.normalise", name=p.scoring),
                          [Matrix(Sym("Q̂", r"\hat{Q}"), v["Qn"], rows=toks),
                           Matrix(Sym("K̂", r"\hat{K}"), v["Kn"], rows=toks)]))
        qs, ks = v["Qn"], v["Kn"]
    else:
        qs, ks = v["Qop"], v["Kop"]

    # 4. raw scores
    if m.rope_base is not None:
        blocks = [Formula("S = Q'·K'ᵀ,   S_ij = q'_i · k'_j", r"S = Q'K'^{\top},\quad S_{ij} = q'_i\cdot k'_j")]
    else:
        blocks = [Formula("S = Q·Kᵀ,   S_ij = q_i · k_j", r"S = QK^{\top},\quad S_{ij} = q_i\cdot k_j")]
    blocks.append(Para(t("toy.scores_why")))
    if small_dot:
        for i in range(L):
            blocks.append(DotRow(sub("s", "s", i + 1),
                                 [[(qs[i, m], ks[j, m]) for m in range(d_k)] for j in range(L)],
                                 list(v["scores"][i])))
    blocks.append(Matrix(S_SYM, v["scores"], rows=toks, cols=toks, caption=t("toy.rows_cols")))
    steps.append(Step("scores", t("step.scores_rot" if m.rope_base is not None else "step.scores"), blocks))

    # 5. scale
    f = p.factor()
    if m.query_pre_attn_scalar is not None:
        blocks = [Formula("S' = S · c", r"S' = c\,S"), gemma_scale_para(f, d_k)]
        div = None
    elif divides_by_root(p.scoring):
        blocks = [Formula("S' = S / √d_k", r"S' = \frac{S}{\sqrt{d_k}}"),
                  Para(t("toy.scale_why", dk=d_k, sqrt=math.sqrt(d_k)))]
        div = Sym(f"√{d_k}", rf"\sqrt{{{d_k}}}")
    else:
        blocks = [Formula("S' = S · c", r"S' = c\,S"),
                  Para(t_or(f"toy.scale_{p.scoring}", "toy.scale_factor", name=p.scoring, c=f))]
        div = None
    for i in range(L):
        blocks.append(ScaleLine(sub("s'", "s'", i + 1), list(v["scores"][i]), list(v["scaled"][i]),
                                factor=None if div is not None else f, divisor=div))
    blocks.append(Matrix(S2_SYM, v["scaled"], rows=toks, cols=toks))
    steps.append(Step("scaled", t("step.scaled"), blocks))

    allowed = p.allowed()
    if not allowed.all():
        blocks = [Para(t("toy.mask_why"))]
        if m.window is not None:
            win = p.window_allowed()
            blocks += window_paras(m.window, L, [(toks[i], [toks[j] for j in range(L) if not win[i, j]])
                                                 for i in range(L)])
        blocks.append(Matrix(S2_SYM, v["masked"], rows=toks, cols=toks))
        steps.append(Step("masked", t("step.masked"), blocks))

    # 6. exp
    blocks = [Formula("E_ij = exp(S'_ij)", r"E_{ij} = e^{S'_{ij}}"), Para(t("toy.exp_why"))]
    shifted = [i for i in range(L) if v["shift"][i] != 0]
    if shifted:
        blocks.append(Para(t("toy.exp_shift_one" if len(shifted) == 1 else "toy.exp_shift",
                             rows=", ".join(str(i + 1) for i in shifted),
                             limit=EXP_SHOW_LIMIT), style="note"))
    blocks.append(Matrix(Sym("E", "E"), v["exp"], rows=toks, cols=toks))
    steps.append(Step("exp", t("step.exp"), blocks))

    # 7. row sums
    blocks = [Formula("Σ_i = Σ_j E_ij", r"\Sigma_i = \sum_j E_{ij}")]
    for i in range(L):
        blocks.append(SumLine(sub("Σ", r"\Sigma", i + 1), list(v["exp"][i]), v["sums"][i]))
    steps.append(Step("sums", t("step.sums"), blocks))

    # 8. weights
    blocks = [Formula("A_ij = E_ij / Σ_i", r"A_{ij} = \frac{E_{ij}}{\Sigma_i}"), Para(t("toy.weights_why"))]
    for i in range(L):
        blocks.append(Divide(sub("a", "a", i + 1), list(v["exp"][i]), v["sums"][i], list(v["weights"][i])))
    blocks.append(Matrix(Sym("A", "A"), v["weights"], rows=toks, cols=toks, caption=t("toy.rows_sum_one")))
    steps.append(Step("weights", t("step.weights"), blocks))

    # 9. output
    blocks = [Formula("O = A·V,   o_i = Σ_j A_ij · v_j", r"O = AV,\quad o_i = \sum_j A_{ij}\, v_j"),
              Para(t("toy.output_why"))]
    if small_sum:
        for i in range(L):
            blocks.append(WeightedSum(sub("o", "o", i + 1), list(v["weights"][i]),
                                      [list(r) for r in v["Vh"]], list(v["output"][i]),
                                      labels=[f"v{j + 1}" for j in range(L)]))
    blocks.append(Matrix(Sym("O", "O"), v["output"], rows=toks))
    steps.append(Step("output", t("step.output"), blocks))

    if p.W_O is not None:
        blocks = [Formula("Y = O·W_O", r"Y = O W_O")]
        if expand == "always" or (expand == "auto" and L <= 6 and d_v <= 4 and p.W_O.shape[1] <= 4):
            for i in range(L):
                blocks.append(DotRow(sub("y", "y", i + 1),
                                     [[(v["output"][i, m], p.W_O[m, j]) for m in range(d_v)]
                                      for j in range(p.W_O.shape[1])], list(v["projected"][i])))
        blocks.append(Matrix(Sym("Y", "Y"), v["projected"], rows=toks))
        steps.append(Step("projected", t("step.projected"), blocks))

    # 10. what it means
    blocks = []
    for i in range(L):
        top = np.argsort(-v["weights"][i], kind="stable")
        shares = [t("toy.share", pct=fmt(100 * v["weights"][i, j], 1) + "%", tok=toks[j])
                  for j in top if allowed[i, j]]
        blocks.append(Para(t("toy.meaning_row", tok=toks[i], shares=shares)))
    if p.projected:
        blocks.append(Para(t("toy.meaning_first", tok=toks[0],
                             x=_vec_text(p.X[0], exact=True), o=_vec_text(v["output"][0]))))
    blocks.append(Para(t("toy.meaning")))
    steps.append(Step("meaning", t("step.meaning"), blocks))

    values = {k: v[k] for k in ("Q", "K", "V", "scores", "scaled", "exp", "sums", "weights", "output")}
    if "projected" in v:
        values["projected"] = v["projected"]
    if not allowed.all():
        values["masked"] = v["masked"]
    for name in ("Q_normed", "K_normed", "Q_rot", "K_rot"):
        if name in v:
            values[name] = v[name]
    if "distance" in v:
        values["distance"] = v["distance"]
    meta = {"name": p.name, "tokens": list(toks), "L": L, "d_k": d_k, "d_v": d_v, "scoring": p.scoring,
            "factor": f, "causal": p.causal, "masked": bool(not allowed.all()), **m.to_meta()}
    title = t("toy.title_named", name=p.name) if p.name else t("toy.title")
    return Worked("toy", title, intro, steps, values=values, meta=meta)


def _modern_steps(p: ToyProblem, v: dict) -> list:
    """The decoder steps between the projections and the scores: shared heads, QK-norm, rotation
    and the distance proof (adds ``v["distance"]``)."""
    m, L, d = p.modern, p.L, p.d_k
    steps = []
    qsym = lambda i: sub("q", "q", i + 1)  # noqa: E731
    ksym = lambda i: sub("k", "k", i + 1)  # noqa: E731
    if m.n_heads > 1:
        st = heads_step(m.n_heads, m.n_kv_heads, m.head)
        g = m.kv_head
        st.blocks += [Matrix(Sym(f"Q[head {m.head}]", rf"Q^{{({m.head})}}"), v["Qh"], rows=p.tokens),
                      Matrix(Sym(f"K[head {g}]", rf"K^{{({g})}}"), v["Kh"], rows=p.tokens),
                      Matrix(Sym(f"V[head {g}]", rf"V^{{({g})}}"), v["Vh"], rows=p.tokens)]
        steps.append(st)
    q, k = v["Qh"], v["Kh"]
    if m.qk_norm:
        rows = [(qsym(i), "q", q[i], v["Q_normed"][i]) for i in range(L)] + \
               [(ksym(i), "k", k[i], v["K_normed"][i]) for i in range(L)]
        steps.append(rms_step(rows, eps=m.rms_eps, offset=m.rms_offset, weights={"q": m.q_weight, "k": m.k_weight},
                              dims=d, matrices=[Matrix(Sym("Q̂", r"\hat{Q}"), v["Q_normed"], rows=p.tokens),
                                                Matrix(Sym("K̂", r"\hat{K}"), v["K_normed"], rows=p.tokens)]))
        q, k = v["Q_normed"], v["K_normed"]
    if m.rope_base is not None:
        pos, inv = m.pos(L), m.inv_freq(d)
        rows = [(qsym(i), pos[i], q[i], v["Q_rot"][i]) for i in range(L)] + \
               [(ksym(i), pos[i], k[i], v["K_rot"][i]) for i in range(L)]
        steps.append(rotation_step(rows, inv_freq=inv, pairing=m.pairing, base=m.rope_base, dims=d,
                                   matrices=[Matrix(Sym("Q'", "Q'"), v["Q_rot"], rows=p.tokens),
                                             Matrix(Sym("K'", "K'"), v["K_rot"], rows=p.tokens)]))
        j = min(1, L - 1)
        st, v["distance"] = distance_step(q[0], k[j], inv_freq=inv, pairing=m.pairing, qlabel=qsym(0),
                                          klabel=ksym(j))
        steps.append(st)
    return steps


def _vec_text(x, exact: bool = False) -> VecParam:
    return VecParam([float(a) for a in x], exact=exact)
