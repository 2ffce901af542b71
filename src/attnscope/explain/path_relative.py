"""One token's whole path through a layer of the families whose scores carry relative positions
(:mod:`.path` for the steps every family shares):

* **DeBERTa-v2/v3**: the embedding (projected E → d *before* its LayerNorm), the relative
  embeddings and their LayerNorm, their projections ``pos_k`` / ``pos_q`` for the head, the row's
  three terms c2c, c2p, p2c and the factor 1/√(d·(1 + terms)) (:mod:`.row_relative`, from the
  float64 pass), then BERT's post-LN layer;
* **T5, mT5, BART** (``text`` = the source): a source token through an encoder layer (T5: RMSNorm,
  pre-norm, no 1/√d, the bias buckets; BART: learned positions read at + 2, post-LN), or, with a
  target, a target token through a decoder layer: causal self-attention (T5: causal buckets),
  cross-attention over the encoder's output (no bias), the feed-forward (T5 v1.1: gated).

Every number is float64 from the weights (:mod:`attnscope.reference_model`,
:mod:`attnscope.reference_model_seq2seq`); the model's float32 trace is set beside each step.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import Msg, error
from ..pieces import word_labels, word_pieces
from ..trace.seq2seq import ATTENTIONS
from .blocks import Matrix, Para, Step, Sym, t
from .inputs import check_index
from .path_blocks import norm_blocks, projection_table, trace_para, vector_table
from .path_steps import PathSteps, assemble
from .row import resolve_query
from .row_relative import explain_relative_row

# ----------------------------------------------------------------------------------------------
# DeBERTa
# ----------------------------------------------------------------------------------------------

class _DebertaPath(PathSteps):
    row_names = {"scores": ["scores_c2c", "scores_c2p", "scores_p2c"], "scaled": ["scaled", "bias"]}

    def after_query(self, step) -> list:
        """The relative table (its LayerNorm) and this head's pos_k / pos_q rows for r = 0."""
        c, f, h, p = self.c, self.f, self.h, f"{self.lp}.attn"
        if not c.relative_attention or not c.pos_att_type:
            return []
        span = c.span
        idx = span  # r = 0 (the token itself): row k of the table, for c2p and p2c alike
        blocks: list = [Para(t("path.relative_why", rows=2 * span, d=c.d_model, k=span, idx=idx,
                               shared=t("rel.proj_shared") if c.share_att_key else t("rel.proj_separate")))]
        if self.m.rel_norm is not None:
            blocks += norm_blocks(f["rel.raw"][idx], self.m.rel_norm, f["rel.table"][idx], self.dims)
        else:
            blocks.append(vector_table([(t("path.rel_row", idx=idx), f["rel.table"][idx])], self.dims))
        attn, H, dh = self.layer.attn, c.n_heads, c.d_head
        names = []
        for term, key, which, lin in (("c2p", "pos_k", 1, "pos_key_proj"), ("p2c", "pos_q", 0, "pos_query_proj")):
            if term not in c.pos_att_type:
                continue
            if c.share_att_key:
                W, b, rows = attn.W_qkv.weight, attn.W_qkv.bias, range(which * H * dh + h * dh, which * H * dh + (h + 1) * dh)
            else:
                mod = getattr(attn, lin)
                W, b, rows = mod.weight, mod.bias, range(h * dh, (h + 1) * dh)
            y = f[f"{p}.{key}"][h]  # (2k, d_head)
            blocks.append(Para(t(f"path.{key}_why", h=h, idx=idx)))
            blocks.append(projection_table(f["rel.table"][idx], W, rows, b, y[idx], dims=self.dims,
                                           wname="W_K" if which else "W_Q"))
            name = f"{p}.{key}[{h}]"
            self.values[name] = y
            if f"{p}.{key}" in self.tr:
                self.record("relative", name, float(np.abs(R.as_f64(self.tr[f"{p}.{key}"])[0][h] - y).max()))
            names.append(name)
        blocks.append(trace_para(*names))
        return [Step("relative", t("path.step_relative"), blocks)]


def deberta_path(text: str, model, f: dict, layer: int, head: int, token, position, dims: int, expand: str):
    c = model.config
    head = check_index("head", head, c.n_heads, "heads")
    qpos, notes = resolve_query(f["tokens"], token, position, text)
    row = explain_relative_row(text, model, layer=layer, head=head, position=qpos, dims=dims, expand=expand, forward=f)
    p = f"layers.{layer}.attn"
    d = {"layer": layer, "head": head, "qpos": qpos, "tokens": f["tokens"], "text": text, "notes": notes,
         "extra_names": [f"{p}.{k}" for k in ("scores_c2c", "scores_c2p", "scores_p2c", "weights")
                         if f"{p}.{k}" in model.hook_names]}
    P = _DebertaPath(model, f, d, dims)
    P.rows["attn"] = (row, P.row_diffs("attn", ("scores_c2c", "scores_c2p", "scores_p2c", "weights")))
    return assemble(P, row, notes)


# ----------------------------------------------------------------------------------------------
# T5 and BART
# ----------------------------------------------------------------------------------------------

class _DecoderPath(PathSteps):
    """A target token through a decoder layer: self-attention, cross-attention, feed-forward."""

    def before(self) -> list:
        src = self.d["source_labels"]
        return [Step("source_tokens", t("path.step_source_tokens"),
                     [Para(t("path.source_tokens", S=len(src), tokens=", ".join(f"{j}:{x}" for j, x in enumerate(src))))])
                ] + super().before()

    def before_query(self, step) -> list:
        """Before the cross-attention's query: the encoder's output, its keys and values."""
        if step.op != "cross_attention":
            return []
        src, name = self.d["source_labels"], self.d["encoder_out"]
        enc = self.f[name]
        n = min(self.dims, enc.shape[1])
        return [Step("source", t("path.step_source"),
                     [Para(t("path.source_why", S=len(src), name=name, tok=self.tok)),
                      Matrix(Sym("enc", r"\mathrm{enc}"), enc[:, :n], rows=[f"{j}:{x}" for j, x in enumerate(src)],
                             cols=[str(j) for j in range(n)], caption=t("path.first_features", n=n, d=enc.shape[1])),
                      trace_para(name)])]


def seq2seq_path(source: str, model, target: Optional[str], attention: Optional[str], layer: int, head: int,
                 token, position, dims: int, expand: str):
    """See the module docstring; ``attention``: None, "encoder" (a source token; the default
    without a target), "self" or "cross" (a target token through a decoder layer, both its
    attentions worked: the same path)."""
    from ..reference_model_seq2seq import encoder_output_name, forward_seq2seq
    c = model.config
    if attention is not None and attention not in ATTENTIONS:
        raise error(InputError, "errors.explain_one_of", name="attention", choices=", ".join(ATTENTIONS),
                    value=repr(attention))
    decoder = target is not None and attention != "encoder"
    if attention in ("self", "cross") and target is None:
        raise error(InputError, "errors.explain_path_needs_target")
    if not isinstance(source, str) or not source.strip():
        raise error(InputError, "errors.explain_source_nonempty")
    stack = "decoder" if decoder else "encoder"
    n_layers = c.n_decoder_layers if decoder else c.n_layers
    layer = check_index(Msg(f"errors.explain_{stack}_layer"), layer, n_layers, "layers")
    head = check_index("head", head, c.n_heads, "heads")
    f = forward_seq2seq(model, source, target, encoder_upto=None if decoder else layer,
                        decoder_upto=layer if decoder else None)
    tokens = f[f"{stack}.tokens"]
    pieces = word_pieces(tokens, model.tokenizer)  # shown as read (▁the → " the"); --token finds either form
    try:
        qpos, notes = resolve_query(tokens, token, position, target if decoder else source, pieces)
    except InputError as e:  # the query not found: said of the text it was looked for in
        key = getattr(e, "key", None)
        inner = Msg(key, **e.values) if key else str(e)
        raise error(InputError, "errors.explain_in_target" if decoder else "errors.explain_in_source",
                    inner=inner) from None
    view = dict(f, tokens=tokens, ids=f[f"{stack}.ids"], positions=f[f"{stack}.positions"], segments=None)
    kinds = {"self_attn": "self", "cross_attn": "cross"} if decoder else {"attn": "encoder"}  # step: row
    rows = {k: explain_relative_row(source, model, target=target, attention=a, layer=layer, head=head, position=qpos,
                                    dims=dims, expand=expand, forward=f) for k, a in kinds.items()}
    lp = f"{stack}.layers.{layer}"
    prefix = f"{lp}.self_attn" if decoder else f"{lp}.attn"
    enc_out = encoder_output_name(model)
    d = {"layer": layer, "head": head, "qpos": qpos, "tokens": tokens, "labels": list(pieces.labels), "text": source,
         "target": target if target is not None else "", "notes": notes,
         "extra_names": [f"{prefix}.{k}" for k in ("bias", "scores", "weights") if f"{prefix}.{k}" in model.hook_names]}
    if decoder:
        d["extra_names"] += [f"{lp}.cross_attn.{k}" for k in ("scores", "weights")] + [enc_out]
        d.update(source_tokens=f["encoder.tokens"], source_labels=word_labels(f["encoder.tokens"], model.tokenizer),
                 encoder_out=enc_out)
    P = (_DecoderPath if decoder else PathSteps)(model, view, d, dims, stack=stack)
    P.rows = {k: (w, P.row_diffs(k, ("bias", "scores", "weights"))) for k, w in rows.items()}
    if decoder:
        if enc_out in P.tr:  # the encoder's output, every source token: the cross-attention's keys and values
            P.record("source", enc_out, float(np.abs(R.as_f64(P.tr[enc_out])[0] - f[enc_out]).max()))
    w = assemble(P, next(iter(rows.values())), notes, intro_key="path.intro_" + stack)
    if decoder:  # the cross-attention row's own values beside the self-attention row's
        w.values.update({f"cross_{k}": v for k, v in rows["cross_attn"].values.items()})
        w.meta.update(source_tokens=f["encoder.tokens"], source_labels=d["source_labels"], target=target,
                      attention="decoder")
    return w
