"""DeBERTa-v2/v3's forward pass in float64 NumPy, from its weights (composed by
:func:`attnscope.reference_model.forward`).

What differs from BERT (transformers' ``DebertaV2Embeddings`` and ``DisentangledSelfAttention``):

* the embedding sums token, (absolute) position and segment rows of width E, projects E → d
  (``embed.projected``, only when E ≠ d) and *then* applies its LayerNorm (``embed.out``);
* the relative embeddings ``rel (2k, d)`` (``rel_embeddings``, with their LayerNorm where
  ``norm_rel_ebd`` says "layer_norm") are shared by every layer, projected per layer by W_K / W_Q
  (``share_att_key``) or by their own ``pos_key_proj`` / ``pos_query_proj`` into
  ``attn.pos_k`` / ``attn.pos_q (H, 2k, d_head)``;
* the scores have three terms (:func:`attnscope.reference.deberta_terms`): ``attn.scores_c2c`` =
  q_i·k_j, ``attn.scores_c2p`` = q_i·pos_k[clip(δ(i, j) + k)], ``attn.scores_p2c`` =
  k_j·pos_q[clip(−δ(j, i) + k)] with δ the log bucket of i − j, and one factor
  1/√(d_head · (1 + number of relative terms)) (transformers' ``scale_factor``). As the model's
  trace records them: ``attn.scores`` = c2c, ``attn.scaled`` = c2c · factor, ``attn.bias`` =
  (c2p + p2c) · factor, ``attn.masked`` = scaled + bias.

The rest of the layer is BERT's post-LN recipe, walked by
:func:`attnscope.reference_model_blocks.run_layer` with :func:`scores` in its attention block.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from . import reference as R
from .reference_model_blocks import attention, norm_of

Array = np.ndarray


def embeddings(model, ids, segments: Optional[Array], positions: Array) -> dict:
    """``embed.tokens``, ``embed.positions``, ``embed.segments`` (width E), ``embed.sum``,
    ``embed.projected`` (E → d, where E ≠ d), ``embed.out`` (the LayerNorm), each (L, ·) float64."""
    e = model.embed
    out: dict = {"embed.tokens": R.as_f64(e.token_embedding.weight[ids]), "embed.norm_last": True}  # (L, E)
    x = out["embed.tokens"].copy()
    if e.position_embedding is not None:
        out["embed.positions"] = R.as_f64(e.position_embedding.weight[positions])
        x = x + out["embed.positions"]
    if e.segment_embedding is not None:
        out["embed.segments"] = R.as_f64(e.segment_embedding.weight[segments])
        x = x + out["embed.segments"]
    out["embed.sum"] = x
    if e.proj is not None:
        x = out["embed.projected"] = R.linear(x, e.proj.weight, None)  # (L, d)
    out["embed.out"] = norm_of(x, e.norm)
    return out


def relative(model, n: int) -> dict:
    """The relative side of one text of ``n`` tokens: ``rel.raw (2k, d)`` (the table's rows),
    ``rel.table`` (after its LayerNorm, if any), ``rel.buckets`` (the bucket steps of
    :func:`attnscope.reference.deberta_bucket_steps` for r = i − j, (n, n) each); {} without
    relative attention."""
    c = model.config
    if not c.relative_attention:
        return {}
    raw = R.as_f64(model.rel_embeddings.weight)[: 2 * c.span]  # (2k, d)
    table = raw
    if model.rel_norm is not None:
        table = norm_of(raw, model.rel_norm)
    r = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n): i − j
    return {"rel.raw": raw, "rel.table": table,
            "rel.buckets": R.deberta_bucket_steps(r, c.position_buckets, c.max_relative_positions)}


def position_projections(model, i: int, table: Array) -> tuple[Optional[Array], Optional[Array]]:
    """``(pos_q, pos_k)`` of layer ``i``: the relative table projected per head, (H, 2k, d_head)
    each, None where the model has no such term (p2c needs pos_q, c2p pos_k)."""
    c, attn = model.config, model.layers[i].attn
    H, d = c.n_heads, attn.d_head
    W, b = attn.W_qkv.weight, attn.W_qkv.bias
    types = c.pos_att_type

    def proj(which: int, name: str) -> Array:
        if c.share_att_key:
            rows = slice(which * H * d, (which + 1) * H * d)
            return R.split_heads(R.linear(table, W[rows], b[rows]), H)
        lin = getattr(attn, name)
        return R.split_heads(R.linear(table, lin.weight, lin.bias), H)

    pos_q = proj(0, "pos_query_proj") if "p2c" in types else None
    pos_k = proj(1, "pos_key_proj") if "c2p" in types else None
    return pos_q, pos_k


def scores(model, i: int, f: dict, allowed: Array) -> Callable[..., dict]:
    """Layer ``i``'s scores as a step of its attention block (``attend(q, k, v, prefix) → dict``,
    :class:`~attnscope.reference_model_blocks.LayerRun`): c2c, c2p, p2c of every head on
    ``allowed (L, L)`` with DeBERTa's one factor; ``f`` holds :func:`relative`'s keys."""
    c = model.config
    types = tuple(c.pos_att_type) if c.relative_attention else ()
    factor = float(c.query_scale)

    def attend(q, k, v, prefix: str) -> dict:
        if not types:
            return attention(q, k, v, allowed, factor, prefix)
        pos_q, pos_k = position_projections(model, i, f["rel.table"])
        rel_pos = f["rel.buckets"]["bucket"]
        terms = [R.deberta_terms(q[h], k[h], None if pos_q is None else pos_q[h], None if pos_k is None else pos_k[h],
                                 rel_pos, c.span, types) for h in range(q.shape[0])]
        stack = {x_: np.stack([tm[x_] for tm in terms]) for x_ in ("c2c", "c2p", "p2c", "c2p_index", "p2c_index")}
        bias = (stack["c2p"] + stack["p2c"]) * factor  # (H, L, L)
        out = attention(q, k, v, allowed, factor, prefix, bias=bias)
        out.update({f"{prefix}.scores_c2c": stack["c2c"], f"{prefix}.c2p_index": stack["c2p_index"],
                    f"{prefix}.p2c_index": stack["p2c_index"]})
        if "c2p" in types:
            out[f"{prefix}.scores_c2p"], out[f"{prefix}.pos_k"] = stack["c2p"], pos_k
        if "p2c" in types:
            out[f"{prefix}.scores_p2c"], out[f"{prefix}.pos_q"] = stack["p2c"], pos_q
        return out

    return attend
