"""The layers of an encoder–decoder Transformer (T5, BART): attention with an optional score bias,
over its own sequence or over the encoder's output, with a key/value cache; encoder and decoder blocks.

One decoder block (hook point names; pre-norm T5 / post-norm BART)::

    self_attn_in     = LN1(x)                       | x
    self_attn_resid  = x + SelfAttn(self_attn_in)   causal; T5 adds its relative bias
    cross_attn_in    = LN2(self_attn_resid)         | LN1(self_attn_resid)
    cross_attn_resid = resid + CrossAttn(cross_attn_in, encoder output)   queries: target, keys: source
    ffn_in           = LN3(cross_attn_resid)        | LN2(cross_attn_resid)
    ffn_resid        = resid + FFN(ffn_in)
    out              = ffn_resid                    | LN3(ffn_resid)

(resid: the residual stream, i.e. the sum before it in pre-norm, the normed sum in post-norm).
An encoder block is the encoder layer of every family (``attn_in``, ``attn_resid``, ``ffn_in``,
``ffn_resid``, ``out``). Attention steps have the names of every family (``q k v``, ``bias`` where
a relative bias is added, ``scores … weights z merged out``); in cross-attention q is (B, H, T, d)
from the target and k, v are (B, H, S, d) from the source, the weights (B, H, T, S).

**Cache.** While generating, each decoder self-attention appends its new keys and values to a
:class:`~attnscope.modules.decoder_attention.KVCache`; cross-attention computes the source's keys
and values once, at the first step, and reuses them (:class:`Seq2SeqCache`).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..recipe import CROSS_RECIPES
from .attention import MultiHeadAttention
from .decoder import GatedFeedForward
from .encoder import FeedForward
from .kv_cache import KVCache, cached_causal
from .layer import RecipeLayer
from .rmsnorm import RMSNorm

Tensor = torch.Tensor


class Seq2SeqCache(KVCache):
    """Everything a decoder reuses from earlier steps: the self-attention keys/values of every layer
    (the :class:`KVCache`, growing by one position per step; :attr:`length` target positions) and
    the cross-attention keys/values (``cross``, computed once)."""

    def __init__(self, n_layers: int) -> None:
        super().__init__(n_layers)
        self.cross: list[Optional[tuple[Tensor, Tensor]]] = [None] * n_layers


class Seq2SeqAttention(MultiHeadAttention):
    """Multi-head attention of T5 and BART: self-attention (``context=None``) or cross-attention over
    ``context``, an additive score ``bias`` (hook point ``bias`` when ``has_bias``), a cache.

    Args: those of :class:`MultiHeadAttention`, plus ``layer_index`` (its slot in a cache) and
    ``has_bias`` (T5's self-attention: its relative position bias is added to the scores).
    """

    def __init__(self, d_model: int, n_heads: int, *, layer_index: int = 0, has_bias: bool = False, **kw) -> None:
        super().__init__(d_model, n_heads, score_bias=has_bias, layer_index=layer_index, **kw)  # bias before the scores
        self.has_bias = has_bias

    # Takes a score bias, one mask and a cache where the base takes padding and attention masks.
    def forward(self, x: Tensor, context: Optional[Tensor] = None, *,  # type: ignore[override]
                bias: Optional[Tensor] = None, mask: Optional[Tensor] = None, causal: bool = False,
                cache: Optional[Seq2SeqCache] = None, need_weights: bool = False):
        """``x (B, L, d)`` → ``(B, L, d)`` (and the weights (B, H, L, S) with ``need_weights``).

        ``context (B, S, d)``: the encoder output (cross-attention); ``bias`` broadcastable to
        (B, H, L, S); ``mask`` bool broadcastable to (B, H, L, S), True = may attend; ``causal``:
        query i sees keys 0 … i, or 0 … past + i after ``past`` cached positions.
        """
        done = cache.cross[self.layer_index] if cache is not None and context is not None else None
        if done is not None:  # cross-attention: the source's keys and values, from the first step
            dq, W, b = self.n_heads * self.d_head, self.W_qkv.weight, self.W_qkv.bias
            q = self.split_heads(F.linear(x, W[:dq], None if b is None else b[:dq]))  # (B, H, L, d)
            k, v = done
        else:
            q, k, v = (self.split_heads(t) for t in self.project(x, context))  # (B, H, L|S, d) × 3
            if cache is not None and context is None:
                k, v = cache.update(self.layer_index, k, v)  # (B, H, S, d)
                mask, causal = cached_causal(mask, causal, x.shape[1], k.shape[-2], x.device)
            elif cache is not None:
                cache.cross[self.layer_index] = (k, v)
        if bias is not None and self.has_bias and self.bias.hooks:
            bias = self.bias(bias.expand(x.shape[0], -1, -1, -1))  # recorded per text, as every step
        return self.attend_heads(q, k, v, mask, causal=causal, bias=bias, need_weights=need_weights,
                                 hooks=self.active_hooks())  # (B, L, d)


def make_norm(config) -> nn.Module:
    """T5's RMS LayerNorm (no mean subtracted, no bias) or BART's LayerNorm."""
    if config.norm_kind == "rms":
        return RMSNorm(config.d_model, config.layer_norm_eps)
    return nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)


def make_ffn(config) -> nn.Module:
    """T5 v1.1's gated FFN (``W_1`` = [wi_0; wi_1]) or the two-matrix FFN of T5 v1.0 and BART."""
    return GatedFeedForward(config) if config.gated_ffn else FeedForward(config)


def make_attention(config, index: int, *, has_bias: bool = False) -> Seq2SeqAttention:
    c = config
    return Seq2SeqAttention(c.d_model, c.n_heads, head_dim=c.head_dim, bias=c.bias, scoring=c.scoring,
                            dropout=c.attn_dropout, layer_index=index, has_bias=has_bias)


class EncoderBlock(RecipeLayer):
    """One encoder layer of T5 (the recipe ``pre``, RMS norms) or BART (``post``, LayerNorm):
    ``block(x (B, S, d), *, bias=None, mask=None)`` → ``(B, S, d)``, the bias and mask going to
    self-attention."""

    def __init__(self, config, index: int) -> None:
        c = config
        super().__init__(c.norm, attn=make_attention(c, index, has_bias=c.score_bias), ffn=make_ffn(c),
                         norm=lambda: make_norm(c), dropout=c.dropout)


class DecoderBlock(RecipeLayer):
    """One decoder layer: causal self-attention, cross-attention over the source, FFN — the recipe
    :data:`attnscope.recipe.CROSS_RECIPES` [``config.norm``] (module docstring)."""

    def __init__(self, config, index: int) -> None:
        c = config
        super().__init__(CROSS_RECIPES[c.norm], attn=make_attention(c, index, has_bias=c.score_bias),
                         cross_attn=make_attention(c, index), ffn=make_ffn(c), norm=lambda: make_norm(c),
                         dropout=c.dropout)

    # Takes the encoder's output and the masks of both attentions where the base takes any keywords.
    def forward(self, x: Tensor, source: Tensor, *, bias: Optional[Tensor] = None,  # type: ignore[override]
                mask: Optional[Tensor] = None, causal: bool = True, source_mask: Optional[Tensor] = None,
                cache: Optional[Seq2SeqCache] = None, need_weights: bool = False):
        """``x (B, T, d)`` over ``source (B, S, d)`` → ``(B, T, d)``; with ``need_weights`` also the
        self- and cross-attention weights."""
        return super().forward(x, bias=bias, mask=mask, causal=causal, cache=cache, need_weights=need_weights,
                               cross={"context": source, "mask": source_mask, "cache": cache})
