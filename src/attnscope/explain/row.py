"""One query row worked out: the first article's walk-through of the row of 喜, for any row.

    s_j = q · k_j            raw score against every key j          (S,)
    s'_j = s_j / √d_k        scaled                                   (S,)
    e_j = exp(s'_j)          (or exp(s'_j − m) when the scores are large; see reference.EXP_SHOW_LIMIT)
    Σ = Σ_j e_j,  p_j = e_j / Σ
    z = Σ_j p_j v_j          the row of the head's output              (d_head,), first n dims shown

Two sources: :func:`explain_model_row` works one layer and head of a real model, with q, k, v
recomputed in float64 from the model's weights through every earlier layer
(:mod:`attnscope.reference_model`; or, with ``operands="trace"``, taken from its float32 trace as
the viewer stores them), and says how far the model's own float32 numbers are from it;
:func:`explain_scores_row` starts from given raw scores (the article's row of 喜).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import Msg, error, listing, word
from ..positions import get_position, score_bias_np
from ..reference import EXP_SHOW_LIMIT
from . import inputs
from .doc import Formula, Matrix, Para, ScaleLine, Step, SumLine, Sym, Table, WeightedSum, Worked, sub, t, vec, words
from .numbers import percent, sci
from .places import INPUT, Where, count, ordinal_list
from .row_numbers import row_values
from .toy import divides_by_root

# ----------------------------------------------------------------------------------------------
# choosing the query
# ----------------------------------------------------------------------------------------------

def resolve_query(tokens: Sequence[str], token: Optional[str] = None, position: Optional[int] = None,
                  text: Optional[str] = None, pieces=None) -> tuple[int, list]:
    """The 0-based position of the query and notes to print (e.g. "喜 occurs twice; the first").

    ``pieces`` (:class:`attnscope.pieces.Pieces` of ``tokens``, from ``model.tokenizer.pieces``) lets
    ``token`` name a piece by its label (`` cat`` or ``cat`` for ``Ġcat``) or a character that spans
    several byte pieces (``喜``: its last piece is the row, and a note says which positions make it up).

    Raises InputError when the token is not in the text (listing the tokens with positions),
    the position is out of range, or neither/both disagreeing are given.
    """
    from ..pieces import Pieces, find
    from ..tokenizer import check_unicode
    if token is not None:
        check_unicode(str(token), "the query token")
    if pieces is None:
        pieces = Pieces(tuple(tokens), tuple(tokens))
    shown = listing(pieces.labels, numbered=True)  # a long text: its first tokens
    n = len(tokens)
    notes: list = []
    match = find(pieces, token) if token is not None else None
    if position is not None:
        if isinstance(position, bool) or not isinstance(position, (int, np.integer)):
            raise error(InputError, "errors.not_integer", what=word("position"), value=repr(position))
        if not 0 <= position < n:
            raise error(InputError, "errors.position_range", position=position, n=n, last=n - 1, listing=shown)
        if match is not None and not any(a <= position <= b for a, b in match.spans):
            raise error(InputError, "errors.token_not_at", token=repr(token), position=position,
                        label=repr(pieces.labels[position]), listing=shown)
        return int(position), notes
    if token is None and n == 1:  # one token: the only query there is
        return 0, notes
    if token is None or match is None:
        raise error(InputError, "errors.choose_query", listing=shown)
    if not match.spans:
        unk = next((tk for tk in tokens if "UNK" in tk.upper()), None) if text is not None and token in text else None
        if unk is not None:
            raise error(InputError, "errors.token_unk", token=repr(token), unk=unk, listing=shown)
        raise error(InputError, "errors.token_missing", token=repr(token), listing=shown)
    first, last = match.spans[0]
    if len(match.spans) > 1:
        notes.append(t("row.ambiguous", tok=token, positions=", ".join(str(b) for _, b in match.spans), pos=last))
    if match.by_chars and first < last:
        data = b"".join(c.data for c in pieces.chars if first <= c.first and c.last <= last)
        notes.append(t("row.char_span", tok=token.strip(), first=first, last=last, pos=last, n=last - first + 1,
                       hex=" ".join(f"{x:02x}" for x in data)))
    return last, notes


# ----------------------------------------------------------------------------------------------
# the worked row
# ----------------------------------------------------------------------------------------------

def build_row(raw: np.ndarray, keys: Sequence[str], qpos: int, *, factor: float, d_k: int,
              scale_kind: str = "scaled", allowed=None, V=None, dims: int = 3, title, intro: list,
              meta: dict, expand: str = "auto", trace_check: Optional[dict] = None,
              source_key: str = "row.raw_why", source: Where = INPUT, pre_steps: Sequence[Step] = (),
              scale_para: Optional[Para] = None, mask_paras: Optional[list] = None,
              trace_key: str = "row.trace_check", bias=None, bias_paras: Sequence = (), scores: Optional[Step] = None,
              query_label: Optional[str] = None) -> Worked:
    """The steps of one row (see the module doc); ``trace_check`` adds the comparison with the model.

    ``pre_steps`` come before the raw scores (a decoder's heads, QK-norm, rotation); ``scale_para``
    explains a factor that is not 1/√d_k (Gemma's); ``mask_paras`` say why keys are hidden (else
    one sentence lists them); ``bias (S,)``: a position scheme's term added after the scaling
    (ALiBi), its own step with ``bias_paras`` saying where it comes from. ``scores``: a family's own
    raw-score step in place of q·k alone (T5's bias, DeBERTa's three terms); ``query_label``: the
    query's label where it is not one of the keys (cross-attention, ``qpos`` −1)."""
    if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)) or dims < 1:
        raise error(InputError, "errors.explain_positive_integer", name="dims", value=repr(dims))
    v = row_values(raw, factor, allowed, V, source, bias=bias)
    S = len(keys)
    keys = [str(k) for k in keys]
    qtok = keys[qpos] if 0 <= qpos < S else "q"
    qlabel = query_label or (f"{qpos}:{qtok}" if 0 <= qpos < S else qtok)
    pos_keys = [f"{j}:{k}" for j, k in enumerate(keys)]
    ok = np.isfinite(v["masked"])
    steps = list(pre_steps)

    steps.append(scores or Step("scores", t("row.step_raw"), [
        Formula("s_j = q · k_j", r"s_j = q\cdot k_j"), Para(t(source_key, tok=qlabel)),
        Table([t("col.pos"), t("col.key"), t("col.raw")], [[j, keys[j], v["scores"][j]] for j in range(S)])]))

    if scale_kind == "scaled":
        blocks = [Formula("s'_j = s_j / √d_k", r"s'_j = \frac{s_j}{\sqrt{d_k}}"),
                  Para(t("toy.scale_why", dk=d_k, sqrt=math.sqrt(d_k))),
                  ScaleLine(Sym("s'", "s'"), list(v["scores"]), list(v["scaled"]),
                            divisor=Sym(f"√{d_k}", rf"\sqrt{{{d_k}}}"))]
    else:
        blocks = [Formula("s'_j = c · s_j", r"s'_j = c\, s_j"), scale_para or Para(t("row.scale_factor", c=factor)),
                  ScaleLine(Sym("s'", "s'"), list(v["scores"]), list(v["scaled"]), factor=factor)]
    steps.append(Step("scaled", t("step.scaled"), blocks))
    s_head = t("col.scaled")
    if bias is not None:
        s_head = t("col.biased")
        steps.append(Step("bias", t("row.step_bias"), [
            Formula("s'_j ← s'_j + b_j", r"s'_j \leftarrow s'_j + b_j"), *bias_paras,
            Table([t("col.pos"), t("col.key"), t("col.scaled"), t("col.bias"), s_head],
                  [[j, keys[j], v["scaled"][j], v["bias"][j], v["scaled"][j] + v["bias"][j]] for j in range(S)])]))

    blocks = [Formula("e_j = exp(s'_j)", r"e_j = e^{s'_j}"), Para(t("toy.exp_why"))]
    if mask_paras:
        blocks += mask_paras
    elif not ok.all():
        blocks.append(Para(t("row.masked", keys=", ".join(pos_keys[j] for j in range(S) if not ok[j])), style="note"))
    if v["shift"]:
        blocks.append(Para(t("row.exp_shift", m=v["shift"], limit=EXP_SHOW_LIMIT), style="note"))
        e_head = t("col.exp_shift")
    else:
        e_head = t("col.exp")
    blocks.append(Table([t("col.pos"), t("col.key"), s_head, e_head],
                        [[j, keys[j], v["masked"][j], v["exp"][j]] for j in range(S)]))
    steps.append(Step("exp", t("step.exp"), blocks))

    steps.append(Step("sum", t("row.step_sum"),
                      [Formula("Σ = Σ_j e_j", r"\Sigma = \sum_j e_j"), SumLine(Sym("Σ", r"\Sigma"), list(v["exp"]), v["sum"])]))

    blocks = [Formula("p_j = e_j / Σ", r"p_j = \frac{e_j}{\Sigma}"), Para(t("toy.weights_why"))]
    blocks.append(Table([t("col.pos"), t("col.key"), e_head, t("col.prob"), t("col.percent")],
                        [[j, keys[j], v["exp"][j], v["weights"][j], percent(v["weights"][j])] for j in range(S)]))
    # the shown p_j added up: the rounding note says where they miss the shown total (1.0001, 0.9999)
    blocks.append(SumLine(Sym("Σ_j p_j", r"\sum_j p_j"), list(v["weights"]), float(v["weights"].sum())))
    steps.append(Step("weights", t("row.step_prob"), blocks))

    n = 0  # the features of V shown (with a V)
    if V is not None:
        V = np.asarray(V, dtype=np.float64)
        d_v = V.shape[1]
        n = min(int(dims), d_v)
        more = n < d_v
        blocks = [Formula("z = Σ_j p_j · v_j", r"z = \sum_j p_j\, v_j"),
                  Para(t("row.sum_why", n=n, d=d_v) if more else t("toy.output_why"))]
        blocks.append(Matrix(Sym("V", "V"), V[:, :n], rows=pos_keys, cols=[str(c) for c in range(n)],
                             caption=t("row.v_caption", n=n, d=d_v)))
        if expand != "never" and (expand == "always" or S <= 40):
            zsym = Sym("z", "z") if qpos < 0 else (sub("z", "z", qpos) if qpos < 10 else Sym(f"z_{qpos}", f"z_{{{qpos}}}"))
            blocks.append(WeightedSum(zsym,
                                      list(v["weights"]), [list(r[:n]) for r in V], list(v["output"][:n]),
                                      labels=keys, truncated=more))
        steps.append(Step("output", t("row.step_output"), blocks))

    # summary
    blocks = [Table([t("col.pos"), t("col.key"), t("col.raw"), s_head, e_head, t("col.prob")],
                    [[j, keys[j], v["scores"][j], v["masked"][j], v["exp"][j], v["weights"][j]] for j in range(S)])]
    order = [j for j in np.argsort(-v["weights"], kind="stable") if ok[j]]
    shares = [t("toy.share", pct=percent(v["weights"][j]), tok=pos_keys[j]) for j in order[:4]]
    rest = order[4:]  # beyond four keys the line names the four largest and says what the others share
    blocks.append(Para(t("row.meaning" if not rest else "row.meaning_top" + ("_one" if len(rest) == 1 else ""),
                         tok=qlabel, shares=shares, n=len(rest), rest=percent(float(np.sum(v["weights"][rest]))))))
    if V is not None:
        blocks.append(Para(t("row.result", tok=qlabel, n=n, z=vec(v["output"][:n]))))
    if trace_check:
        blocks.append(Para(t(trace_key, **trace_check), style="note"))
    steps.append(Step("result", t("row.step_result"), blocks))

    values = {k: v[k] for k in ("scores", "scaled", "exp", "weights")}
    values["sum"] = v["sum"]
    if bias is not None:
        values["bias"], values["masked"] = v["bias"], v["masked"]
    if not ok.all():
        values["masked"] = v["masked"]
    if V is not None:
        values["output"] = v["output"][:n]
        values["output_full"] = v["output"]
    meta = dict(meta, query_position=qpos if qpos >= 0 else None, query_token=qtok, keys=keys, factor=factor, d_k=d_k,
                exp_shift=v["shift"])
    return Worked("row", title, intro, steps, values=values, meta=meta)


def explain_scores_row(scores, tokens=None, d_k: Optional[int] = None, values=None, query: Optional[int] = None,
                       dims: int = 3, expand: str = "auto", factor: Optional[float] = None) -> Worked:
    """A row from given raw scores (``scores (S,)``), e.g. the first article's row of 喜.

    ``tokens``: labels of the keys; ``d_k``: divide by √d_k (else ``factor``, else 1);
    ``values (S, d_v)``: the V rows, for the weighted sum; ``query``: the query's position among
    the keys (only for labels).
    """
    raw = inputs.vector(scores, "scores")
    S = len(raw)
    keys = list(tokens) if tokens is not None else [f"k{j}" for j in range(S)]
    if len(keys) != S:
        raise error(InputError, "errors.explain_labels_for_scores", count=count(len(keys), "label"),
                    scores=count(S, "score"))
    if d_k is not None:
        if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
            raise error(InputError, "errors.explain_positive_integer", name="d_k", value=repr(d_k))
        f, kind = float(R.score_factor("scaled", int(d_k))), "scaled"  # a float already: no τ
    elif factor is not None:
        f, kind = float(factor), "factor"
    else:
        raise error(InputError, "errors.explain_give_d_k")
    V = None
    if values is not None:
        V = inputs.matrix(values, "values")
        if V.shape[0] != S:
            raise error(InputError, "errors.explain_values_for_scores", count=count(V.shape[0], "row"),
                        scores=count(S, "score"))
    qpos = -1
    if query is not None:
        qpos = inputs.check_index("query", query, S, "keys")
    intro = [Para(t("row.intro_scores", S=S, dk=d_k) if kind == "scaled" else t("row.intro_scores_factor", S=S, c=f))]
    title = t("row.title_scores", tok=keys[qpos]) if query is not None else t("row.title_scores_plain")
    return build_row(raw, keys, qpos, factor=f, d_k=d_k or 0, scale_kind=kind,
                     V=V, dims=dims, title=title, intro=intro, meta={"source": "scores"}, expand=expand,
                     source_key="row.raw_given", source="scores")


OPERANDS = ("weights", "trace")


def model_row_data(text: str, model=None, layer: int = 0, head: int = 0, token: Optional[str] = None,
                   position: Optional[int] = None, *, operands: str = "weights", forward: Optional[dict] = None) -> dict:
    """q·k of one query against every key of ``layer``/``head`` on ``text``, float64.

    ``operands="weights"`` (the default): q, k, v are recomputed in float64 from the model's weights,
    the embeddings and every earlier layer included (:func:`attnscope.reference_model.forward`; pass
    its result as ``forward`` to reuse it), so that the digits are the formula's. ``"trace"``: they
    are the model's own float32 q, k, v from its trace (what the viewer stores), recomputed from
    there in float64.

    Returns raw (S,) float64 scores, allowed (S,) bool, V (S, d_head), factor, d_k, tokens, qpos,
    notes, operands, the model's own float32 scores/weights/z of the row (``trace_*``), the largest
    differences of the model's float32 q, k, v from the float64 ones (``operand_diff``, weights only),
    and the model. Raises InputError for an empty text, a layer/head out of range, a query token not
    in the text, or a model whose attention the row cannot recompute (DeBERTa's relative terms).
    """
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.explain_text_nonempty")
    if operands not in OPERANDS:
        raise error(InputError, "errors.explain_one_of", name="operands", choices=", ".join(OPERANDS),
                    value=repr(operands))
    model = inputs.loaded(model)
    cfg = model.config
    if getattr(cfg, "kind", "") == "deberta":
        raise error(InputError, "errors.explain_deberta_row", model=model.name)
    layer = inputs.check_index("layer", layer, cfg.n_layers, "layers")
    head = inputs.check_index("head", head, cfg.n_heads, "heads")
    R.operand_factor(cfg.scoring, cfg.d_head)  # ConfigError for a scoring whose factor the trace lacks
    tokens = model.encode(text).tokens[0]
    pieces = model.tokenizer.pieces(tokens)
    qpos, notes = resolve_query(tokens, token, position, text, pieces)
    if operands == "weights" and forward is None:
        from ..reference_model import forward as run_forward
        forward = run_forward(model, text, upto=layer)
    f = forward if operands == "weights" else None
    base = {"text": text, "tokens": list(tokens), "labels": list(pieces.labels), "qpos": qpos,
            "notes": notes, "scoring": cfg.scoring, "layer": layer,
            "head": head, "model": model, "d_k": int(cfg.d_head), "operands": operands, "forward": f}
    bias = score_bias_np(cfg, len(tokens))  # (H, n, n) of a position scheme that acts on the scores, or None
    if bias is not None:
        base["bias"] = bias[head, qpos]  # (n,)
    if getattr(cfg, "kind", "") == "decoder":
        from .row_decoder import decoder_row
        d = decoder_row(model, text, layer, head, qpos, forward=f)
        return dict(base, raw=d["raw"], allowed=d["allowed"], V=d["V"], factor=d["factor"],
                    trace_scores=d["trace"]["scores"], trace_weights=d["trace"]["weights"], trace_z=d["trace"]["z"],
                    operand_diff=d.get("operand_diff"), decoder=d)
    tr = model.trace(text, names=[f"layers.{layer}.attn.{s}[{head}]" for s in ("q", "k", "v", "scores", "weights", "z")])
    scores, weights, z = (R.as_f64(tr.step(layer, s, head, text=0))[qpos] for s in ("scores", "weights", "z"))
    trace = dict(trace_scores=scores, trace_weights=weights, trace_z=z)
    if f is None:
        row = R.trace_row(tr, layer, head, qpos)  # float64 from the trace's q, k, v
        return dict(base, raw=row["raw"], allowed=row["allowed"], V=R.as_f64(tr.step(layer, "v", head, text=0)),
                    factor=row["factor"], **trace)
    g = R.kv_head(head, cfg.n_heads, cfg.kv_heads)
    p = f"layers.{layer}.attn"
    q, k, v = f[f"{p}.q"][head], f[f"{p}.k"][g], f[f"{p}.v"][g]  # (n, d_head) each
    # q: the row's own query (as a decoder row and the whole path's table compare it); k, v: every key's
    diff = {s: float(np.abs(R.as_f64(tr.step(layer, s, head, text=0))[rows] - x[rows]).max())
            for s, x, rows in (("q", q, [qpos]), ("k", k, slice(None)), ("v", v, slice(None)))}
    factor = R.score_factor(cfg.scoring, int(cfg.d_head), model.layers[layer].attn.scale)
    return dict(base, raw=R.raw_scores(q[qpos], k), allowed=f[f"{p}.allowed"][qpos], V=v, factor=float(factor),
                q=q[qpos], K=k, operand_diff=diff, **trace)


def explain_model_row(text: str, model=None, layer: int = 0, head: int = 0, token: Optional[str] = None,
                      position: Optional[int] = None, dims: int = 3, expand: str = "auto",
                      operands: str = "weights") -> Worked:
    """One query row of ``layer``/``head`` of a real model on ``text``, recomputed in float64 from the
    model's weights (``operands="trace"``: from the trace's q, k, v) and compared with the model's
    own float32 trace (``layers.{layer}.attn.q[head]`` …, its weights and z)."""
    return row_worked(model_row_data(text, model, layer, head, token, position, operands=operands), dims, expand)


def _bias_paras(config, head: int) -> list:
    """What a bias step says: the scheme's own sentence and where the term comes from."""
    scheme = get_position(config.position)
    return [Para(words(scheme.words)), Para(t("row.bias_why", scheme=scheme.name, head=head))]


def row_worked(d: dict, dims: int = 3, expand: str = "auto") -> Worked:
    """The :class:`Worked` of a row from :func:`model_row_data`."""
    model, qpos, d_k = d["model"], d["qpos"], d["d_k"]
    tokens = d.get("labels") or d["tokens"]  # shown as a person reads them (byte-level pieces decoded)
    where = Msg("errors.explain_source_model_row", model=d["model"].name, layer=d["layer"], head=d["head"])
    vals = row_values(d["raw"], d["factor"], d["allowed"], d["V"], where, bias=d.get("bias"))
    check = {
        "scores": float(np.abs(d["raw"] - d["trace_scores"]).max()),
        "weights": float(np.abs(vals["weights"] - d["trace_weights"]).max()),
        "z": float(np.abs(vals["output"] - d["trace_z"]).max()),
    }
    weights = d["operands"] == "weights"
    if weights:
        check.update({k: v for k, v in d["operand_diff"].items()})
    meta = {"source": "model", "model": model.name, "family": model.family, "text": d.get("text"), "tokens": d["tokens"],
            "labels": list(tokens),
            "layer": d["layer"], "head": d["head"], "d_head": d_k, "dims": dims, "trace_max_abs_diff": check,
            "operands": d["operands"], "trace_weights": d["trace_weights"].tolist(), "trace_z": d["trace_z"].tolist()}
    trace_check = {"ds": sci(check["scores"]), "dw": sci(check["weights"]), "dz": sci(check["z"])}
    extra: dict = {}
    if "decoder" in d:
        from .row_decoder import decoder_parts
        extra = decoder_parts(model, d, vals, dims)
        meta.update(extra.pop("meta"))
        trace_check.update(extra.pop("trace_check"))
        intro = extra.pop("intro")
    else:
        key = "row.intro_model_weights" if weights else "row.intro_model"
        intro = [Para(t(key, model=model.name, layer=d["layer"], head=d["head"], L=len(tokens),
                        tokens=ordinal_list(tokens), tok=f"{qpos}:{tokens[qpos]}", dk=d_k))]
        if weights:
            trace_check.update(dq=sci(check["q"]), dk=sci(check["k"]), dv=sci(check["v"]))
            extra["trace_key"] = "row.trace_check_weights"
    intro += [Para(n, style="note") for n in d["notes"]]
    kind = "scaled" if divides_by_root(d["scoring"]) and not extra.get("scale_para") else "factor"
    w = build_row(d["raw"], tokens, qpos, factor=d["factor"], d_k=d_k, scale_kind=kind, allowed=d["allowed"],
                  V=d["V"], dims=dims, title=t("row.title_model", tok=tokens[qpos], layer=d["layer"], head=d["head"]),
                  intro=intro, meta=meta, expand=expand, trace_check=trace_check, source=where,
                  pre_steps=extra.get("pre_steps", ()), scale_para=extra.get("scale_para"),
                  mask_paras=extra.get("mask_paras"), trace_key=extra.get("trace_key", "row.trace_check"),
                  bias=d.get("bias"),
                  bias_paras=_bias_paras(model.config, d["head"]) if "bias" in d else ())
    w.values.update(extra.get("values", {}))
    if weights and "q" in d:
        w.values.update(q=d["q"], K=d["K"])
    return w
