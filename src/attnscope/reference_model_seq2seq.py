"""An encoder–decoder model's forward pass (T5, mT5, BART) in float64 NumPy, from its weights: the
float64 twin of :meth:`Seq2SeqModel.trace`, keyed by the same trace names.

    >>> f = forward_seq2seq(model, "translate English to German: Hi.", "Hallo.", decoder_upto=0)
    >>> f["encoder.layers.0.attn.weights"].shape        # (H, S, S)
    >>> f["decoder.layers.0.cross_attn.weights"].shape  # (H, T, S): target rows, source columns

Encoder (``encoder.*``): token rows (BART: × √d with ``scale_embedding``, + the learned position
rows read at position + 2, then ``layernorm_embedding``; T5: the rows themselves), then per layer
``attn_in`` (T5: RMSNorm first, pre-norm), q, k, v, ``bias`` (T5: W[bucket(j − i), h] of the
bidirectional buckets, the same matrix in every layer; no 1/√d), scores, scaled, masked, weights,
z, merged, out, ``attn_resid``, ``ffn_in``, the feed-forward (T5 v1.1: gated), ``ffn_resid``,
``out`` (BART: post-LN), and T5's ``encoder.final_norm``. Decoder (``decoder.*``): the same
embedding on ``[decoder start] + target``, per layer causal ``self_attn`` (T5: causal buckets,
bidirectional=False), ``cross_attn`` (queries from the target, keys and values from the encoder's
output, no bias), the feed-forward and three residuals. Besides the trace names: ``*.embed.sum``
(before BART's LayerNorm), ``*.ffn.pre`` / ``gate_pre`` / ``up``, ``*.allowed`` (bool masks),
``{stack}.ids`` / ``tokens`` / ``positions`` and ``{stack}.buckets`` (T5's bucket steps of the
stack, :func:`attnscope.reference.t5_bucket_steps`, (n_q, n_k) each).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import reference as R
from .errors import InputError
from .i18n import error
from .recipe import CROSS_RECIPES, get_layer_recipe
from .reference_model import check_supported, embeddings, last_layer
from .reference_model_blocks import LayerRun, norm_of, run_layer

Array = np.ndarray


#: The decoder's layer (``config.norm``: "pre", T5; "post", BART): the stack's recipe with
#: cross-attention, and its residual, after self-attention — the torch layer's own recipes.
DECODER_RECIPES = CROSS_RECIPES


def encoder_output_name(model) -> str:
    """The trace name cross-attention reads its keys and values from."""
    c = model.config
    return "encoder.final_norm" if model.encoder.ln_f is not None else f"encoder.layers.{c.n_layers - 1}.out"


def forward_seq2seq(model, source: str, target: Optional[str] = None, *, encoder_upto: Optional[int] = None,
                    decoder_upto: Optional[int] = None) -> dict:
    """Every step of ``source`` through the encoder (layers 0 … ``encoder_upto``; None: all, and
    T5's final norm) and, with a ``target``, of ``[decoder start] + target`` through decoder
    layers 0 … ``decoder_upto`` (None: all) over the whole encoder's output, float64 from the
    weights. Raises InputError for an empty source, a layer out of range, or a model that is not
    an encoder–decoder model."""
    if getattr(model.config, "kind", "") != "seq2seq":
        raise error(InputError, "errors.core_ref_not_seq2seq", name=model.name, family=model.family)
    check_supported(model, seq2seq=True)
    if not isinstance(source, str) or not source.strip():
        raise error(InputError, "errors.core_ref_source")
    c = model.config
    if target is not None:
        encoder_upto = None  # cross-attention reads the encoder's output: every layer
    last = last_layer(encoder_upto, c.n_layers, "encoder layer", "the encoder has")
    import torch
    with torch.no_grad():
        src = model.source_batch(source)
        n = int(src.lengths[0])
        ids = src.input_ids[0, :n].cpu().numpy().astype(np.int64)
        f, x = run_stack(model, "encoder", ids, list(src.tokens[0]), last, encoder_upto is None)
        if target is None:
            return f
        dlast = last_layer(decoder_upto, c.n_decoder_layers, "decoder layer", "the decoder has")
        dids, _, dtoks = model.target_batch(target, 1)
        tids = dids[0].cpu().numpy().astype(np.int64)
        f.update(run_stack(model, "decoder", tids, [str(t) for t in dtoks[0]], dlast, decoder_upto is None, x)[0])
    return f


def run_stack(model, stack: str, ids: Array, tokens: list, last: int, whole: bool,
              source: Optional[Array] = None) -> tuple[dict, Array]:
    """The steps of ``stack`` ("encoder" or "decoder") on ``ids (n,)``: its embeddings, T5's bias
    buckets, layers 0 … ``last`` (the recipe ``config.norm`` names; the decoder's, causal, with
    cross-attention over the encoder's output ``source (S, d)``) and, when ``whole``, its final
    norm. Returns the steps and the stack's output ``(n, d)``."""
    n, c, decoder, modules = len(ids), model.config, stack == "decoder", getattr(model, stack)
    positions = np.arange(n, dtype=np.int64) + int(c.position_offset or 0)  # BART's rows are read at + 2
    f: dict = {f"{stack}.ids": ids, f"{stack}.tokens": tokens, f"{stack}.positions": positions}
    f.update(embeddings(model, ids, None, positions, stack))
    # T5's learned score bias (H, n, n), float64 from its scheme, and its bucket steps; BART has none
    bias = None
    if getattr(modules, "rel_bias", None) is not None:
        bias, f[f"{stack}.buckets"] = modules.rel_bias.bias_np(n, n)
    x = f[f"{stack}.embed.out"]
    recipe = DECODER_RECIPES[c.norm] if decoder else get_layer_recipe(c.norm)
    allowed = R.causal_mask(n, n) if decoder else np.ones((n, n), dtype=bool)
    for i in range(last + 1):
        run = LayerRun(model, i, modules.layers[i], f"{stack}.layers.{i}", allowed, bias=bias, context=source)
        f.update(run_layer(recipe, run, x))
        x = f[f"{stack}.layers.{i}.out"]
    if whole and modules.ln_f is not None:
        x = f[f"{stack}.final_norm"] = norm_of(x, modules.ln_f)
    return f, x
