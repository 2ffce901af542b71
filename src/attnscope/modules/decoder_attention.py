"""Causal self-attention of today's decoders: rotary q/k, optional QK-norm, grouped-query heads,
sliding windows and a key/value cache, on the one step function.

One layer's attention, with the hook point of each step (names relative to the module)::

    q_proj, k_proj = split(x W_Q), split(x W_K)     (B, H, L, d) and (B, H_kv, L, d)
    q_normed, k_normed = RMSNorm(q_proj), …         QK-norm: per head over d (Gemma 3, Qwen3), or
                                                    over all heads' features, then split (OLMo 2)
    q, k = rotate(·, positions)                     rotary; k joins the cache: (B, H_kv, S, d)
    v                                               (B, H_kv, S, d)
    mask                                            bool (B|1, 1, L, S): causal ∧ window ∧ real keys (∨ a padded query itself)
    scores … weights, z, merged, out                as in every family (kernels.steps.attend)

``q`` and ``k`` are the operands of the dot product in every family (``scores = q @ kᵀ``, so
``trace.weights`` and the viewer recompute weights from them); the names before them say what
each earlier step is. The mask exists as a tensor only when something asks for it (a trace or a
hook of ``mask``); otherwise the fused kernel runs with ``is_causal`` or the window mask alone.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch

from ..config import QK_NORM_SPANS
from ..errors import ConfigError
from ..hooks import HookPoint, Recorder
from ..i18n import error
from ..kernels.derived import shared
from ..kernels.steps import STEPS
from ..positions import Rotary
from .attention import MultiHeadAttention, SharedHeadPoint, check_input
from .kv_cache import KVCache, cached_causal
from .rmsnorm import RMSNorm

Tensor = torch.Tensor


class DecoderAttention(MultiHeadAttention):
    """Causal self-attention with rotary positions, grouped-query heads and (optionally) QK-norm.

    Args are those of :class:`MultiHeadAttention`, plus ``qk_norm_eps`` (None: no QK-norm; else
    RMSNorm of q and k with this ε), ``qk_norm_span`` ("head": each head's q and k over its d_head
    features, Gemma 3 and Qwen3; "all": all H·d_head query features and all H_kv·d_head key features
    before the head split, OLMo 2), ``norm_offset`` (Gemma's 1 + w) and ``norm_weight_first``
    (:class:`RMSNorm`'s rounding in half precision, OLMo 2's).
    ``forward(x, cos, sin, mask=…, causal=…, cache=…)`` takes the tables of x's positions that the
    position scheme's q/k transform made, and turns q and k with its ``rotate`` (the stack sets it).
    """

    # rotary's turn, unless the stack's position scheme gives another
    rotate: Callable[[Tensor, Tensor, Tensor], Tensor] = staticmethod(Rotary.rotate)

    # The hook points of this kind besides the base's, made by name in __init__.
    q_proj: HookPoint
    k_proj: HookPoint
    q_normed: HookPoint
    k_normed: HookPoint
    mask: HookPoint

    def __init__(self, d_model: int, n_heads: int, *, layer_index: int = 0, qk_norm_eps: Optional[float] = None,
                 qk_norm_span: str = "head", norm_offset: float = 0.0, norm_weight_first: bool = False,
                 **kw) -> None:
        super().__init__(d_model, n_heads, layer_index=layer_index, **kw)
        if qk_norm_span not in QK_NORM_SPANS:
            raise error(ConfigError, "errors.core_unknown_choice", name="qk_norm_span", value=repr(qk_norm_span),
                        choices=", ".join(QK_NORM_SPANS))
        self.qk_norm_span = qk_norm_span
        # "head": one scale of d_head shared by every head; "all": a scale per feature of all heads
        wq, wk = (self.d_head, self.d_head) if qk_norm_span == "head" else \
            (self.n_heads * self.d_head, self.n_kv_heads * self.d_head)
        self.q_norm, self.k_norm = None, None
        if qk_norm_eps is not None:
            self.q_norm = RMSNorm(wq, qk_norm_eps, offset=norm_offset, weight_first=norm_weight_first)
            self.k_norm = RMSNorm(wk, qk_norm_eps, offset=norm_offset, weight_first=norm_weight_first)
        # the hook points again, in forward order (named_modules lists them in registration order)
        points = ["q_proj", "k_proj"] + (["q_normed", "k_normed"] if self.q_norm is not None else [])
        for name in (*points, *STEPS[:3], "mask", *STEPS[3:], "merged", "out"):
            self._modules.pop(name, None)
            shared = name in ("k_proj", "k_normed", "k", "v")
            setattr(self, name, SharedHeadPoint(self.group, n_heads) if shared else HookPoint())

    # Takes the rotary tables and a cache where the base takes a context and padding masks.
    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, *, mask: Optional[Tensor] = None,  # type: ignore[override]
                causal: bool = True, cache: Optional[KVCache] = None, need_weights: bool = False):
        """``x (B, L, d_model)`` at the positions of ``cos, sin (B|1, 1, L, d_head)`` → ``(B, L, d_model)``.

        ``mask``: bool, broadcastable to (B, 1, L, S), True = may attend (it carries causality and
        the window when given); ``causal``: query i, at position ``past + i``, sees keys
        ``0 … past + i`` (SDPA's ``is_causal`` when nothing is cached).
        With ``cache``, the new keys and values are appended and attention runs over all S.
        Returns ``out`` or ``(out, weights (B, H, L, S))`` with ``need_weights``.
        """
        check_input("x", x, self.d_model)
        B, L, _ = x.shape
        q, k, v = self.project(x)
        q = self.q_proj(self.split_heads(q))  # (B, H, L, d)
        k = self.k_proj(self.split_heads(k, self.n_kv_heads))  # (B, H_kv, L, d)
        v = self.split_heads(v, self.n_kv_heads)  # (B, H_kv, L, d)
        if self.q_norm is not None and self.k_norm is not None:  # both or neither (__init__)
            if self.qk_norm_span == "head":
                q = self.q_normed(self.q_norm(q))  # (B, H, L, d)
                k = self.k_normed(self.k_norm(k))  # (B, H_kv, L, d)
            else:  # over every head's features at once, then split again (OLMo 2)
                q = self.q_normed(self.split_heads(self.q_norm(self.merge_heads(q))))  # (B, H, L, d)
                k = self.k_normed(self.split_heads(self.k_norm(self.merge_heads(k)), self.n_kv_heads))  # (B, H_kv, L, d)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)  # (B, H, L, d), (B, H_kv, L, d)
        if cache is not None:
            k, v = cache.update(self.layer_index, k, v)  # (B, H_kv, S, d)
            mask, causal = cached_causal(mask, causal, L, k.shape[-2], x.device)
        if self.mask.hooks:  # the mask as a tensor: recorded, or replaced by a hook
            S = k.shape[-2]
            if all(isinstance(h.fn, Recorder) for h in self.mask.hooks):  # read only: one for the pass's layers
                made = shared(("full_mask", id(mask), causal, B, L, S, str(x.device)), mask,
                              lambda: full_mask(mask, causal, B, L, S, x.device))
            else:  # a hook may change it in place: this layer's own
                made = full_mask(mask, causal, B, L, S, x.device)
            mask, causal = self.mask(made), False  # (B|1, 1, L, S)
        return self.attend_heads(q, k, v, mask, causal=causal, need_weights=need_weights,
                                 hooks=self.active_hooks())  # (B, L, d_model)


def full_mask(mask: Optional[Tensor], causal: bool, B: int, L: int, S: int, device) -> Tensor:
    """The bool mask ``(B|1, 1, L, S)`` that ``mask`` and ``causal`` (top-left, as SDPA) stand for."""
    allowed = torch.ones(L, S, dtype=torch.bool, device=device)
    if causal:
        allowed = allowed.tril()
    allowed = allowed[None, None]  # (1, 1, L, S)
    if mask is not None:
        allowed = allowed & mask.to(torch.bool)
    return allowed
