"""The key/value cache of generation: every layer's keys and values of the positions seen so far.

Used by the decoders of the Llama kind (:class:`~attnscope.modules.decoder_attention.DecoderAttention`)
and by the causal single stacks (GPT-2, BLOOM: :class:`~attnscope.modules.attention.MultiHeadAttention`
with ``cache=``), so that a generated token runs alone against what came before it.
"""

from __future__ import annotations

from typing import Optional

import torch

from ..errors import InputError, fmt_shape
from ..i18n import error

Tensor = torch.Tensor


class KVCache:
    """Keys and values of every layer for the positions seen so far, in buffers that grow by doubling.

    ``cache.update(layer, k_new, v_new)`` appends ``(B, H_kv, L, d)`` at position :attr:`length`
    and returns every key and value so far, ``(B, H_kv, length + L, d)`` views. After all layers
    have run, :meth:`advance` moves :attr:`length` on by L. Keys are stored rotated (each at its
    own position), so a new query attends them without recomputing anything.
    """

    def __init__(self, n_layers: int) -> None:
        self.k: list[Optional[Tensor]] = [None] * n_layers
        self.v: list[Optional[Tensor]] = [None] * n_layers
        self.length = 0

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        if not 0 <= layer < len(self.k):  # a cache made for a model with fewer layers
            raise error(InputError, "errors.kernel_cache_layers", n=len(self.k), layer=layer)
        end = self.length + k.shape[-2]
        buf = self.k[layer]
        held = None if buf is None or not self.length else (buf.shape[0], buf.shape[1], buf.shape[-1])
        if held is not None and held != (k.shape[0], k.shape[1], k.shape[-1]):  # another batch, or another model's keys
            raise error(InputError, "errors.kernel_cache_continued", layer=layer, n=self.length,
                        held=f"({held[0]}, {held[1]}, {self.length}, {held[2]})", got=fmt_shape(k.shape))
        if buf is not None and self.length and (buf.dtype, buf.device) != (k.dtype, k.device):
            # the new keys would be cast into the buffer silently, and attention then fail on mixed dtypes
            raise error(InputError, "errors.kernel_cache_dtype", layer=layer, held=f"{buf.dtype} on {buf.device}",
                        got=f"{k.dtype} on {k.device}")
        if buf is None or buf.shape[-2] < end or buf.shape[0] != k.shape[0]:
            size = max(end, 2 * (buf.shape[-2] if buf is not None else 0), 64)
            for store, t in ((self.k, k), (self.v, v)):
                new = t.new_empty((*t.shape[:-2], size, t.shape[-1]))  # (B, H_kv, size, d)
                old = store[layer]
                if old is not None and self.length:
                    new[..., :self.length, :] = old[..., :self.length, :]
                store[layer] = new
        kb, vb = self.k[layer], self.v[layer]
        assert kb is not None and vb is not None  # both made just above when missing
        kb[..., self.length:end, :] = k
        vb[..., self.length:end, :] = v
        return kb[..., :end, :], vb[..., :end, :]  # (B, H_kv, S, d)

    def advance(self, n: int) -> None:
        self.length += n


def cached_causal(mask: Optional[Tensor], causal: bool, L: int, S: int, device) -> tuple[Optional[Tensor], bool]:
    """``(mask, causal)`` for L new queries after ``S − L`` cached positions: with ``causal``, query i
    (at ``S − L + i``) sees keys ``0 … S − L + i`` — a bottom-right mask ``(1, 1, L, S)``, and'ed with
    a bool ``mask`` (−inf put in an additive one) — where SDPA's ``is_causal`` is top-left; unchanged
    when nothing is cached."""
    if not causal or S <= L:
        return mask, causal
    after = torch.ones(L, S, dtype=torch.bool, device=device).tril(S - L)[None, None]  # (1, 1, L, S)
    if mask is None or not mask.is_floating_point():
        return (after if mask is None else mask.to(torch.bool) & after), False
    return mask.masked_fill(~after, float("-inf")), False  # an additive mask stays additive
