"""Transformer layers and stacks built from :class:`MultiHeadAttention`.

One layer, post-LN (BERT, the original Transformer)::

    attn_in    = x
    attn_resid = x + Dropout(Attn(x))
    ffn_in     = LN1(attn_resid)
    ffn_resid  = ffn_in + Dropout(FFN(ffn_in))
    out        = LN2(ffn_resid)

pre-LN (GPT-2)::

    attn_in    = LN1(x)
    attn_resid = x + Dropout(Attn(attn_in))
    ffn_in     = LN2(attn_resid)
    ffn_resid  = attn_resid + Dropout(FFN(ffn_in))
    out        = ffn_resid

Each name above is a hook point of the layer, so the names mean the same role in every family.
"""

from __future__ import annotations

from functools import partial
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..config import TransformerConfig
from ..errors import ShapeError, shape_or_type
from ..hooks import HookPoint
from ..i18n import error
from .attention import MultiHeadAttention
from .embeddings import Embeddings
from .kv_cache import KVCache
from .layer import RecipeLayer

Tensor = torch.Tensor


ACTIVATIONS = {"gelu": F.gelu, "gelu_tanh": partial(F.gelu, approximate="tanh"), "silu": F.silu}


def activation_fn(name: str):
    """The activation a config names (relu for any other name)."""
    return ACTIVATIONS.get(name, F.relu)


class FeedForward(nn.Module):
    """``W_2 · act(W_1 · x + b_1) + b_2``; hook points ``hidden`` (B, L, d_ff) and ``out`` (B, L, d_model)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.W_1 = nn.Linear(config.d_model, config.d_ff, bias=config.bias)
        self.W_2 = nn.Linear(config.d_ff, config.d_model, bias=config.bias)
        self.act = activation_fn(config.activation)
        self.hidden, self.out = HookPoint(), HookPoint()

    def forward(self, x: Tensor) -> Tensor:
        h = self.hidden(self.act(self.W_1(x)))  # (B, L, d_ff)
        return self.out(self.W_2(h))  # (B, L, d_model)


class EncoderLayer(RecipeLayer):
    """Attention + FFN with residuals and LayerNorm, in the order of the layer recipe ``config.norm``
    names (``post``: BERT, ``pre``: GPT-2; see the module docstring and :mod:`attnscope.recipe`).

    ``forward(x (B, L, d_model), *, key_padding_mask=None, attn_mask=None, causal=False)`` →
    ``(B, L, d_model)``; the masks go to :meth:`MultiHeadAttention.forward`. ``index``: the layer's
    place in the stack (its slot in a key/value cache).
    """

    # the modules the recipe registers by name (ln1/ln2 where the recipe has them), for a type checker
    attn: MultiHeadAttention
    ffn: FeedForward
    ln1: nn.LayerNorm
    ln2: nn.LayerNorm

    def __init__(self, config: TransformerConfig, index: int = 0) -> None:
        c = config
        attn = MultiHeadAttention(c.d_model, c.n_heads, n_kv_heads=c.n_kv_heads, head_dim=c.head_dim,
                                  bias=c.bias, scoring=c.scoring, dropout=c.attn_dropout, position=c.position,
                                  layer_index=index)
        super().__init__(c.norm, attn=attn, ffn=FeedForward(c), dropout=c.dropout,
                         norm=lambda: nn.LayerNorm(c.d_model, eps=c.layer_norm_eps))


class Encoder(nn.Module):
    """A stack of ``n_layers`` :class:`EncoderLayer` s (and the final LayerNorm of pre-LN stacks).

    ``causal=True`` in the config (or per call) makes it a decoder-only stack; with ``cache`` (a
    :class:`~attnscope.modules.kv_cache.KVCache`) x follows the cached positions (generation),
    and with ``need_weights`` every layer's weights ``(B, H, L, S)`` come back too: ``(x, weights)``.
    Hook point ``final_norm`` holds the output after the final LayerNorm, when there is one.
    """

    def __init__(self, config: TransformerConfig, *, embeddings: bool = False) -> None:
        super().__init__()
        self.config = config
        if embeddings:  # registered first, so that named_modules() lists names in forward order
            self.embed = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config, i) for i in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.final_norm else None
        if config.final_norm:  # its hook point only where there is a final norm: the trace names are the hook points
            self.final_norm = HookPoint()

    def forward(self, x: Tensor, *, key_padding_mask: Optional[Tensor] = None,
                attn_mask: Optional[Tensor] = None, causal: Optional[bool] = None,
                cache: Optional[KVCache] = None, need_weights: bool = False):
        causal = self.config.causal if causal is None else causal
        more = {} if cache is None else {"cache": cache}  # a keyword only when used: DeBERTa's attention takes none
        weights = []
        for layer in self.layers:
            x = layer(x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, causal=causal,
                      need_weights=need_weights, **more)  # (B, L, d), or with the weights (B, H, L, S)
            if need_weights:
                x, w = x
                weights.append(w)
        if cache is not None:
            cache.advance(x.shape[1])
        if self.ln_f is not None:
            x = self.final_norm(self.ln_f(x))
        return (x, weights) if need_weights else x


class TransformerEncoder(Encoder):
    """Embeddings + the layer stack: token ids ``(B, L)`` → hidden states ``(B, L, d_model)``.

    Hook point names are the module paths: ``embed.tokens``, ``embed.positions``, ``embed.out``,
    ``layers.{i}.attn.weights``, ``layers.{i}.out``, ``final_norm`` (see
    :func:`attnscope.hooks.name_hook_points`).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config, embeddings=True)

    # Not a drop-in Encoder: the stack takes token ids where its base takes hidden states.
    def forward(self, input_ids: Tensor, *, attention_mask: Optional[Tensor] = None,  # type: ignore[override]
                token_type_ids: Optional[Tensor] = None, causal: Optional[bool] = None) -> Tensor:
        """``attention_mask (B, L)``: 1/True = real token, 0/False = padding (Hugging Face's meaning)."""
        x = self.embed(input_ids, token_type_ids)  # (B, L, d)
        if attention_mask is not None and (not isinstance(attention_mask, Tensor) or attention_mask.shape != input_ids.shape):
            raise error(ShapeError, "errors.kernel_attention_mask_shape", B=input_ids.shape[0], L=input_ids.shape[1],
                        got=shape_or_type(attention_mask))
        kpm = None if attention_mask is None else ~attention_mask.bool()  # (B, L), True = padding
        return super().forward(x, key_padding_mask=kpm, causal=causal)  # (B, L, d)
