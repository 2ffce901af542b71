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

from ..hooks import HookPoint
from ..kernels.steps import STEPS, ModuleHooks, attend
from .attention import MultiHeadAttention
from .decoder import GatedFeedForward
from .decoder_attention import KVCache
from .encoder import FeedForward
from .rmsnorm import RMSNorm

Tensor = torch.Tensor


class Seq2SeqCache:
    """Everything a decoder reuses from earlier steps: the self-attention keys/values of every layer
    (growing by one position per step) and the cross-attention keys/values (computed once)."""

    def __init__(self, n_layers: int) -> None:
        self.self_attn = KVCache(n_layers)
        self.cross: list[Optional[tuple[Tensor, Tensor]]] = [None] * n_layers

    @property
    def length(self) -> int:
        """Target positions seen so far."""
        return self.self_attn.length


class Seq2SeqAttention(MultiHeadAttention):
    """Multi-head attention of T5 and BART: self-attention (``context=None``) or cross-attention over
    ``context``, an additive score ``bias`` (hook point ``bias`` when ``has_bias``), a cache.

    Args: those of :class:`MultiHeadAttention`, plus ``layer_index`` (its slot in a cache) and
    ``has_bias`` (T5's self-attention: its relative position bias is added to the scores).
    """

    bias: HookPoint  # made in __init__ when has_bias

    def __init__(self, d_model: int, n_heads: int, *, layer_index: int = 0, has_bias: bool = False, **kw) -> None:
        super().__init__(d_model, n_heads, **kw)
        self.layer_index = layer_index
        self.has_bias = has_bias
        if has_bias:  # the hook points again, in forward order, with bias before the scores
            for name in (*STEPS[:3], "bias", *STEPS[3:], "merged", "out"):
                self._modules.pop(name, None)
                setattr(self, name, HookPoint())

    # Takes a score bias, one mask and a cache where the base takes padding and attention masks.
    def forward(self, x: Tensor, context: Optional[Tensor] = None, *,  # type: ignore[override]
                bias: Optional[Tensor] = None, mask: Optional[Tensor] = None, causal: bool = False,
                cache: Optional[Seq2SeqCache] = None, need_weights: bool = False):
        """``x (B, L, d)`` → ``(B, L, d)`` (and the weights (B, H, L, S) with ``need_weights``).

        ``context (B, S, d)``: the encoder output (cross-attention); ``bias`` broadcastable to
        (B, H, L, S); ``mask`` bool broadcastable to (B, H, L, S), True = may attend; ``causal``:
        top-left causality when ``mask`` is None.
        """
        dq = self.n_heads * self.d_head
        if context is None:
            q, k, v = self.project(x)
            q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)  # (B, H, L, d) × 3
            if cache is not None:
                k, v = cache.self_attn.update(self.layer_index, k, v)  # (B, H, S, d)
        else:
            done = cache.cross[self.layer_index] if cache is not None else None
            if done is not None:  # the source's keys and values, from the first step
                W, b = self.W_qkv.weight, self.W_qkv.bias
                q = self.split_heads(F.linear(x, W[:dq], None if b is None else b[:dq]))  # (B, H, L, d)
                k, v = done
            else:
                q, k, v = self.project(x, context)
                q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)  # (B, H, L|S, d)
                if cache is not None:
                    cache.cross[self.layer_index] = (k, v)
        if bias is not None and self.has_bias and self.bias.hooks:
            bias = self.bias(bias.expand(x.shape[0], -1, -1, -1))  # recorded per text, as every step
        hooked = any(getattr(self, s).hooks for s in STEPS)
        z, weights = attend(q, k, v, mask, causal=causal, scoring=self.scoring, scale=self.scale, bias=bias,
                            dropout_p=self.dropout if self.training else 0.0, need_weights=need_weights,
                            hooks=ModuleHooks(self) if hooked else None, check_finite=self.check_finite)  # (B, H, L, d)
        merged = self.merged(self.merge_heads(z))  # (B, L, H·d)
        out = self.out(self.W_O(merged))  # (B, L, d)
        return (out, weights) if need_weights else out


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


class EncoderBlock(nn.Module):
    """One encoder layer of T5 (pre-norm, RMS) or BART (post-norm, LayerNorm)."""

    def __init__(self, config, index: int) -> None:
        super().__init__()
        self.pre = config.norm == "pre"
        self.attn_in = HookPoint()
        self.ln1 = make_norm(config)
        self.attn = make_attention(config, index, has_bias=config.score_bias)
        self.attn_resid = HookPoint()
        self.ln2 = make_norm(config)
        self.ffn_in = HookPoint()
        self.ffn = make_ffn(config)
        self.ffn_resid, self.out = HookPoint(), HookPoint()
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, *, bias: Optional[Tensor] = None, mask: Optional[Tensor] = None) -> Tensor:
        a = self.attn(self.attn_in(self.ln1(x) if self.pre else x), bias=bias, mask=mask)  # (B, S, d)
        r = self.attn_resid(x + self.drop(a))  # (B, S, d)
        f_in = self.ffn_in(self.ln2(r) if self.pre else self.ln1(r))  # (B, S, d)
        s = self.ffn_resid((r if self.pre else f_in) + self.drop(self.ffn(f_in)))  # (B, S, d)
        return self.out(s if self.pre else self.ln2(s))  # (B, S, d)


class DecoderBlock(nn.Module):
    """One decoder layer: causal self-attention, cross-attention over the source, FFN (module docstring)."""

    def __init__(self, config, index: int) -> None:
        super().__init__()
        self.pre = config.norm == "pre"
        self.self_attn_in = HookPoint()
        self.ln1 = make_norm(config)
        self.self_attn = make_attention(config, index, has_bias=config.score_bias)
        self.self_attn_resid = HookPoint()
        self.ln2 = make_norm(config)
        self.cross_attn_in = HookPoint()
        self.cross_attn = make_attention(config, index)
        self.cross_attn_resid = HookPoint()
        self.ln3 = make_norm(config)
        self.ffn_in = HookPoint()
        self.ffn = make_ffn(config)
        self.ffn_resid, self.out = HookPoint(), HookPoint()
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, source: Tensor, *, bias: Optional[Tensor] = None, mask: Optional[Tensor] = None,
                causal: bool = True, source_mask: Optional[Tensor] = None, cache: Optional[Seq2SeqCache] = None,
                need_weights: bool = False):
        """``x (B, T, d)`` over ``source (B, S, d)`` → ``(B, T, d)``; with ``need_weights`` also the
        self- and cross-attention weights."""
        pre = self.pre
        a = self.self_attn(self.self_attn_in(self.ln1(x) if pre else x), bias=bias, mask=mask, causal=causal,
                           cache=cache, need_weights=need_weights)
        a, w_self = a if need_weights else (a, None)
        r = self.self_attn_resid(x + self.drop(a))  # (B, T, d)
        c_in = self.cross_attn_in(self.ln2(r) if pre else self.ln1(r))  # (B, T, d)
        c = self.cross_attn(c_in, source, mask=source_mask, cache=cache, need_weights=need_weights)
        c, w_cross = c if need_weights else (c, None)
        r2 = self.cross_attn_resid((r if pre else c_in) + self.drop(c))  # (B, T, d)
        f_in = self.ffn_in(self.ln3(r2) if pre else self.ln2(r2))  # (B, T, d)
        s = self.ffn_resid((r2 if pre else f_in) + self.drop(self.ffn(f_in)))  # (B, T, d)
        out = self.out(s if pre else self.ln3(s))  # (B, T, d)
        return (out, w_self, w_cross) if need_weights else out
