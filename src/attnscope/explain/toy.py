"""The worked calculation of attention on a small, hand-sized input.

    Q = X·W_Q,  K = X·W_K,  V = X·W_V                    (L, d_k), (L, d_k), (L, d_v)
    S = Q·Kᵀ                                               (L, L)  raw scores
    S' = S / √d_k                                          (L, L)  scaled ("why √d_k" is shown)
    E = exp(S'),  Σ_i = Σ_j E_ij,  A = E / Σ              (L, L)  softmax, row by row
    O = A·V                                                (L, d_v) each row a weighted sum of V rows
    Y = O·W_O                                              (L, d_out) only when W_O is given

The numbers come from :mod:`.toy_numbers` (exact: the linear steps in exact decimal arithmetic,
exp and the softmax to 100 digits, so every shown digit is the true one); :func:`explain_toy`
returns the :class:`~.doc.Worked` that shows them, with ``Worked.values`` as float64 arrays. The
input is a :class:`~.toy_input.ToyProblem`.
"""

from __future__ import annotations

import math
from decimal import localcontext

import numpy as np

from .. import exact as E
from ..errors import ConfigError
from ..i18n import error
from ..reference import EXP_SHOW_LIMIT
from ..scorings import DEFAULT_EPS, Scoring, get_scoring
from .doc import (
    SUPERSCRIPTS,
    Divide,
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
    dot_rows,
    sub,
    t,
    t_or,
    words,
)
from .modern import distance_step, gemma_scale_para, heads_step, rms_step, rotation_step, window_paras
from .numbers import percent
from .toy_input import ToyProblem
from .toy_numbers import STEP_NAMES, by_offset, check_finite, compute, compute_exact

__all__ = ["compute", "compute_exact", "explain_toy", "check_finite", "prepares", "divides_by_root", "scoring_note",
           "attention_formula", "STEP_NAMES"]


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


# ----------------------------------------------------------------------------------------------
# the worked calculation
# ----------------------------------------------------------------------------------------------

#: How cosine and qknorm prepare each row x of Q and K (exact.prepare_qk, with scorings.DEFAULT_EPS).
NORMALISE = {"cosine": ("x̂ = x / max(‖x‖, ε)", r"\hat{x} = \frac{x}{\max(\lVert x\rVert,\ \varepsilon)}"),
             "qknorm": ("x̂ = (x − mean(x)) / √(var(x) + ε)",
                        r"\hat{x} = \frac{x - \mathrm{mean}(x)}{\sqrt{\mathrm{var}(x) + \varepsilon}}")}
S_SYM = Sym("S", "S")
S2_SYM = Sym("S'", "S'")


def attention_formula(p: ToyProblem) -> Formula:
    """The attention formula of this problem's own scoring (and rotation, QK-norm, Gemma's scale)."""
    m = p.modern
    q, k, qt, kt = "Q", "K", "Q", "K"
    if m.qk_norm:
        q, k, qt, kt = "Q̂", "K̂", r"\hat{Q}", r"\hat{K}"
    if m.rope_base is not None:
        q, k, qt, kt = "Q'", "K'", "Q'", "K'"
    head = "Attention(Q, K, V) = softmax("
    thead = r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left("
    tail, ttail = ") · V", r"\right)V"
    if m.query_pre_attn_scalar is not None:
        return Formula(f"{head}{q}·{k}ᵀ · c{tail},   c = query_pre_attn_scalar^(−½)",
                       rf"{thead}c\,{qt}{kt}^{{\top}}{ttail},\quad c=\mathrm{{query\_pre\_attn\_scalar}}^{{-1/2}}")
    forms = {"scaled": (f"{q}·{k}ᵀ / √d_k", rf"\frac{{{qt}{kt}^{{\top}}}}{{\sqrt{{d_k}}}}"),
             "unscaled": (f"{q}·{k}ᵀ", rf"{qt}{kt}^{{\top}}"),
             "inv_d": (f"{q}·{k}ᵀ / d_k", rf"\frac{{{qt}{kt}^{{\top}}}}{{d_k}}"),
             "cosine": (f"cos({q}, {k}ᵀ) / τ", rf"\frac{{\cos({qt}, {kt}^{{\top}})}}{{\tau}}"),
             "qknorm": (f"LN({q})·LN({k})ᵀ / √d_k",
                        rf"\frac{{\mathrm{{LN}}({qt})\,\mathrm{{LN}}({kt})^{{\top}}}}{{\sqrt{{d_k}}}}")}
    if p.scoring in forms:
        text, tex = forms[p.scoring]
        return Formula(head + text + tail, thead + tex + ttail)
    sc = get_scoring(p.scoring)  # a registered scoring: its own per-pair form
    return Formula(f"Attention(Q, K, V) = softmax(S') · V,   S'_ij = {sc.title or sc.name}  (q = q_i, k = k_j)",
                   rf"\mathrm{{Attention}}(Q,K,V)=\mathrm{{softmax}}(S')\,V,\quad S'_{{ij}}={sc.latex or sc.name}")


def explain_toy(p: ToyProblem, expand: str = "auto") -> Worked:
    """The worked calculation of ``p`` as a :class:`Worked`.

    ``expand``: "auto" writes out row·column products and weighted sums while the sizes are small
    (d ≤ 4 and at most 6 tokens), "always", or "never".
    """
    if expand not in ("auto", "always", "never"):
        raise error(ConfigError, "errors.explain_expand", value=repr(expand))
    x = compute_exact(p)  # what is shown: exact Decimals
    v = compute(p, x)     # the same as float64 (Worked.values); overflow is an InputError
    m = p.modern
    L, d_k, d_v = p.L, p.d_k, x["Vh"].shape[1]
    toks = p.tokens
    d_model = p.X.shape[1] if p.X is not None else None  # p.projected
    small_dot = expand == "always" or (expand == "auto" and L <= 6 and d_k <= 4 and (d_model or 0) <= 4)
    small_sum = expand == "always" or (expand == "auto" and L <= 6 and d_v <= 6)
    steps: list[Step] = []

    intro = [Para(t("toy.intro", L=L, tokens=" ".join(toks), dk=d_k, dv=d_v)), attention_formula(p)]
    if p.X is not None:  # p.projected
        intro.append(Matrix(Sym("X", "X"), p.X, rows=toks, caption=t("toy.x_caption", d=d_model), exact=True))
        for k in ("W_Q", "W_K", "W_V") + (("W_O",) if p.W_O is not None else ()):
            intro.append(Matrix(Sym(k, k), getattr(p, k), exact=True))
    if p.scoring != "scaled":
        intro.append(Para(scoring_note(p.scoring), style="note"))

    # 1-3. projections
    if p.projected:
        X = x["X"]
        for name in ("Q", "K", "V"):
            W = E.array(getattr(p, f"W_{name}"))
            blocks = [Formula(f"{name} = X·W_{name}", f"{name} = X W_{{{name[0]}}}"),
                      Para(t(f"toy.{name.lower()}_why"))]
            if small_dot:
                low = name.lower()
                blocks += dot_rows(lambda i, low=low: sub(low, low, i), X, W, x[name])
            blocks.append(Matrix(Sym(name, name), x[name], rows=toks))
            steps.append(Step(f"project_{name.lower()}", t(f"step.{name.lower()}"), blocks))
    else:
        steps.append(Step("given_qkv", t("step.given_qkv"),
                          [Matrix(Sym(n, n), x[n], rows=toks) for n in ("Q", "K", "V")]))

    steps += _modern_steps(p, x, v)

    if prepares(p.scoring):
        how = NORMALISE.get(p.scoring)  # the formula and its ε, so that every entry can be recomputed
        steps.append(Step("normalise", t_or(f"step.normalise_{p.scoring}", "step.normalise", name=p.scoring),
                          ([Formula(*how), Para(t(f"toy.normalise_{p.scoring}_how", eps=_power_of_ten(DEFAULT_EPS)))]
                           if how else []) +
                          [Matrix(Sym("Q̂", r"\hat{Q}"), x["Qn"], rows=toks),
                           Matrix(Sym("K̂", r"\hat{K}"), x["Kn"], rows=toks)]))
        qs, ks = x["Qn"], x["Kn"]
    else:
        qs, ks = x["Qop"], x["Kop"]

    # 4. raw scores
    if m.rope_base is not None:
        blocks = [Formula("S = Q'·K'ᵀ,   S_ij = q'_i · k'_j", r"S = Q'K'^{\top},\quad S_{ij} = q'_i\cdot k'_j")]
    else:
        blocks = [Formula("S = Q·Kᵀ,   S_ij = q_i · k_j", r"S = QK^{\top},\quad S_{ij} = q_i\cdot k_j")]
    blocks.append(Para(t("toy.scores_why")))
    if small_dot:
        blocks += dot_rows(lambda i: sub("s", "s", i), qs, ks.T, x["scores"])
    blocks.append(Matrix(S_SYM, x["scores"], rows=toks, cols=toks, caption=t("toy.rows_cols")))
    if by_offset(m, p.scoring):  # the turns cancel on the diagonal: exact (toy_numbers.rotary_scores)
        hat = prepares(p.scoring)  # cosine: of the unit vectors q̂, k̂ (a turn keeps lengths)
        qk = [sub(f"{c}̂" if hat else c, rf"\hat{{{c}}}" if hat else c, L - 1) for c in ("q", "k")]
        blocks.append(Para(t("rope.diagonal", s=sub("s", "s", L - 1, L - 1), v=x["scores"][L - 1, L - 1],
                             q=qk[0], k=qk[1]), style="note"))
    steps.append(Step("scores", t("step.scores_rot" if m.rope_base is not None else "step.scores"), blocks))

    # 5. scale
    f = x["factor"]
    if m.query_pre_attn_scalar is not None:
        blocks = [Formula("S' = S · c", r"S' = c\,S"), gemma_scale_para(float(f), d_k)]
        div = None
    elif divides_by_root(p.scoring):
        blocks = [Formula("S' = S / √d_k", r"S' = \frac{S}{\sqrt{d_k}}"),
                  Para(t("toy.scale_why", dk=d_k, sqrt=E.CTX.sqrt(E.dec(d_k))))]
        div = Sym(f"√{d_k}", rf"\sqrt{{{d_k}}}")
    else:
        blocks = [Formula("S' = S · c", r"S' = c\,S"),
                  Para(t_or(f"toy.scale_{p.scoring}", "toy.scale_factor", name=p.scoring, c=f))]
        div = None
    for i in range(L):
        blocks.append(ScaleLine(sub("s'", "s'", i), list(x["scores"][i]), list(x["scaled"][i]),
                                factor=None if div is not None else f, divisor=div))
    blocks.append(Matrix(S2_SYM, x["scaled"], rows=toks, cols=toks))
    steps.append(Step("scaled", t("step.scaled"), blocks))

    allowed = p.allowed()
    blind = [i for i in range(L) if not allowed[i].any()]  # rows that see no key at all
    if not allowed.all():
        blocks = [Para(t("toy.mask_why"))]
        if m.window is not None:
            win = p.window_allowed()
            blocks += window_paras(m.window, L, [(toks[i], [toks[j] for j in range(L) if not win[i, j]])
                                                 for i in range(L)])
        if blind:
            blocks.append(Para(t("toy.blind_rows" if len(blind) > 1 else "toy.blind_row",
                                 rows=", ".join(str(i) for i in blind),
                                 toks=", ".join(toks[i] for i in blind)), style="note"))
        blocks.append(Matrix(S2_SYM, x["masked"], rows=toks, cols=toks))
        steps.append(Step("masked", t("step.masked"), blocks))

    # 6. exp
    blocks = [Formula("E_ij = exp(S'_ij)", r"E_{ij} = e^{S'_{ij}}"), Para(t("toy.exp_why"))]
    shifted = [i for i in range(L) if x["shift"][i] != 0]
    if shifted:
        blocks.append(Para(t("toy.exp_shift_one" if len(shifted) == 1 else "toy.exp_shift",
                             rows=", ".join(str(i) for i in shifted),
                             limit=EXP_SHOW_LIMIT), style="note"))
    blocks.append(Matrix(Sym("E", "E"), x["exp"], rows=toks, cols=toks))
    steps.append(Step("exp", t("step.exp"), blocks))

    # 7. row sums
    blocks = [Formula("Σ_i = Σ_j E_ij", r"\Sigma_i = \sum_j E_{ij}")]
    for i in range(L):
        blocks.append(SumLine(sub("Σ", r"\Sigma", i), list(x["exp"][i]), x["sums"][i]))
    steps.append(Step("sums", t("step.sums"), blocks))

    # 8. weights
    blocks = [Formula("A_ij = E_ij / Σ_i", r"A_{ij} = \frac{E_{ij}}{\Sigma_i}"), Para(t("toy.weights_why"))]
    for i in range(L):
        if i in blind:
            blocks.append(Para(t("toy.blind_weights", tok=toks[i], row=i)))
        else:
            blocks.append(Divide(sub("a", "a", i), list(x["exp"][i]), x["sums"][i], list(x["weights"][i])))
    caption = t("toy.rows_sum_one") if not blind else t(
        "toy.rows_sum_one_but" if len(blind) == 1 else "toy.rows_sum_one_but_many",
        rows=", ".join(str(i) for i in blind))
    blocks.append(Matrix(Sym("A", "A"), x["weights"], rows=toks, cols=toks, caption=caption))
    steps.append(Step("weights", t("step.weights"), blocks))

    # 9. output
    blocks = [Formula("O = A·V,   o_i = Σ_j A_ij · v_j", r"O = AV,\quad o_i = \sum_j A_{ij}\, v_j"),
              Para(t("toy.output_why"))]
    if small_sum:
        for i in range(L):
            blocks.append(WeightedSum(sub("o", "o", i), list(x["weights"][i]),
                                      [list(r) for r in x["Vh"]], list(x["output"][i]),
                                      labels=[f"v{j}" for j in range(L)],
                                      products=[list(r) for r in x["products"][i]]))
    blocks.append(Matrix(Sym("O", "O"), x["output"], rows=toks))
    steps.append(Step("output", t("step.output"), blocks))

    if p.W_O is not None:
        blocks = [Formula("Y = O·W_O", r"Y = O W_O")]
        W_O = E.array(p.W_O)
        if expand == "always" or (expand == "auto" and L <= 6 and d_v <= 4 and p.W_O.shape[1] <= 4):
            blocks += dot_rows(lambda i: sub("y", "y", i), x["output"], W_O, x["projected"])
        blocks.append(Matrix(Sym("Y", "Y"), x["projected"], rows=toks))
        steps.append(Step("projected", t("step.projected"), blocks))

    steps.append(_meaning_step(p, x, allowed, blind))

    values = {k: v[k] for k in ("Q", "K", "V", "scores", "scaled", "exp", "sums", "weights", "output")}
    if "projected" in v:
        values["projected"] = v["projected"]
    if not allowed.all():
        values["masked"] = v["masked"]
    values.update({k: v[k] for k in ("Q_normed", "K_normed", "Q_rot", "K_rot", "distance") if k in v})
    meta = {"name": p.name, "tokens": list(toks), "L": L, "d_k": d_k, "d_v": d_v, "scoring": p.scoring,
            "factor": float(f), "causal": p.causal, "masked": bool(not allowed.all()), **m.to_meta()}
    title = t("toy.title_named", name=p.name) if p.name else t("toy.title")
    return Worked("toy", title, intro, steps, values=values, meta=meta)


def _power_of_ten(x: float):
    """``x`` as 10ⁿ (a Sym) when it is one (ε = 1e-6 → 10⁻⁶), else the number."""
    n = round(math.log10(x))
    return Sym(f"10{str(n).translate(SUPERSCRIPTS)}", f"10^{{{n}}}") if x == 10.0 ** n else x


def _meaning_step(p: ToyProblem, x: dict, allowed: np.ndarray, blind: list) -> Step:
    """What the output means: each row's shares; one token's vector before and after, compared
    only within one space (its value v and its output o, both d_v wide; or, with W_O mapping back
    to the width of X, its x and its y)."""
    toks, blocks = p.tokens, []
    with localcontext(E.CTX):
        for i in range(p.L):
            if i in blind:
                blocks.append(Para(t("toy.meaning_blind", tok=toks[i])))
                continue
            order = sorted(range(p.L), key=lambda j: (-x["weights"][i, j], j))
            shares = [t("toy.share", pct=percent(x["weights"][i, j]), tok=toks[j])
                      for j in order if allowed[i, j]]
            blocks.append(Para(t("toy.meaning_row", tok=toks[i], shares=shares)))
    first = next((i for i in range(p.L) if i not in blind), None)
    if first is not None:
        if p.X is not None and "projected" in x and x["projected"].shape[1] == p.X.shape[1]:  # p.projected
            blocks.append(Para(t("toy.meaning_first_xy", tok=toks[first], x=VecParam(list(p.X[first]), exact=True),
                                 y=VecParam(list(x["projected"][first])))))
        else:
            blocks.append(Para(t("toy.meaning_first_vo", tok=toks[first], v=VecParam(list(x["Vh"][first])),
                                 o=VecParam(list(x["output"][first])), vs=sub("v", "v", first),
                                 os=sub("o", "o", first))))
    blocks.append(Para(t("toy.meaning")))
    return Step("meaning", t("step.meaning"), blocks)


def _modern_steps(p: ToyProblem, x: dict, v: dict) -> list:
    """The decoder steps between the projections and the scores: shared heads, QK-norm, rotation
    and the distance proof (adds ``v["distance"]``). ``x``: the exact values (shown), ``v``: float64."""
    m, L, d = p.modern, p.L, p.d_k
    steps = []
    qsym = lambda i: sub("q", "q", i)  # noqa: E731
    ksym = lambda i: sub("k", "k", i)  # noqa: E731
    if m.n_heads > 1:
        st = heads_step(m.n_heads, m.n_kv_heads, m.head)
        g = m.kv_head
        st.blocks += [Matrix(Sym(f"Q[head {m.head}]", rf"Q^{{({m.head})}}"), x["Qh"], rows=p.tokens),
                      Matrix(Sym(f"K[head {g}]", rf"K^{{({g})}}"), x["Kh"], rows=p.tokens),
                      Matrix(Sym(f"V[head {g}]", rf"V^{{({g})}}"), x["Vh"], rows=p.tokens)]
        steps.append(st)
    q, k = v["Qh"], v["Kh"]
    if m.qk_norm:
        rows = [(qsym(i), "q", q[i], v["Q_normed"][i]) for i in range(L)] + \
               [(ksym(i), "k", k[i], v["K_normed"][i]) for i in range(L)]
        steps.append(rms_step(rows, eps=m.rms_eps, offset=m.rms_offset, weights={"q": m.q_weight, "k": m.k_weight},
                              dims=d, matrices=[Matrix(Sym("Q̂", r"\hat{Q}"), x["Q_normed"], rows=p.tokens),
                                                Matrix(Sym("K̂", r"\hat{K}"), x["K_normed"], rows=p.tokens)]))
        q, k = v["Q_normed"], v["K_normed"]
    if m.rope_base is not None:
        pos, inv = m.pos(L), m.inv_freq(d)
        rows = [(qsym(i), pos[i], q[i], v["Q_rot"][i]) for i in range(L)] + \
               [(ksym(i), pos[i], k[i], v["K_rot"][i]) for i in range(L)]
        steps.append(rotation_step(rows, inv_freq=inv, pairing=m.pairing, base=m.rope_base, dims=d,
                                   matrices=[Matrix(Sym("Q'", "Q'"), x["Q_rot"], rows=p.tokens),
                                             Matrix(Sym("K'", "K'"), x["K_rot"], rows=p.tokens)]))
        j = min(1, L - 1)
        st, v["distance"] = distance_step(q[0], k[j], inv_freq=inv, pairing=m.pairing, qlabel=qsym(0),
                                          klabel=ksym(j))
        steps.append(st)
    return steps
