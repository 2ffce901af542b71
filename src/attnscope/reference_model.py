"""A loaded model's forward pass in float64 NumPy, from its weights: the float64 twin of its trace.

Each layer runs its recipe (:mod:`attnscope.recipe`) step by step with the float64 step functions
of :mod:`.reference_model_blocks`, each formula from :mod:`attnscope.reference`, so that every
trace name gets a float64 value computed from the checkpoint's weights alone (no torch kernel, no
float32 intermediate). ``explain``'s whole path and its real-model rows take their numbers from
here and set the model's own float32 trace beside them.

    >>> f = forward(model, "我喜欢人工智能", upto=1)       # layers 0 and 1
    >>> f["layers.1.attn.weights"].shape                   # (H, L, L)
    >>> f["embed.out"].shape                               # (L, d)

Keys are the trace names without the batch axis — per-head steps ``(H, L, ·)`` (k, v, k_proj,
k_normed: ``(H_kv, L, d_head)``), the rest ``(L, ·)`` — plus what a worked calculation shows
between two of them:

=============================  ======================================================================
``embed.sum``                  token + segment + position rows, before the embedding LayerNorm
``layers.{i}.ffn.pre``         encoders: ``W_1 x + b_1``, before the activation
``layers.{i}.ffn.gate_pre``    decoders: ``W_gate x``, before the activation
``layers.{i}.ffn.up``          decoders: ``W_up x``
``layers.{i}.attn.allowed``    bool (L, L): True = the query may see the key
=============================  ======================================================================

and ``ids``, ``tokens``, ``positions`` (the position ids the embedding rows were looked up with),
``segments`` (or None). Layers run on the whole text (every key of a later row needs them).
DeBERTa's embedding and scores are in :mod:`.reference_model_deberta`; the encoder–decoder
families (T5, BART) run in :func:`.reference_model_seq2seq.forward_seq2seq`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import reference as R
from . import reference_model_deberta as RD  # DeBERTa's own embedding and scores
from .errors import InputError
from .i18n import error
from .positions import get_position, layer_mask_np
from .reference_model_blocks import LayerRun, activation, layer_recipe, norm_of, run_layer  # noqa: F401  (this module's names)
from .reference_model_blocks import linear_of as _lin
from .scorings import get_scoring
from .wording import phrase

Array = np.ndarray


def check_supported(model, seq2seq: bool = False) -> None:
    """InputError for a model this module cannot recompute (named, with what it can). An
    encoder–decoder model is covered by :func:`.reference_model_seq2seq.forward_seq2seq`
    (``seq2seq=True``), not by :func:`forward`, which reads one text."""
    kind = getattr(model.config, "kind", "")
    if kind == "seq2seq" and not seq2seq:
        raise error(InputError, "errors.core_ref_seq2seq", name=model.name, family=model.family)
    if get_scoring(model.config.scoring).learnable is not None:
        raise error(InputError, "errors.core_ref_scoring", name=model.name, scoring=repr(model.config.scoring))


# ----------------------------------------------------------------------------------------------
# embeddings
# ----------------------------------------------------------------------------------------------

def position_ids(model, input_ids) -> Array:
    """The position ids the model looks its position rows up with: (L,) int (RoBERTa: after the
    padding index; decoders: 0 … L − 1, the rotation's positions)."""
    n = int(input_ids.shape[-1])
    fn = getattr(model, "position_ids", None)
    ids = fn(input_ids[None] if input_ids.dim() == 1 else input_ids) if callable(fn) else None
    if ids is not None:
        return ids.reshape(-1)[:n].cpu().numpy().astype(np.int64)
    offset = int(getattr(getattr(model.embed, "config", model.config), "position_offset", 0) or 0)
    return np.arange(n, dtype=np.int64) + offset


def sinusoid_rows(positions, d: int) -> Array:
    """``PE[p, 2i] = sin(p / 10000^(2i/d))``, ``PE[p, 2i+1] = cos(p / 10000^(2i/d))`` for the given
    positions: (L, d) float64, each computed from the formula."""
    p = np.asarray(positions, dtype=np.float64)[:, None]  # (L, 1)
    inv = np.power(10000.0, -np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    pe = np.empty((p.shape[0], d))
    pe[:, 0::2] = np.sin(p * inv)
    pe[:, 1::2] = np.cos(p * inv)
    return pe


def position_kind(model) -> str:
    """How the embedding adds positions: "learned", "sinusoidal" (the formula; DistilBERT's
    ``sinusoidal_pos_embds`` checkpoints store that table as their weight), "rotary" or "none"."""
    c = model.config
    if c.position == "learned" and (c.extra or {}).get("sinusoidal_pos_embds"):
        return "sinusoidal"
    return c.position


def embeddings(model, ids: Array, segments: Optional[Array], positions: Array, stack: Optional[str] = None) -> dict:
    """The embedding steps of one text: ``embed.tokens`` (the rows of the ids), ``embed.segments``,
    ``embed.positions``, ``embed.sum``, ``embed.out`` (after the LayerNorm, or × Gemma's scale)
    and ``embed.projected`` (ALBERT, ELECTRA: E → d_model), each (L, ·) float64. ``stack``: an
    encoder–decoder model's ("encoder", "decoder"): its names are ``{stack}.embed.*`` and its token
    rows × ``embed_scale`` (BART's scale_embedding: √d) before the position rows are added."""
    e, p = (model.embed, "embed") if stack is None else (getattr(model, stack).embed, f"{stack}.embed")
    out = {f"{p}.tokens": R.as_f64(e.token_embedding.weight[ids])}  # (L, E)
    if getattr(model.config, "kind", "") == "decoder":
        scale = float(np.float32(model.config.embed_scale))  # the model multiplies by it in float32
        out["embed.sum"] = out["embed.tokens"]
        out["embed.out"] = out["embed.tokens"] * scale if scale != 1.0 else out["embed.tokens"]
        return out
    scale = model.config.embed_scale if stack is not None else 1.0
    x = out[f"{p}.tokens"] * scale if scale != 1.0 else out[f"{p}.tokens"].copy()
    if getattr(e, "segment_embedding", None) is not None:
        out["embed.segments"] = R.as_f64(e.segment_embedding.weight[segments])
        x = x + out["embed.segments"]
    if e.position_embedding is not None:
        d = x.shape[-1]
        if position_kind(model) == "sinusoidal" or not hasattr(e.position_embedding, "weight"):
            out[f"{p}.positions"] = sinusoid_rows(positions, d)
        else:
            out[f"{p}.positions"] = R.as_f64(e.position_embedding.weight[positions])
        x = x + out[f"{p}.positions"]
    out[f"{p}.sum"] = x
    out[f"{p}.out"] = norm_of(x, e.norm) if e.norm is not None else x
    if hasattr(e, "proj"):
        out["embed.projected"] = _lin(out["embed.out"], e.proj)
    return out


# ----------------------------------------------------------------------------------------------
# the whole pass
# ----------------------------------------------------------------------------------------------

def forward(model, text: str, upto: Optional[int] = None) -> dict:
    """Every step of ``text`` through layers 0 … ``upto`` (None: all, and the final norm), float64
    from the model's weights. Raises InputError for a model it does not cover
    (:func:`check_supported`), an empty text or a layer out of range."""
    check_supported(model)
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.core_ref_text")
    c = model.config
    last = last_layer(upto, c.n_layers)
    batch = model.encode(text)
    n = batch.lengths[0]
    input_ids = batch.input_ids[0, :n]
    ids = input_ids.cpu().numpy().astype(np.int64)
    decoder = getattr(c, "kind", "") == "decoder"
    deberta = getattr(c, "kind", "") == "deberta"
    segments = None if decoder or model.embed.segment_embedding is None else \
        batch.token_type_ids[0, :n].cpu().numpy().astype(np.int64)
    positions = np.arange(n, dtype=np.int64) if decoder else position_ids(model, input_ids)
    import torch
    with torch.no_grad():
        f = {"ids": ids, "tokens": list(batch.tokens[0]), "positions": positions, "segments": segments}
        if deberta:
            f.update(RD.embeddings(model, input_ids, segments, positions))
            f.update(RD.relative(model, n))
        else:
            f.update(embeddings(model, input_ids, segments, positions))
        x = layer_input(f, 0)
        allowed = R.causal_mask(n, n) if c.causal else np.ones((n, n), dtype=bool)
        # the position scheme acts where it says: a q/k transform (rotary) or a fixed score term
        # (ALiBi, keys at 0 … n − 1: (H, n, n)); embeddings were added above
        scheme = get_position(c.position)
        bias = None if scheme.bias_np is None else scheme.bias_np(c.n_heads, np.arange(n), np.arange(n))
        for i in range(last + 1):
            layer = model.layers[i]
            run = LayerRun(model, i, layer, f"layers.{i}", allowed, bias=bias,
                           positions=positions if scheme.acts_on == "qk" else None)
            if decoder:  # the layer type's mask scheme (causal, a window)
                run.allowed = layer_mask_np(c, i, n)
            elif deberta:
                run.attend = RD.scores(model, i, f, allowed)
            f.update(run_layer(layer_recipe(layer, c), run, x))
            x = f[f"layers.{i}.out"]
        if upto is None and getattr(model, "ln_f", None) is not None:
            f["final_norm"] = norm_of(x, model.ln_f)
    return f


def last_layer(upto: Optional[int], n: int, stack: str = "layer", has: str = "the model has") -> int:
    """The last layer to run: ``upto``, or n − 1 for None; InputError naming the range otherwise."""
    last = n - 1 if upto is None else int(upto)
    if not 0 <= last < n:
        raise error(InputError, "errors.core_ref_layer_range", stack=phrase("errors.core_ref_stack", stack), upto=upto,
                    has=phrase("errors.core_ref_has", has), n=n, last=n - 1)
    return last


def layer_input(f: dict, i: int) -> Array:
    """What enters layer ``i``: the embedding (projected where E ≠ d_model; DeBERTa projects
    before its LayerNorm, so there it is ``embed.out``) or layer i − 1's output."""
    if i == 0:
        return f["embed.out"] if f.get("embed.norm_last") else f.get("embed.projected", f["embed.out"])
    return f[f"layers.{i - 1}.out"]
