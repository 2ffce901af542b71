"""Multi-head attention worked out by hand, the fourth article's computation:

    [Q | K | V] = X·W_QKV                one fused product for every head      (L, (H + 2·H_kv)·d)
    Q⁽ⁱ⁾ = Q[:, i·d:(i+1)·d]             view(L, H, d).transpose(0, 1): re-indexing, no arithmetic
    z⁽ⁱ⁾ = softmax(Q⁽ⁱ⁾K⁽ᵍ⁾ᵀ/√d)·V⁽ᵍ⁾     each head's attention (g = i // (H / H_kv))   (L, d_v)
    Concat = [z⁽⁰⁾ | … | z⁽ᴴ⁻¹⁾]         the inverse re-indexing, no arithmetic        (L, H·d_v)
    Y = Concat·W_O = Σ_i z⁽ⁱ⁾·W_O⁽ⁱ⁾      W_O mixes the heads                           (L, d_out)

and the check that head i computed alone, X·W_Q⁽ⁱ⁾ with the head's own block of the learned W_Q,
gives the same numbers (a learned projection of every feature, not a slice of the token).

Each head's attention is the single-head worked calculation (:func:`.toy.explain_toy` on the
head's q, k, v; :func:`.toy.compute` for its numbers); the products of the given numbers (the
fused projection and ×W_O) are exact sums of the numbers as written, rounded once to float64.
"""

from __future__ import annotations

from decimal import localcontext

import numpy as np

from .. import exact as E
from .. import reference as R
from ..errors import ConfigError
from ..i18n import error
from .doc import SUBSCRIPTS, SUPERSCRIPTS, Formula, Matrix, Para, Step, Sym, Table, Worked, dot_rows, sub, t, vec
from .modern import heads_step
from .multihead_input import MultiHeadProblem
from .numbers import percent
from .toy import check_finite, compute, compute_exact, explain_toy

__all__ = ["compute_multihead", "explain_multihead", "fused_slices"]

#: Steps of a head's single-head calculation that the multi-head one replaces with its own.
_SKIP = ("given_qkv", "meaning")


def _parts(p: MultiHeadProblem) -> list:
    """(name, W, width per head, number of heads) of the three projections."""
    return [("Q", p.W_Q, p.d_head, p.n_heads), ("K", p.W_K, p.d_head, p.n_kv_heads), ("V", p.W_V, p.d_v, p.n_kv_heads)]


def compute_multihead(p: MultiHeadProblem) -> dict:
    """Every number: ``QKV`` (fused), ``Q``, ``K``, ``V``, per head ``heads[i]`` (the single-head
    values of :func:`.toy.compute`) and stacked ``scores``, ``scaled``, ``masked``, ``exp``, ``sums``,
    ``weights``, ``output`` (H, …), ``concat``, ``projected`` and each head's share ``shares`` (with
    W_O), ``own``: the largest |X·W⁽ⁱ⁾ − block i| of each projection and head (0: identical), and
    ``exact``: QKV, Q, K, V, concat, projected as Decimal arrays (:mod:`attnscope.exact`)."""
    src = p.source
    v: dict = {"X": p.X}
    X = E.array(p.X)
    fused = None
    if p.W_QKV is not None:
        fused = E.matmul(X, E.array(p.W_QKV))  # (L, (H + 2·H_kv)·d), exact
        v["QKV"] = E.floats(fused)
        check_finite("QKV", v["QKV"], src)
        v["Q"], v["K"], v["V"] = R.split_qkv(v["QKV"], p.n_heads, p.n_kv_heads)
        exact = {name: fused[:, c] for name, c in zip("QKV", fused_slices(p))}
    else:
        exact = {name: E.matmul(X, E.array(W)) for name, W, _, _ in _parts(p)}  # (L, heads·d) each
        for name in "QKV":
            v[name] = E.floats(exact[name])
            check_finite(name, v[name], src)
    own = []
    for name, W, width, n in _parts(p):
        for h in range(n):
            cols = R.head_columns(h, width)
            alone = E.matmul(X, E.array(W[:, cols]))  # head h computed on its own
            with localcontext(E.CTX):
                diff = max(abs(float(a - b)) for a, b in zip(alone.ravel(), exact[name][:, cols].ravel()))
            own.append({"part": name, "head": h, "columns": (cols.start, cols.stop - 1), "max_abs_diff": diff})
    v["own"] = own
    v["exact"] = dict(exact, **({"QKV": fused} if fused is not None else {}))  # Decimal arrays, for the checker
    problems = [p.head_problem(h, v["Q"], v["K"], v["V"]) for h in range(p.n_heads)]
    exact_heads = [compute_exact(hp) for hp in problems]  # Decimal: what each head's steps show
    v["heads"] = [compute(hp, exact=ex) for hp, ex in zip(problems, exact_heads)]
    for name in ("scores", "scaled", "masked", "exp", "sums", "weights", "output"):
        v[name] = np.stack([hv[name] for hv in v["heads"]])  # (H, L, L), (H, L) or (H, L, d_v)
    C = np.concatenate([ex["output"] for ex in exact_heads], axis=1)  # (L, H·d_v): the heads side by side
    v["concat"] = E.floats(C)
    v["exact"]["concat"] = C
    if p.W_O is not None:
        WO = E.array(p.W_O)
        Y = E.matmul(C, WO)  # (L, d_out)
        v["projected"] = E.floats(Y)
        v["exact"]["projected"] = Y
        check_finite("projected", v["projected"], src)
        shares = [E.matmul(C[:, c], WO[c]) for c in (R.head_columns(h, p.d_v) for h in range(p.n_heads))]
        v["shares"] = np.stack([E.floats(s) for s in shares])  # (H, L, d_out): z⁽ʰ⁾·W_O⁽ʰ⁾
        with localcontext(E.CTX):
            v["shares_sum_exact"] = bool((sum(shares[1:], shares[0]) == Y).all())
    return v


def fused_slices(p: MultiHeadProblem) -> tuple:
    hq, hk = p.n_heads * p.d_head, p.n_kv_heads * p.d_head
    return slice(0, hq), slice(hq, hq + hk), slice(hq + hk, hq + hk + p.n_kv_heads * p.d_v)


def _col_labels(part: str, n: int, width: int) -> list:
    """``Q0.1`` … : head, then feature (from 0) of each column of a part."""
    return [f"{part}{h}.{f}" for h in range(n) for f in range(width)]


def _span(s: slice) -> str:
    return f"{s.start}–{s.stop - 1}" if s.stop - s.start > 1 else str(s.start)


def explain_multihead(p: MultiHeadProblem, expand: str = "auto") -> Worked:
    """The worked calculation of every head of ``p`` (see the module doc)."""
    if expand not in ("auto", "always", "never"):
        raise error(ConfigError, "errors.explain_expand", value=repr(expand))
    v = compute_multihead(p)
    H, Hkv, L, dm, d, dv, toks = p.n_heads, p.n_kv_heads, p.L, p.d_model, p.d_head, p.d_v, p.tokens
    small = expand == "always" or (expand == "auto" and L <= 6 and dm <= 4 and max(H, Hkv) * max(d, dv) <= 8)
    labels = {n: _col_labels(n, k, w) for n, _, w, k in _parts(p)}
    kv = "mh.intro_mha" if H == Hkv else "mh.intro_gqa"
    intro = [Para(t("mh.intro", L=L, tokens=" ".join(toks), d=dm, H=H, dh=d, dv=dv)), Para(t(kv, Hkv=Hkv, group=p.group)),
             Formula("MultiHead(X) = Concat(head₀, …, head_{H−1})·W_O,   headᵢ = Attention(X·W_Q⁽ⁱ⁾, X·W_K⁽ᵍ⁾, X·W_V⁽ᵍ⁾)",
                     r"\mathrm{MultiHead}(X)=\mathrm{Concat}(\mathrm{head}_0,\ldots,\mathrm{head}_{H-1})\,W_O,\quad "
                     r"\mathrm{head}_i=\mathrm{Attention}(XW_Q^{(i)},XW_K^{(g)},XW_V^{(g)})"),
             Para(t("mh.intro_why")), Para(t("counting"), style="note"), Para(t("mh.conventions"), style="note"),
             Matrix(Sym("X", "X"), p.X, rows=toks, caption=t("toy.x_caption", d=dm), exact=True)]
    if p.W_QKV is not None:
        intro.append(Matrix(Sym("W_QKV", "W_{QKV}"), p.W_QKV, cols=labels["Q"] + labels["K"] + labels["V"], exact=True,
                            caption=t("mh.wqkv_caption", cq=H * d, ck=Hkv * d, cv=Hkv * dv)))
    else:
        for name, W, _, _ in _parts(p):
            intro.append(Matrix(Sym(f"W_{name}", f"W_{{{name}}}"), W, cols=labels[name], exact=True))
    if p.W_O is not None:
        intro.append(Matrix(Sym("W_O", "W_O"), p.W_O, rows=_col_labels("z", H, dv), exact=True))
    steps = [_projection_step(p, v, labels, small), _split_step(p, v, labels), _own_step(p, v, small)]
    if Hkv < H:
        steps[1].blocks.insert(3, Para(t("mh.kv_sharing")))
        steps.insert(2, heads_step(H, Hkv, 0))
        steps[2].blocks = [b for b in steps[2].blocks  # the whole table, not one head's sentence
                           if not (isinstance(b, Para) and b.text.key == "heads.this")]
    for h in range(H):
        steps += _head_steps(p, v, h, expand)
    steps.append(_concat_step(p, v))
    if p.W_O is not None:
        steps.append(_wo_step(p, v, small))
    steps.append(_meaning_step(p, v))
    values = {k: v[k] for k in ("Q", "K", "V", "scores", "scaled", "weights", "output", "concat")}
    values.update(q_heads=R.split_heads(v["Q"], H), k_heads=R.split_heads(v["K"], Hkv), v_heads=R.split_heads(v["V"], Hkv))
    values.update({k: v[k] for k in ("QKV", "projected", "shares") if k in v})
    values.update(exp=v["exp"], sums=v["sums"])
    if np.isneginf(v["masked"]).any():  # −∞ where a key is hidden
        values["masked"] = v["masked"]
    meta = {"name": p.name, "tokens": list(toks), "L": L, "d_model": dm, "n_heads": H, "n_kv_heads": Hkv, "d_head": d,
            "d_v": dv, "fused": p.fused, "kv_heads": [p.kv_head(h) for h in range(H)],
            "factor": float(p.head_problem(0, v["Q"], v["K"], v["V"]).factor()), "own": v["own"],
            "heads_from": 0, "rows_from": 1, **{k: p.head_spec[k] for k in ("causal", "scoring", "window")
                                                 if k in p.head_spec}}
    title = t("mh.title_named", name=p.name) if p.name else t("mh.title")
    return Worked("multihead", title, intro, steps, values=values, meta=meta)


def _projection_step(p, v, labels, small) -> Step:
    toks = p.tokens
    if p.fused:
        blocks = [Formula("[Q | K | V] = X·W_QKV", r"[\,Q \mid K \mid V\,] = X\,W_{QKV}"),
                  Para(t("mh.fused_why", n=p.W_QKV.shape[1], m=p.n_heads + 2 * p.n_kv_heads))]
    else:
        blocks = [Formula("Q = X·W_Q,   K = X·W_K,   V = X·W_V", r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V"),
                  Para(t("mh.separate_why", H=p.n_heads, dh=p.d_head))]
    if small:
        for name, W, _, _ in _parts(p):
            low = name.lower()
            blocks += dot_rows(lambda i, low=low: sub(low, low, i), p.X, W, v[name])
    if p.fused:
        blocks.append(Matrix(Sym("X·W_QKV", r"X W_{QKV}"), v["QKV"], rows=toks,
                             cols=labels["Q"] + labels["K"] + labels["V"], caption=t("mh.cols_caption")))
    else:
        for name in "QKV":
            blocks.append(Matrix(Sym(name, name), v[name], rows=toks, cols=labels[name],
                                 caption=t("mh.cols_caption") if name == "Q" else None))
    return Step("fused" if p.fused else "project", t("mh.step_fused" if p.fused else "mh.step_separate"), blocks)


def _split_step(p, v, labels) -> Step:
    L, H, d = p.L, p.n_heads, p.d_head
    m = "X·W_QKV" if p.fused else "Q, K, V"
    blocks = [Formula(f"Q.view(L, H, d_head).transpose(0, 1):   ({L}, {H * d}) → ({L}, {H}, {d}) → ({H}, {L}, {d})",
                      rf"Q.\mathrm{{view}}(L, H, d_{{head}}).\mathrm{{transpose}}(0, 1):\ ({L}, {H * d}) \to "
                      rf"({L}, {H}, {d}) \to ({H}, {L}, {d})"),
              Para(t("mh.split_why", L=L, dh=d)), Para(t("mh.no_arithmetic"), style="note")]
    rows, col = [], 0
    for name, _, width, n in _parts(p):
        for h in range(n):
            for f in range(width):
                rows.append([col if p.fused else f"{name} {h * width + f}", name, h, f,
                             Sym(f"{name}⁽{_sup(h)}⁾[:, {f}]", rf"{name}^{{({h})}}_{{:,{f}}}")])
                col += 1
    head = [t("mh.col_column", m=m), t("mh.col_part"), t("mh.col_head"), t("mh.col_feature"), t("mh.col_to")]
    blocks.append(Table(head, rows, caption=t("mh.split_caption", m=m)))
    return Step("split", t("mh.step_split"), blocks)


def _sup(h: int) -> str:
    return str(h).translate(SUPERSCRIPTS)


def _own_step(p, v, small) -> Step:
    d = p.d_head
    blocks: list = [Formula("Q⁽ⁱ⁾ = X·W_Q⁽ⁱ⁾,   W_Q⁽ⁱ⁾ = columns i·d_head … (i + 1)·d_head − 1 of W_Q",
                      r"Q^{(i)} = X\,W_Q^{(i)},\quad W_Q^{(i)} = W_Q[:,\ i\,d_{head} \ldots (i+1)\,d_{head}-1]")]
    # the last head whose columns exist in X too, so that the slice of X can be set beside its query
    h = max([i for i in range(p.n_heads) if (i + 1) * d <= p.d_model] or [p.n_heads - 1])
    c = R.head_columns(h, d)
    Wh = p.W_Q[:, c]
    alone = E.floats(E.matmul(E.array(p.X), E.array(Wh)))  # (L, d_head)
    blocks.append(Para(t("mh.own_why", h=h, cols=_span(c), d=p.d_model,
                         wq=Sym(f"W_Q⁽{_sup(h)}⁾", rf"W_Q^{{({h})}}"))))
    blocks.append(Matrix(Sym(f"W_Q⁽{_sup(h)}⁾", rf"W_Q^{{({h})}}"), Wh, cols=[f"{f}" for f in range(d)], exact=True))
    if small:
        blocks += dot_rows(lambda i: Sym(f"q{str(i).translate(SUBSCRIPTS)}⁽{_sup(h)}⁾", rf"q^{{({h})}}_{{{i}}}"), p.X, Wh, alone)
    blocks.append(Matrix(Sym(f"X·W_Q⁽{_sup(h)}⁾", rf"X W_Q^{{({h})}}"), alone, rows=p.tokens))
    blocks.append(Table([t("mh.col_part"), t("mh.col_head"), t("mh.col_wcols"), t("mh.col_diff")],
                        [[o["part"], o["head"], f"{o['columns'][0]}–{o['columns'][1]}", o["max_abs_diff"]]
                         for o in v["own"]], caption=t("mh.own_caption")))
    same = all(o["max_abs_diff"] == 0 for o in v["own"])
    blocks.append(Para(t("mh.own_same" if same else "mh.own_differs")))
    if p.d_model >= c.stop:
        xs = p.X[0, c]
        blocks.append(Para(t("mh.not_a_slice", tok=p.tokens[0], h=h, cols=_span(c), x=vec(xs, exact=True),
                             q=vec(v["Q"][0, c])), style="note"))
    return Step("own", t("mh.step_own"), blocks)


def _head_steps(p, v, h, expand: str) -> list:
    g, c, toks = p.kv_head(h), p.columns(h), p.tokens
    hp = p.head_problem(h, v["Q"], v["K"], v["V"])
    blocks = [Para(t("mh.head_qkv", h=h, g=g, qc=_span(c["Q"]), kc=_span(c["K"]), vc=_span(c["V"]))),
              Matrix(Sym(f"Q⁽{_sup(h)}⁾", rf"Q^{{({h})}}"), v["Q"][:, c["Q"]], rows=toks),
              Matrix(Sym(f"K⁽{_sup(g)}⁾", rf"K^{{({g})}}"), v["K"][:, c["K"]], rows=toks),
              Matrix(Sym(f"V⁽{_sup(g)}⁾", rf"V^{{({g})}}"), v["V"][:, c["V"]], rows=toks)]
    out = [Step(f"head{h}.qkv", t("mh.step_head_qkv", h=h), blocks)]
    for st in explain_toy(hp, expand=expand).steps:
        if st.key not in _SKIP:
            out.append(Step(f"head{h}.{st.key}", t("mh.step_head", h=h, title=st.title), st.blocks))
    return out


def _concat_step(p, v) -> Step:
    L, H, dv = p.L, p.n_heads, p.d_v
    blocks = [Formula(f"Concat = O.transpose(0, 1).reshape(L, H·d_v):   ({H}, {L}, {dv}) → ({L}, {H}, {dv}) → ({L}, {H * dv})",
                      rf"\mathrm{{Concat}} = O.\mathrm{{transpose}}(0,1).\mathrm{{reshape}}(L, H d_v):\ ({H}, {L}, {dv})"
                      rf" \to ({L}, {H}, {dv}) \to ({L}, {H * dv})"),
              Para(t("mh.concat_why")), Para(t("mh.no_arithmetic"), style="note"),
              Table([t("mh.col_from"), t("mh.col_concat")],
                    [[Sym(f"z⁽{_sup(h)}⁾", rf"z^{{({h})}}"), _span(R.head_columns(h, dv))] for h in range(H)]),
              Matrix(Sym("Concat", r"\mathrm{Concat}"), v["concat"], rows=p.tokens, cols=_col_labels("z", H, dv))]
    return Step("concat", t("mh.step_concat"), blocks)


def _wo_step(p, v, small) -> Step:
    W, H, dv = p.W_O, p.n_heads, p.d_v
    blocks = [Formula("Y = Concat·W_O = Σᵢ z⁽ⁱ⁾·W_O⁽ⁱ⁾", r"Y = \mathrm{Concat}\,W_O = \sum_i z^{(i)} W_O^{(i)}"),
              Para(t("mh.wo_why", r=W.shape[0], c=W.shape[1], dv=dv))]
    if small and W.shape[1] <= 4:
        blocks += dot_rows(lambda i: sub("y", "y", i), v["concat"], W, v["projected"])
    blocks.append(Matrix(Sym("Y", "Y"), v["projected"], rows=p.tokens))
    for h in range(H):
        blocks.append(Matrix(Sym(f"z⁽{_sup(h)}⁾·W_O⁽{_sup(h)}⁾", rf"z^{{({h})}} W_O^{{({h})}}"), v["shares"][h],
                             rows=p.tokens, caption=t("mh.wo_share", h=h, rows=_span(R.head_columns(h, dv)))))
    blocks.append(Para(t("mh.wo_sum" if v["shares_sum_exact"] else "mh.wo_sum_float")))
    return Step("projected", t("mh.step_wo"), blocks)


def _meaning_step(p, v) -> Step:
    blocks = []
    for h in range(p.n_heads):
        A = v["weights"][h]
        rows = []
        for i, tok in enumerate(p.tokens):
            seen = [j for j in range(p.L) if A[i, j] > 0]
            top = [j for j in seen if A[i, j] >= A[i].max() * (1 - 1e-12)]
            if len(top) == len(seen) > 1:
                rows.append(t("mh.meaning_even", tok=tok, pct=percent(A[i, top[0]])))
            else:
                rows.append(t("mh.meaning_row", tok=tok, top=[p.tokens[j] for j in top],
                              pct=percent(A[i, top[0]])))
        blocks.append(Para(t("mh.meaning_head", h=h, rows=rows)))
    blocks.append(Para(t("mh.meaning", H=p.n_heads)))
    return Step("meaning", t("mh.step_meaning"), blocks)
