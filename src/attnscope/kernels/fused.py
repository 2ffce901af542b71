"""PyTorch's fused kernels on prepared inputs: SDPA, and the CPU flash kernel for the lse.

Every scoring reaches here as ``q', k'`` and a scale (see :mod:`attnscope.kernels.qk`), so the
fused kernel serves them all.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .dense import combine_masks

Tensor = torch.Tensor


def sdpa_mask(mask: Optional[Tensor], bias: Optional[Tensor], L: int, S: int, *, causal: bool,
              dtype: torch.dtype, device: torch.device) -> tuple[Optional[Tensor], bool]:
    """``(attn_mask, is_causal)`` for SDPA. SDPA refuses ``is_causal`` together with a mask, and
    wants a float mask in q's dtype: fold and convert only then."""
    if bias is not None or (causal and mask is not None):
        return combine_masks(mask, L, S, causal=causal, dtype=dtype, device=device, bias=bias), False
    if mask is not None and mask.dtype != torch.bool and mask.dtype != dtype:
        mask = mask.to(dtype)
    return mask, causal


def sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], *, causal: bool, scale: Optional[float],
         dropout_p: float = 0.0, bias: Optional[Tensor] = None, groups: int = 1) -> Tensor:
    """``scaled_dot_product_attention(q, k, v)`` → ``(..., L, d_v)``; ``groups > 1``: k and v
    have H/groups heads (grouped-query attention, SDPA's ``enable_gqa``)."""
    attn_mask, is_causal = sdpa_mask(mask, bias, q.shape[-2], k.shape[-2], causal=causal, dtype=q.dtype,
                                      device=q.device)
    if groups > 1:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                              is_causal=is_causal, scale=scale, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                          is_causal=is_causal, scale=scale)


def flash_lse_ok(q: Tensor, k: Tensor, v: Optional[Tensor], grad: bool, dropout_p: float) -> bool:
    """Can ``aten._scaled_dot_product_flash_attention_for_cpu`` take these inputs? It wants CPU
    tensors of 4 dims, one head size for q, k, v, and non-empty lengths (it crashes on L = 0 or
    S = 0); its lse carries no gradient."""
    if grad or dropout_p > 0.0 or q.device.type != "cpu" or q.dim() != 4 or k.dim() != 4:
        return False
    if not hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
        return False
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if min(L, S, d) == 0 or (v is not None and v.shape[-1] != d):
        return False
    return q.shape[:-2] == k.shape[:-2] and (v is None or v.shape[:-2] == k.shape[:-2])


def no_key_visible(add: Tensor, causal: bool, L: int) -> Tensor:
    """``(…, L|1)`` True for a query that sees no key under the additive mask ``(…, L|1, S)``
    (and causality, top-left aligned)."""
    allowed = ~torch.isneginf(add)  # (…, L|1, S)
    if not causal:
        return ~allowed.any(dim=-1)
    S = add.shape[-1]
    if add.shape[-2] == 1:  # a key mask: query i sees a key iff one of keys 0..i is allowed
        seen = allowed.cummax(dim=-1).values  # (…, 1, S)
        return ~seen[..., 0, :].index_select(-1, torch.arange(L, device=add.device).clamp(max=S - 1))
    keep = torch.ones(L, S, dtype=torch.bool, device=add.device).tril()
    return ~(allowed & keep).any(dim=-1)


def flash_lse(q: Tensor, k: Tensor, v: Optional[Tensor], mask: Optional[Tensor], *, causal: bool,
              scale: float, bias: Optional[Tensor] = None) -> tuple[Optional[Tensor], Tensor]:
    """``out (B, H, L, d)`` (None without v) and ``lse (B, H, L)`` from the CPU flash kernel.

    A query that sees no key gets out 0 and lse −∞ (the kernel itself reports lse 0 there).
    lse is float32 for half inputs, as the blockwise kernel's.
    """
    L, S = q.shape[-2], k.shape[-2]
    add = combine_masks(mask, L, S, causal=False, dtype=q.dtype, device=q.device, bias=bias)
    if add is not None:
        add = add.expand(*q.shape[:-2], L, S) if add.dim() < 4 else add
        while add.dim() > 4:  # size-1 leading dims beyond (B, H, L, S)
            add = add.squeeze(0)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, k if v is None else v, 0.0, causal, attn_mask=add, scale=scale)
    if add is not None:
        dead = no_key_visible(add, causal, L)  # (B|1, H|1, L|1)
        if bool(dead.any()):
            lse = lse.masked_fill(dead, float("-inf"))
            out = out.masked_fill(dead[..., None], 0.0)
    if lse.dtype != torch.float32 and q.dtype in (torch.float16, torch.bfloat16):
        lse = lse.float()
    return (None if v is None else out), lse
