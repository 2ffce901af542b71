"""The worked lesson of one token's attribution row (``explain --attribution rollout|norm|alti``).

The numbers come from :func:`.attribution_values.lesson_values` (float64, from the twins); this module
only builds the :class:`~.doc.Worked` from them, labels from the catalogue (:func:`.attribution_labels.lt`).

* rollout: the top layer's per-head weights of the row and their mean, then layer by layer from the
  top down: A_l (the rows the step needs), ½·A + ½·I, its row sums, Ã_l after renormalising, and the
  product u_l = Σ_j u_{l+1, j} Ã_l[j, :] with its sum; the result beside the raw weights.
* norm: per head α_ij beside ‖f(x_j)‖ and α_ij·‖f(x_j)‖, then Σ_h α_ij f(x_j) (first dimensions) and
  its norm, the method's score, beside the raw weights.
* alti: the top layer's contributions from the L1 norms, then each lower layer's matrix C_l (as the
  twin's decomposition gives it: the vectors T_i(x_j) themselves are not written out) and the products.

``Worked.values`` names the numbers as ``check`` names its steps: ``mixed[l]`` (the rows of Ã_l
used), ``product[l]``, ``rollout`` (the row), and ``contrib[l]`` for ALTI's matrices.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import InputError
from ..i18n import error
from . import inputs
from .attribution_labels import lt
from .attribution_values import check_method, lesson_values
from .doc import Divide, Formula, Matrix, Para, Step, SumLine, Sym, Table, WeightedSum, Worked, sub, t
from .numbers import percent, sci
from .places import ordinal_list

#: Rows of a weighted sum written out term by term while the row is this short (``expand="auto"``).
EXPAND_MAX = 40


def _labels(v: dict) -> list:
    return [f"{j}:{x}" for j, x in enumerate(v["labels"])]


def _intro(v: dict, model, key: str, **extra) -> list:
    labels = v["labels"]
    q = v["qpos"]
    paras = [Para(lt(key, model=model.name, L=len(labels), tokens=ordinal_list(labels), tok=f"{q}:{labels[q]}",
                     layer=v["layer"], **extra))]
    if model is not None and getattr(model.config, "kind", "") == "seq2seq":
        paras.append(Para(lt("encoder_note"), style="note"))
    paras.append(Para(lt("float64_note"), style="note"))
    return paras + [Para(n, style="note") for n in v["notes"]]


def _expand(expand: str, n: int) -> bool:
    return expand == "always" or (expand != "never" and n <= EXPAND_MAX)


def product_step(v: dict, mats: np.ndarray, l: int, sym: Sym, expand: str, key_rows: str) -> list:
    """The blocks of the product u_l = Σ_j u_{l+1, j} · M_l[j, :] (rows of ``mats[l]`` as ``v["rows"][l]``)."""
    names = _labels(v)
    rows = v["rows"][l]
    u_prev, u = v["u"][l + 1], v["u"][l]
    ul, up = sub("u", "u", l), sub("u", "u", l + 1)
    blocks: list = [Para(lt(key_rows, layer=l, rows=", ".join(names[j] for j in rows))),
                    Matrix(sym, mats[l][rows], rows=[names[j] for j in rows], cols=names)]
    blocks.append(Formula(f"{ul.text} = Σ_j {up.text},j · {sym.text}[j, :]",
                          rf"{ul.tex} = \sum_j u_{{{l + 1},j}}\, {sym.tex}[j,:]"))
    blocks.append(Para(lt("product_why", layer=l, up=up, u=ul)))
    if _expand(expand, len(u)):
        blocks.append(WeightedSum(ul, [float(u_prev[j]) for j in rows], [list(mats[l][j]) for j in rows], list(u),
                                  labels=[names[j] for j in rows]))
    else:
        blocks.append(Matrix(ul, u[None, :], rows=["-"], cols=names))
    blocks.append(SumLine(Sym(f"Σ {ul.text}", rf"\sum {ul.tex}"), list(u), float(u.sum())))
    return blocks


def _result(v: dict, first: list, firsts: list, key_meaning: str, checks: Para) -> Step:
    """The last step: the row beside ``first`` (header, column) pairs, its sum and its largest shares."""
    names, row = _labels(v), v["row"]
    header = [t("col.pos"), lt("col_token")] + [h for h, _ in firsts] + [lt("col_score"), t("col.percent")]
    body = [[j, v["labels"][j]] + [float(c[j]) for _, c in firsts] + [float(row[j]), percent(row[j] / row.sum())
                                                                      if row.sum() > 0 else "-"]
            for j in range(len(row))]
    order = np.argsort(-row, kind="stable")
    shares: list = [lt("share", pct=percent(row[j] / row.sum()), tok=names[j]) for j in order[:4]] if row.sum() > 0 \
        else ["-"]
    if row.sum() > 0 and len(row) > 4:  # the four largest, then the rest's share: the line is the whole row
        shares.append(lt("share_rest", pct=percent(row[order[4:]].sum() / row.sum()), n=len(row) - 4))
    return Step("result", t("row.step_result"), first + [Table(header, body), Para(lt("total", total=float(row.sum()))),
                                                          Para(lt(key_meaning, tok=names[v["qpos"]], shares=shares)),
                                                          checks])


def _diffs(v: dict) -> dict:
    return {"dt": sci(float(np.abs(v["row"] - v["torch"]).max())),
            "dw": sci(float(np.abs(v["row"] - v.get("twin", v["row"])).max()))}


# ----------------------------------------------------------------------------------------------
# rollout
# ----------------------------------------------------------------------------------------------

def rollout_worked(v: dict, model, expand: str = "auto") -> Worked:
    names, q, top = _labels(v), v["qpos"], v["layer"]
    H = v["heads"].shape[0]
    intro = _intro(v, model, "intro_rollout", H=H)
    intro.insert(1, Para(lt("rollout_order", layer=top, tok=names[q])))
    steps = []
    head_rows = [[lt("head_n", h=h)] + [float(x) for x in v["heads"][h]] for h in range(H)]
    head_rows.append([lt("mean_row")] + [float(x) for x in v["A"][top, q]])
    steps.append(Step("heads", lt("step_heads", layer=top, tok=names[q]), [
        Formula("A_ij = (1/H) Σ_h α^h_ij", r"A_{ij} = \frac{1}{H}\sum_h \alpha^h_{ij}"),
        Para(lt("heads_why", H=H, layer=top, tok=names[q])),
        Table([lt("col_head")] + names, head_rows)]))
    A_sym, half_sym, til_sym = Sym("A", "A"), Sym("½A + ½I", r"\tfrac{1}{2}A + \tfrac{1}{2}I"), Sym("Ã", r"\tilde{A}")
    values: dict = {}
    for l in range(top, -1, -1):
        rows = v["rows"][l] if l < top else np.array([q])
        rn = [names[j] for j in rows]
        blocks: list = [Para(lt("mean_rows", layer=l, H=H, rows=", ".join(rn))),
                        Matrix(A_sym, v["A"][l][rows], rows=rn, cols=names),
                        Formula("½·A + ½·I", r"\tfrac{1}{2}A + \tfrac{1}{2}I"),
                        Para(lt("half_why")),
                        Matrix(half_sym, v["half"][l][rows], rows=rn, cols=names)]
        sums = v["sums"][l][rows]
        dev = float(np.abs(sums - 1.0).max())
        change = float(np.abs(v["tilde"][l][rows] - v["half"][l][rows]).max())
        blocks += [Formula("Ã_ij = (½A + ½I)_ij / Σ_k (½A + ½I)_ik",
                           r"\tilde{A}_{ij} = \frac{(\frac{1}{2}A + \frac{1}{2}I)_{ij}}"
                           r"{\sum_k (\frac{1}{2}A + \frac{1}{2}I)_{ik}}"),
                   Table([lt("col_row"), lt("col_sum")], [[names[j], float(v["sums"][l][j])] for j in rows]),
                   Para(lt("renorm", dev=sci(dev), change=sci(change))),
                   Matrix(til_sym, v["tilde"][l][rows], rows=rn, cols=names)]
        values[f"mixed[{l}]"] = v["tilde"][l][rows]
        if l < top:
            blocks += product_step(v, v["tilde"], l, til_sym, expand, "rows_needed")[2:]
            if l > 0:
                values[f"product[{l}]"] = v["u"][l]
        title = lt("step_top", layer=l, tok=names[q]) if l == top else lt("step_layer", layer=l)
        steps.append(Step(f"layer{l}", title, blocks))
    values["rollout"] = v["row"]
    first = [Para(lt("rollout_result", layer=top, tok=names[q]))]
    checks = Para(lt("check_rollout", **_diffs(v)), style="note")
    steps.append(_result(v, first, [(lt("col_raw", layer=top), v["A"][top, q])], "meaning_rollout", checks))
    meta = _meta(v, model, heads=H)
    return Worked("attribution", lt("title_rollout", tok=names[q], layer=top), intro, steps, values=values, meta=meta)


# ----------------------------------------------------------------------------------------------
# norm
# ----------------------------------------------------------------------------------------------

def norm_worked(v: dict, model, dims: int = 3, expand: str = "auto") -> Worked:
    names, q, lay = _labels(v), v["qpos"], v["layer"]
    H = v["alpha"].shape[0]
    intro = _intro(v, model, "intro_norm", H=H, d=v["d"])
    steps = []
    for h in range(H):
        rows = [[j, v["labels"][j], float(v["alpha"][h, j]), float(v["fnorm"][h, j]), float(v["heads"][h, j])]
                for j in range(len(names))]
        blocks: list = [Formula("‖α^h_ij f^h(x_j)‖ = α^h_ij · ‖f^h(x_j)‖",
                          r"\|\alpha^h_{ij} f^h(x_j)\| = \alpha^h_{ij}\, \|f^h(x_j)\|")]
        if h == 0:
            blocks.append(Para(lt("head_norm_why", d=v["d"])))
        blocks.append(Table([t("col.pos"), lt("col_token"), lt("col_alpha"), lt("col_fnorm"), lt("col_anorm")], rows))
        steps.append(Step(f"head{h}", lt("step_norm_head", h=h, layer=lay), blocks))
    n = min(int(dims), v["d"])
    summed = v["heads"].sum(axis=0)  # (L,): Σ_h α‖f‖, an upper bound of the score
    steps.append(Step("summed", lt("step_norm_sum"), [
        Formula("‖Σ_h α^h_ij f^h(x_j)‖", r"\|\sum_h \alpha^h_{ij} f^h(x_j)\|"),
        Para(lt("norm_sum_why", d=v["d"], n=n)),
        Matrix(Sym("Σ_h α f", r"\sum_h \alpha f"), v["vec"][:, :n], rows=names, cols=[str(c) for c in range(n)],
               caption=lt("vec_caption", n=n, d=v["d"])),
        Table([t("col.pos"), lt("col_token"), lt("col_sum_norms"), lt("col_norm_sum")],
              [[j, v["labels"][j], float(summed[j]), float(v["row"][j])] for j in range(len(names))])]))
    checks = Para(lt("check_norm", **_diffs(v)), style="note")
    first = [Para(lt("norm_result", layer=lay, tok=names[q]))]
    mean = v["mean"]
    steps.append(_result(v, first, [(lt("col_raw", layer=lay), mean)], "meaning_norm", checks))
    values = {"alpha": v["alpha"], "fnorm": v["fnorm"], "heads": v["heads"], "norm": v["row"]}
    return Worked("attribution", lt("title_norm", tok=names[q], layer=lay), intro, steps, values=values,
                  meta=_meta(v, model, heads=H))


# ----------------------------------------------------------------------------------------------
# alti
# ----------------------------------------------------------------------------------------------

def alti_worked(v: dict, model, expand: str = "auto") -> Worked:
    names, q, top = _labels(v), v["qpos"], v["layer"]
    d = int(model.config.d_model)
    intro = _intro(v, model, "intro_alti", d=d)
    intro.insert(1, Para(lt("alti_shown", layer=top, tok=names[q])))
    C_sym = Sym("C", "C")
    row_top = v["C"][top, q]
    steps = [Step(f"layer{top}", lt("step_alti_top", layer=top, tok=names[q]), [
        Formula("c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁)",
                r"c_{ij} = \max(0,\ \|y_i\|_1 - \|y_i - T_i(x_j)\|_1)"),
        Para(lt("alti_why", y1=v["y1"], tok=names[q])),
        Table([t("col.pos"), lt("col_token"), lt("col_dist"), lt("col_c")],
              [[j, v["labels"][j], float(v["dist"][j]), float(v["raw"][j])] for j in range(len(names))]),
        SumLine(Sym("Σ c", r"\sum c"), list(v["raw"]), v["rowsum"]),
        Divide(C_sym, list(v["raw"]), v["rowsum"], list(row_top))])]
    values: dict = {f"contrib[{top}]": row_top[None, :]}
    for l in range(top - 1, -1, -1):
        blocks = product_step(v, v["C"], l, C_sym, expand, "alti_rows")
        steps.append(Step(f"layer{l}", lt("step_layer_alti", layer=l), blocks))
        values[f"contrib[{l}]"] = v["C"][l][v["rows"][l]]
        if l > 0:
            values[f"product[{l}]"] = v["u"][l]
    values["alti"] = v["row"]
    checks = Para(lt("check_alti", **_diffs(v)), style="note")
    first = [Para(lt("alti_result", layer=top, tok=names[q]))]
    steps.append(_result(v, first, [(lt("col_c_top", layer=top), row_top)], "meaning_alti", checks))
    return Worked("attribution", lt("title_alti", tok=names[q], layer=top), intro, steps, values=values,
                  meta=_meta(v, model))


def _meta(v: dict, model, **extra) -> dict:
    return dict({"source": "model", "model": model.name, "family": model.family, "method": v["method"],
                 "tokens": v["tokens"], "labels": v["labels"], "query_position": v["qpos"],
                 "query_token": v["labels"][v["qpos"]], "layer": v["layer"], "n_layers": v["n_layers"],
                 "torch_row": v["torch"].tolist(), "torch_max_abs_diff": float(np.abs(v["row"] - v["torch"]).max())},
                **extra)


def explain_attribution(text: Optional[str], method: str, model=None, token=None, position=None, layer=None,
                        dims: int = 3, expand: str = "auto", target=None, attention=None, path: bool = False) -> Worked:
    """The worked row of ``method`` ("rollout", "norm", "alti") for the query ``token``/``position`` of
    ``text`` (``layer``: the top layer of rollout and ALTI, the layer of norm; default the last).
    ``target``/``attention`` (an encoder–decoder's decoder side) and ``path`` are refused in one sentence."""
    check_method(method)
    if target is not None or attention is not None:
        raise error(InputError, "errors.attribution_lesson_decoder")
    if path:
        raise error(InputError, "errors.attribution_lesson_other", option="--path")
    model = inputs.loaded(model)  # a half-precision model: its checkpoint again, in float32
    v = lesson_values(model, text, method, token=token, position=position, layer=layer)
    if v["method"] == "rollout":
        return rollout_worked(v, model, expand)
    if v["method"] == "norm":
        return norm_worked(v, model, dims, expand)
    return alti_worked(v, model, expand)
