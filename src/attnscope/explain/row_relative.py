"""One row of a model whose scores carry relative positions, worked out: T5's bias buckets (and any
row of an encoder–decoder model: encoder, decoder self- or cross-attention) and DeBERTa's three
score terms.

T5 (no 1/√d_k; the bias of the bucket of δ = j − i added to every raw score)::

    δ_j = j − i  →  bucket_j (exact below n/2, log buckets up to max_distance; float32 as T5)
    b_j = W_bias[bucket_j, h]           the stack's learned table, the same in every layer
    s_j = q · k_j + b_j,  × 1           then softmax and Σ p_j v_j as for every row

DeBERTa (δ = bucket(i − j), k the span)::

    c2c_j = q · k_j,   c2p_j = q · pos_k[clip(δ(i, j) + k)],   p2c_j = k_j · pos_q[clip(−δ(j, i) + k)]
    s_j = (c2c_j + c2p_j + p2c_j) / √(3 d)

q, k and v come from the model's trace (float32, the numbers the viewer stores); the bias table,
the relative embeddings and their projections come from the model's weights; everything is
float64 through :mod:`attnscope.reference`. q, k, v are also recomputed from W_Q, W_K, W_V on the
traced input of the attention (a check printed with the row), and the model's own float32 scores,
terms, weights and output are compared at the end.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import error
from ..pieces import word_labels, word_pieces
from ..trace.seq2seq import ATTENTIONS, BLOCKS
from . import inputs
from .doc import Formula, Para, Step, Table, Worked, t
from .inputs import check_index
from .numbers import sci
from .places import ordinal_list
from .row import build_row, resolve_query


def handles(model) -> bool:
    """Whether a loaded ``model`` (or None, the default model) is T5, BART or DeBERTa: its config's kind."""
    return model is not None and getattr(model.config, "kind", "") in ("seq2seq", "deberta")


def explain_relative_row(text: str, model, *, target: Optional[str] = None, attention: Optional[str] = None,
                         layer: int = 0, head: int = 0, token: Optional[str] = None, position: Optional[int] = None,
                         dims: int = 3, expand: str = "auto", forward: Optional[dict] = None) -> Worked:
    """The row of an encoder–decoder model (``text`` is the source) or of DeBERTa.

    ``forward``: a float64 pass from the weights (:func:`attnscope.reference_model.forward` for
    DeBERTa, :func:`.reference_model_seq2seq.forward_seq2seq` for T5 and BART), whose q, k and v the
    row then shows, as the whole path does; the model's float32 trace is still compared at the end."""
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.explain_text_nonempty")
    model = inputs.loaded(model)
    kind = getattr(model.config, "kind", "")
    if kind == "seq2seq":
        return _seq2seq_row(model, text, target, attention or "encoder", layer, head, token, position, dims, expand,
                            forward)
    if target is not None or attention is not None:
        raise error(InputError, "errors.explain_target_options", model=model.name, family=model.family)
    if kind == "deberta":
        return _deberta_row(model, text, layer, head, token, position, dims, expand, forward)
    raise error(InputError, "errors.explain_no_relative_terms", model=model.name, family=model.family)


def _label(tokens, j: int) -> str:
    return f"{j}:{tokens[j]}"


def _linear_head(module, x: np.ndarray, head: int, which: int) -> np.ndarray:
    """Rows of W_qkv (Q; K; V) of one head applied to ``x (n, d_model)`` in float64 → (n, d_head)."""
    W, b = module.W_qkv.weight, module.W_qkv.bias
    d, H = module.d_head, module.n_heads
    rows = slice(which * H * d + head * d, which * H * d + (head + 1) * d)
    return R.linear(x, W[rows], None if b is None else b[rows])


def _weights_check(module, x_q: np.ndarray, x_kv: np.ndarray, head: int, q, k, v) -> Para:
    """The intro's note of the largest |q − x_q W_Q|, |k − x_kv W_K|, |v − x_kv W_V| of the head."""
    diffs = {f"d{s}": sci(float(np.abs(_linear_head(module, x, head, which) - y).max()))
             for which, (s, x, y) in enumerate((("q", x_q, q), ("k", x_kv, k), ("v", x_kv, v)))}
    return Para(t("rel.weights_check", **diffs), style="note")


# ----------------------------------------------------------------------------------------------
# T5 and BART
# ----------------------------------------------------------------------------------------------

def _seq2seq_row(model, source, target, attention, layer, head, token, position, dims, expand,
                 forward: Optional[dict] = None) -> Worked:
    cfg = model.config
    if attention not in ATTENTIONS:
        raise error(InputError, "errors.explain_one_of", name="attention", choices=", ".join(ATTENTIONS),
                    value=repr(attention))
    if attention != "encoder" and target is None:
        raise error(InputError, "errors.explain_cross_needs_target" if attention == "cross" else
                    "errors.explain_self_needs_target")
    block, q_side, k_side, causal = BLOCKS[attention]  # its module, the sides of its queries and keys
    side, _, _, att = block.split(".")  # e.g. "decoder", "layers", "{}", "cross_attn"
    layer = check_index("layer", layer, cfg.n_layers if side == "encoder" else cfg.n_decoder_layers, "layers")
    head = check_index("head", head, cfg.n_heads, "heads")
    prefix = block.format(layer)
    has_bias = attention != "cross" and cfg.score_bias
    ctx = f"encoder.layers.{cfg.n_layers - 1}.out" if cfg.norm == "post" else "encoder.final_norm"
    names = [f"{prefix}.{s}[{head}]" for s in ("q", "k", "v", "scores", "weights", "z")] + [prefix + "_in"]
    names += [f"{prefix}.bias[{head}]"] if has_bias else []
    names += [ctx] if attention == "cross" else []
    tr = model.trace([source], [target if target is not None else ""], names=names)
    get = lambda s: R.as_f64(tr.step(layer, s, head, text=0, attention=attention))  # noqa: E731
    q, k, v = get("q"), get("k"), get("v")  # (n_q, d), (n_k, d), (n_k, d)
    if forward is not None:  # float64 from the weights through every earlier layer
        q, k, v = (forward[f"{prefix}.{s}"][head] for s in ("q", "k", "v"))
    sides = {"source": tr.text_tokens(0), "target": tr.target_tokens[0]}
    qtoks, ktoks = sides[q_side], sides[k_side]
    # shown as a person reads them (T5's ▁the and BART's Ġthe as " the"); --token finds either form
    qpieces = word_pieces(qtoks, getattr(model, "tokenizer", None))
    i, notes = resolve_query(qtoks, token, position, source if attention == "encoder" else target, qpieces)
    qlabs = list(qpieces.labels)
    klabs = qlabs if ktoks is qtoks else word_labels(ktoks, getattr(model, "tokenizer", None))
    n_k = len(ktoks)
    raw = R.raw_scores(q[i], k)  # (n_k,)

    # q, k, v again, from the weights, on the traced input of this attention (float64)
    stack = getattr(model, side)
    module = getattr(stack.layers[layer], att)
    x_in = R.as_f64(tr[prefix + "_in"][0, :len(qtoks)])
    x_kv = R.as_f64(tr[ctx][0, :n_k]) if attention == "cross" else x_in

    pre, bias, values = [], np.zeros(n_k), {"qk": raw}
    if has_bias:
        rb = stack.rel_bias
        steps = rb.steps_np(np.arange(n_k) - i)  # the stack's table's buckets, every step
        table = R.as_f64(rb.embedding.weight)[:, head]  # (buckets,)
        bias = table[steps["bucket"]]  # (n_k,)
        traced = get("bias")[i]
        pre.append(_bias_step(steps, table, bias, klabs, i, qlabs, head, layer, attention, rb,
                              float(np.abs(traced - bias).max())))
        values.update(bias=bias, bucket=steps["bucket"], delta=steps["delta"])
    total = raw + bias
    allowed = np.arange(n_k) <= i if causal else np.ones(n_k, dtype=bool)
    factor = R.operand_factor(cfg.scoring, int(cfg.d_head))
    qlabel = _label(qlabs, i)
    what = t(f"rel.what_{attention}")
    intro = [Para(t("rel.intro_seq2seq", model=model.name, family=model.family, what=what, layer=layer, head=head,
                    H=cfg.n_heads, qtokens=ordinal_list(qlabs), ktokens=ordinal_list(klabs), tok=qlabel,
                    dk=int(cfg.d_head)))]
    intro += [Para(n, style="note") for n in notes] + [_weights_check(module, x_in, x_kv, head, q, k, v)]
    mask_paras = None
    if not allowed.all():
        mask_paras = [Para(t("row.masked_causal", keys=", ".join(_label(klabs, j) for j in range(i + 1, n_k)),
                             tok=qlabel), style="note")]
    unscaled = cfg.scoring == "unscaled"
    scale_para = Para(t("rel.scale_t5", root=math.sqrt(cfg.d_head), dk=int(cfg.d_head))) if unscaled else None
    trace_w, trace_z, trace_s = get("weights")[i], get("z")[i], get("scores")[i]
    cols = [t("col.pos"), t("col.key"), t("rel.col_qk")] + ([t("rel.col_bias"), t("col.raw")] if has_bias else [])
    rows = [[j, klabs[j], raw[j]] + ([bias[j], total[j]] if has_bias else []) for j in range(n_k)]
    formula = Formula("s_j = q · k_j + b_j", r"s_j = q\cdot k_j + b_j") if has_bias else \
        Formula("s_j = q · k_j", r"s_j = q\cdot k_j")
    qkey = i if attention != "cross" else -1  # cross-attention: the query is not one of the keys
    w = build_row(total, klabs, qkey, factor=factor, d_k=int(cfg.d_head), scale_kind="factor" if unscaled else "scaled",
                  allowed=allowed, V=v, dims=dims, expand=expand, pre_steps=pre, scale_para=scale_para,
                  mask_paras=mask_paras, title=t("rel.title_seq2seq", what=what, layer=layer, head=head, tok=qlabel),
                  intro=intro, meta={"source": "model", "model": model.name, "family": model.family, "text": source,
                                     "target": target, "attention": attention, "layer": layer, "head": head,
                                     "query_tokens": qtoks, "query_labels": qlabs, "key_tokens": ktoks,
                                     "key_labels": klabs, "query_piece": qtoks[i]}, trace_check=None,
                  scores=Step("scores", t("rel.step_scores"),
                              [formula, Para(t(f"rel.raw_{attention}", tok=qlabel)), Table(cols, rows)]),
                  query_label=qlabel)
    if attention == "cross":
        w.meta.update(query_position=i, query_token=qlabs[i])
    vals = w.values
    check = {"ds": sci(float(np.abs(raw - trace_s).max())), "dw": sci(float(np.abs(vals["weights"] - trace_w).max())),
             "dz": sci(float(np.abs(vals["output_full"] - trace_z).max()))}
    w.steps[-1].blocks.append(Para(t("rel.trace_check", **check), style="note"))
    w.meta["trace_max_abs_diff"] = {k: float(x) for k, x in check.items()}
    vals.update(values)
    return w


def _bias_step(steps: dict, table, bias, ktoks, i, qtoks, head, layer, attention, rb, diff: float):
    n = int(steps["half"].flat[0])
    exact = int(steps["exact"].flat[0])
    rule = "rel.bias_rule_bi" if rb.bidirectional else "rel.bias_rule_causal"
    blocks: list = [Formula("δ = j − i,   bucket = offset + (d < e ? d : min(e + ⌊ln(d/e) / ln(D/e) · (n − e)⌋, n − 1)),"
                      "   b = W[bucket, h]",
                      r"\delta = j - i,\quad \mathrm{bucket} = \mathrm{offset} + \begin{cases} d & d < e\\ "
                      r"\min\!\big(e + \lfloor \frac{\ln(d/e)}{\ln(D/e)}(n-e) \rfloor,\; n-1\big) & d \ge e \end{cases},"
                      r"\quad b = W_{\mathrm{bucket},h}"),
              Para(t(rule, nb=rb.num_buckets, n=n, e=exact, D=rb.max_distance, rest=n - exact, last=n - 1,
                     tok=_label(qtoks, i))),
              Para(t("rel.bias_float32"), style="note")]
    header = [t("col.pos"), t("col.key"), t("rel.col_delta"), t("rel.col_offset"), t("rel.col_distance"),
              t("rel.col_log_ratio"), t("rel.col_log_scaled"), t("rel.col_bucket"), t("rel.col_bias")]
    rows = []
    for j in range(len(ktoks)):
        small = bool(steps["small"][j])
        rows.append([j, ktoks[j], int(steps["delta"][j]), int(steps["offset"][j]), int(steps["distance"][j]),
                     "" if small else float(steps["log_ratio"][j]), "" if small else float(steps["scaled"][j]),
                     int(steps["bucket"][j]), float(bias[j])])
    blocks.append(Table(header, rows))
    blocks.append(Para(t("rel.bias_table", head=head, layer=layer, span=float(steps["log_span"].flat[0]), e=exact,
                         D=rb.max_distance)))
    blocks.append(Table([t("rel.col_bucket"), t("rel.col_bias")], [[b, float(table[b])] for b in range(len(table))]))
    blocks.append(Para(t("rel.bias_check", diff=sci(diff)), style="note"))
    return Step("bias", t("rel.step_bias"), blocks)


# ----------------------------------------------------------------------------------------------
# DeBERTa
# ----------------------------------------------------------------------------------------------

def _deberta_row(model, text, layer, head, token, position, dims, expand, forward: Optional[dict] = None) -> Worked:
    cfg = model.config
    layer = check_index("layer", layer, cfg.n_layers, "layers")
    head = check_index("head", head, cfg.n_heads, "heads")
    types = tuple(cfg.pos_att_type) if cfg.relative_attention else ()
    steps_ = ["q", "k", "v", "scores_c2c", "weights", "z"] + [f"scores_{x}" for x in types]
    tr = model.trace(text, names=[f"layers.{layer}.attn.{s}[{head}]" for s in steps_] + [f"layers.{layer}.attn_in"])
    get = lambda s: R.as_f64(tr.step(layer, s, head, text=0))  # noqa: E731
    q, k, v = get("q"), get("k"), get("v")
    if forward is not None:  # float64 from the weights through every earlier layer
        q, k, v = (forward[f"layers.{layer}.attn.{s}"][head] for s in ("q", "k", "v"))
    tokens = tr.text_tokens(0)
    n = len(tokens)
    i, notes = resolve_query(tokens, token, position, text)
    attn = model.layers[layer].attn
    x = R.as_f64(tr[f"layers.{layer}.attn_in"][0, :n])
    span, d = cfg.span, int(cfg.d_head)
    pre, terms = [], {"c2c": R.raw_scores(q[i], k), "c2p": np.zeros(n), "p2c": np.zeros(n)}
    meta_pos: dict = {}
    if types:
        rel = R.as_f64(model.rel_embeddings.weight)[: 2 * span]  # (2k, d_model)
        if model.rel_norm is not None:
            rel = R.layer_norm(rel, model.rel_norm.weight, model.rel_norm.bias, model.rel_norm.eps)
        pos_q = (_linear_head(attn, rel, head, 0) if cfg.share_att_key else
                 R.split_heads(R.linear(rel, attn.pos_query_proj.weight, attn.pos_query_proj.bias), cfg.n_heads)[head]) \
            if "p2c" in types else None
        pos_k = (_linear_head(attn, rel, head, 1) if cfg.share_att_key else
                 R.split_heads(R.linear(rel, attn.pos_key_proj.weight, attn.pos_key_proj.bias), cfg.n_heads)[head]) \
            if "c2p" in types else None
        r = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n): i − j
        bs = R.deberta_bucket_steps(r, cfg.position_buckets, cfg.max_relative_positions)
        full = R.deberta_terms(q, k, pos_q, pos_k, bs["bucket"], span, types)
        terms = {x: full[x][i] for x in ("c2c", "c2p", "p2c")}
        pre.append(_positions_step(bs, full, i, tokens, cfg, types))
        meta_pos = {"c2p_index": full["c2p_index"][i], "p2c_index": full["p2c_index"][i], "rel_bucket": bs["bucket"][i]}
    raw = terms["c2c"] + terms["c2p"] + terms["p2c"]
    factor = float(cfg.query_scale)
    m = 1 + len(types)
    qlabel = _label(tokens, i)
    intro = [Para(t("rel.intro_deberta", model=model.name, layer=layer, head=head, H=cfg.n_heads, L=n,
                    tokens=ordinal_list(tokens), tok=qlabel, dk=d))]
    intro += [Para(note, style="note") for note in notes] + [_weights_check(attn, x, x, head, q, k, v)]
    scale_para = Para(t("rel.scale_deberta", m=m, md=m * d, root=math.sqrt(m * d), c=factor))
    cols = [t("col.pos"), t("col.key"), t("rel.col_c2c"), t("rel.col_c2p"), t("rel.col_p2c"), t("col.raw")]
    rows = [[j, tokens[j], terms["c2c"][j], terms["c2p"][j], terms["p2c"][j], raw[j]] for j in range(n)]
    w = build_row(raw, tokens, i, factor=factor, d_k=d, scale_kind="factor", V=v, dims=dims, expand=expand,
                  pre_steps=pre, scale_para=scale_para, title=t("rel.title_deberta", layer=layer, head=head, tok=qlabel),
                  intro=intro, meta={"source": "model", "model": model.name, "family": model.family, "text": text,
                                     "layer": layer, "head": head, "pos_att_type": list(types), "span": span},
                  scores=Step("scores", t("rel.step_scores"), [
                      Formula("s_j = c2c_j + c2p_j + p2c_j", r"s_j = c2c_j + c2p_j + p2c_j"),
                      Para(t("rel.scores_deberta", tok=qlabel)), Table(cols, rows)]))
    diffs = {"d1": sci(float(np.abs(terms["c2c"] - get("scores_c2c")[i]).max()))}
    for key, term in (("d2", "c2p"), ("d3", "p2c")):
        diffs[key] = sci(float(np.abs(terms[term] - get(f"scores_{term}")[i]).max())) if term in types else "—"
    diffs["dw"] = sci(float(np.abs(w.values["weights"] - get("weights")[i]).max()))
    diffs["dz"] = sci(float(np.abs(w.values["output_full"] - get("z")[i]).max()))
    w.steps[-1].blocks.append(Para(t("rel.terms_check", **diffs), style="note"))
    w.meta["trace_max_abs_diff"] = diffs
    w.values.update(c2c=terms["c2c"], c2p=terms["c2p"], p2c=terms["p2c"], **meta_pos)
    return w


def _positions_step(bs: dict, full: dict, i: int, tokens, cfg, types):
    span = cfg.span
    mid = int(bs["mid"].flat[0])
    blocks: list = [Formula("r = i − j,   δ = bucket(r),   c2p index = clip(δ(i, j) + k),   p2c index = clip(−δ(j, i) + k)",
                      r"r = i - j,\quad \delta = \mathrm{bucket}(r),\quad \mathrm{idx}_{c2p} = \mathrm{clip}(\delta_{ij} + k),"
                      r"\quad \mathrm{idx}_{p2c} = \mathrm{clip}(-\delta_{ji} + k)")]
    if cfg.position_buckets > 0:
        blocks.append(Para(t("rel.pos_rule_log", mid=mid, maxp=cfg.max_relative_positions - 1, mid1=mid - 1,
                             span=span, last=2 * span - 1)))
        blocks.append(Para(t("rel.bias_float32"), style="note"))
    else:
        blocks.append(Para(t("rel.pos_rule_plain", span=span, last=2 * span - 1)))
    proj = t("rel.proj_shared") if cfg.share_att_key else t("rel.proj_separate")
    blocks.append(Para(t("rel.pos_embed", rows=2 * span, d=cfg.d_model, proj=proj,
                         normed=t("rel.normed") if cfg.norm_rel_embed else t("rel.not_normed"))))
    header = [t("col.pos"), t("col.key"), t("rel.col_r"), t("rel.col_dlog_ratio"), t("rel.col_dlog_scaled"),
              t("rel.col_rel_bucket"), t("rel.col_idx_c2p"), t("rel.col_idx_p2c")]
    rows = []
    for j in range(len(tokens)):
        inside = bool(bs["inside"][i, j])
        rows.append([j, tokens[j], int(bs["r"][i, j]), "" if inside else float(bs["log_ratio"][i, j]),
                     "" if inside else float(bs["scaled"][i, j]), int(bs["bucket"][i, j]),
                     int(full["c2p_index"][i, j]) if "c2p" in types else "—",
                     int(full["p2c_index"][i, j]) if "p2c" in types else "—"])
    blocks.append(Table(header, rows))
    return Step("positions", t("rel.step_positions"), blocks)
