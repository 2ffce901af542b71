"""The circuit lessons: one entry of a head's W_QK (``explain --circuit qk --entry i,j``) and one
composition score (``explain --composition q|k|v --from L1.H1 --to L2.H2``), worked out.

The numbers come from :mod:`.circuit_values` (float64); this module only builds the
:class:`~.doc.Worked` from them, its labels from the catalogue (``i18n/catalog/h5_circuits.toml``,
area ``circuitlesson``). ``Worked.values``: ``W_QK[i,j]``; ``norm_A``, ``norm_B``, ``norm_AB``, ``score``.
"""

from __future__ import annotations

from typing import Any, Optional

from ..i18n import TABLES
from . import inputs
from .blocks import T
from .circuit_values import composition_values, qk_entry_values
from .doc import Divide, DotRow, Formula, Para, Step, SumLine, Sym, Table, Worked
from .numbers import sci

AREA = "circuitlesson"


def cl(key: str, **params: Any) -> T:
    """The catalogue label ``circuitlesson.{key}`` with its ``{placeholders}`` filled at render time."""
    full = f"{AREA}.{key}"
    table = TABLES[AREA]
    return T(full, params, {lang: table[lang][full] for lang in table})


def _folded(folded) -> T:
    return cl("folded_yes", norms=", ".join(folded)) if folded else cl("folded_no")


def _load(model):
    return inputs.loaded(model)  # a half-precision model: its checkpoint again, in float32


# ----------------------------------------------------------------------------------------------
# one entry of W_QK
# ----------------------------------------------------------------------------------------------

def qk_entry_worked(v: dict, model) -> Worked:
    i, j, L, H = v["i"], v["j"], v["layer"], v["head"]
    dh = v["d_head"]
    intro = [Para(cl("intro_qk", model=model.name, layer=L, head=H, d=v["d"], dh=dh, i=i, j=j, scale=v["scale"])),
             Para(cl("kv_head", head=H, kv=v["kv_head"]), style="note"),
             Para(_folded(v["folded"]), style="note")]
    if v["rotary"]:
        intro.append(Para(cl("rotary_offset", offset=v["offset"]) if v["offset"] is not None else cl("rotary_plain"),
                          style="note"))
    g_i = 1.0 if v["gamma_i"] is None else v["gamma_i"]
    g_j = 1.0 if v["gamma_j"] is None else v["gamma_j"]
    qn = v["qn"] is not None  # a QK-norm's scales get a column beside each row
    header = [cl("col_k"), cl("col_wq", i=i)] + ([cl("col_qn")] if qn else []) + [cl("col_wq_folded", i=i),
                                                                                 cl("col_wk", j=j)] + \
        ([cl("col_kn")] if qn else []) + [cl("col_wk_folded", j=j)]
    rows = [[k, float(v["raw_q"][k])] + ([float(v["qn"][k])] if qn else []) + [float(v["q"][k]), float(v["raw_k"][k])]
            + ([float(v["kn"][k])] if qn else []) + [float(v["k"][k])] for k in range(dh)]
    blocks: list = [Formula("W_QK[i, j] = Σ_k W_Q[i, k] · W_K[j, k]", r"W_{QK}[i,j] = \sum_k W_Q[i,k]\, W_K[j,k]"),
                    Para(cl("rows_why", i=i, j=j, dh=dh, gi=g_i, gj=g_j))]
    if v["qn"] is not None:
        blocks.append(Para(cl("qknorm_why")))
    blocks.append(Table(header, rows))
    steps = [Step("rows", cl("step_rows", i=i, j=j), blocks)]
    left = v["q"]
    if v["offset"] is not None:
        h = dh // 2
        body = [[k, k + h, float(v["angles"][k]), float(v["cos"][k]), float(v["sin"][k]), float(v["q"][k]),
                 float(v["q"][k + h]), float(v["q_rot"][k]), float(v["q_rot"][k + h])] for k in range(h)]
        steps.append(Step("rotate", cl("step_rotate", offset=v["offset"]), [
            Formula("(q R_δ)_k = q_k cos θ_k − q_{k+h} sin θ_k,  (q R_δ)_{k+h} = q_{k+h} cos θ_k + q_k sin θ_k",
                    r"(qR_\delta)_k = q_k\cos\theta_k - q_{k+h}\sin\theta_k,\ "
                    r"(qR_\delta)_{k+h} = q_{k+h}\cos\theta_k + q_k\sin\theta_k"),
            Para(cl("rotate_why", offset=v["offset"], h=h)),
            Table([cl("col_k"), cl("col_kh"), cl("col_angle"), "cos", "sin", "q_k", "q_{k+h}", "(qR)_k", "(qR)_{k+h}"],
                  body)]))
        left = v["q_rot"]
    lhs = Sym(f"W_QK[{i}, {j}]", rf"W_{{QK}}[{i},{j}]")
    steps.append(Step("sum", cl("step_sum", i=i, j=j), [
        DotRow(lhs, [[(float(a), float(b)) for a, b in zip(left, v["k"])]], [v["entry"]]),
        Para(cl("sum_meaning", i=i, j=j, value=v["entry"], scale=v["scale"], scaled=v["scale"] * v["entry"])),
        Para(cl("check_qk", full=v["full"], diff=sci(v["diff"])), style="note")]))
    meta = {"source": "model", "model": model.name, "family": model.family, "lesson": "circuit_qk", "layer": L,
            "head": H, "kv_head": v["kv_head"], "entry": [i, j], "offset": v["offset"], "folded": list(v["folded"]),
            "scale": v["scale"], "full_entry": v["full"], "max_abs_diff": v["diff"]}
    return Worked("circuit", cl("title_qk", layer=L, head=H, i=i, j=j), intro, steps,
                  values={f"W_QK[{i},{j}]": v["entry"]}, meta=meta)


# ----------------------------------------------------------------------------------------------
# one composition score
# ----------------------------------------------------------------------------------------------

_MATRIX = {"q": "W_QK", "k": "W_QKᵀ", "v": "W_OV"}


def _norm_step(key: str, title: T, why: T, part: dict, sym: Sym) -> Step:
    r = part["inner"]
    body = [[a, float(part["GL"][a, a]), float(part["GR"][a, a]), float(part["rows"][a])] for a in range(r)]
    sq = Sym(f"‖{sym.text}‖²", rf"\|{sym.tex}\|^2")
    return Step(key, title, [
        Formula("‖L R‖²_F = Σ_a Σ_b (LᵀL)_ab (R Rᵀ)_ab", r"\|LR\|_F^2 = \sum_a \sum_b (L^\top L)_{ab}\,(RR^\top)_{ab}"),
        Para(why),
        Table([cl("col_a"), cl("col_gl"), cl("col_gr"), cl("col_rowsum")], body),
        SumLine(sq, [float(x) for x in part["rows"]], part["sq"]),
        Para(cl("sqrt", sym=sym, sq=part["sq"], norm=part["norm"]))])


def composition_worked(v: dict, model) -> Worked:
    (l1, h1), (l2, h2), kind = v["sender"], v["receiver"], v["kind"]
    B = _MATRIX[kind]
    A_sym, B_sym = Sym(f"W_OV^{l1}.{h1}", rf"W_{{OV}}^{{{l1}.{h1}}}"), Sym(f"{B}^{l2}.{h2}", rf"{B}^{{{l2}.{h2}}}")
    AB_sym = Sym(f"{A_sym.text} {B_sym.text}", f"{A_sym.tex} {B_sym.tex}")
    intro = [Para(cl("intro_comp", model=model.name, kind=kind.upper(), s=f"{l1}.{h1}", r=f"{l2}.{h2}", d=v["d"],
                     matrix=B)),
             Para(cl(f"comp_{kind}")),
             Para(cl("comp_convention"), style="note"),
             Para(_folded(v["folded"]), style="note")]
    steps = [
        _norm_step("A", cl("step_norm", sym=A_sym), cl("why_A", s=f"{l1}.{h1}", inner=v["A"]["inner"]), v["A"], A_sym),
        _norm_step("B", cl("step_norm", sym=B_sym), cl(f"why_B_{kind}", r=f"{l2}.{h2}", inner=v["B"]["inner"]),
                   v["B"], B_sym),
        _norm_step("AB", cl("step_norm", sym=AB_sym), cl("why_AB", inner=v["AB"]["inner"]), v["AB"], AB_sym)]
    den = v["A"]["norm"] * v["B"]["norm"]
    f = v["full"]
    steps.append(Step("score", cl("step_score"), [
        Formula(f"score = ‖{AB_sym.text}‖ / (‖{A_sym.text}‖ · ‖{B_sym.text}‖)",
                rf"\mathrm{{score}} = \frac{{\|{AB_sym.tex}\|}}{{\|{A_sym.tex}\|\,\|{B_sym.tex}\|}}"),
        Para(cl("den", a=v["A"]["norm"], b=v["B"]["norm"], den=den)),
        Divide(Sym("score", r"\mathrm{score}"), [v["AB"]["norm"]], den, [v["score"]]),
        Para(cl("score_meaning", kind=kind.upper(), score=v["score"], s=f"{l1}.{h1}", r=f"{l2}.{h2}")),
        Para(cl("check_comp", a=f["A"], b=f["B"], ab=f["AB"], score=f["score"], diff=sci(v["diff"])), style="note")]))
    values = {"norm_A": v["A"]["norm"], "norm_B": v["B"]["norm"], "norm_AB": v["AB"]["norm"], "score": v["score"]}
    meta = {"source": "model", "model": model.name, "family": model.family, "lesson": "composition", "kind": kind,
            "from": [l1, h1], "to": [l2, h2], "offset": v["offset"], "folded": list(v["folded"]),
            "full": dict(f), "max_rel_diff": v["diff"]}
    return Worked("circuit", cl("title_comp", kind=kind.upper(), s=f"{l1}.{h1}", r=f"{l2}.{h2}"), intro, steps,
                  values=values, meta=meta)


def explain_qk_entry(model, layer: int, head: int, entry, *, offset: Optional[int] = None,
                     fold_norm: bool = True) -> Worked:
    """The worked entry ``entry`` = (i, j) of head ``head`` of ``layer``'s QK circuit."""
    model = _load(model)
    i, j = entry
    return qk_entry_worked(qk_entry_values(model, layer, head, i, j, offset=offset, fold_norm=fold_norm), model)


def explain_composition(model, kind: str, sender, receiver, *, offset: Optional[int] = None,
                        fold_norm: bool = True) -> Worked:
    """The worked ``kind`` ("q", "k", "v") composition score of ``sender`` → ``receiver`` ((L, H) or "L.H")."""
    model = _load(model)
    return composition_worked(composition_values(model, kind, sender, receiver, offset=offset, fold_norm=fold_norm),
                              model)

