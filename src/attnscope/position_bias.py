"""Fixed score terms of position schemes in torch (ALiBi), and how they number positions; the
schemes register in :mod:`attnscope.positions`, their float64 twins live in
:mod:`attnscope.reference.positions`."""

from __future__ import annotations

import math

import torch

from .reference.positions import alibi_slopes as alibi_slopes_np

Tensor = torch.Tensor


def real_positions(keep: Tensor) -> Tensor:
    """``keep (B, S)`` bool, True = a real token → each key's position among the real tokens
    ``(B, S)`` int64 (padding: 0), as transformers' BLOOM numbers them for ALiBi."""
    keep = keep.to(torch.int64)
    return (keep.cumsum(-1) - 1) * keep  # (B, S)


def alibi_slopes(n_heads: int, dtype: torch.dtype = torch.float32, device=None) -> Tensor:
    """The slope of each head ``(H,)``: computed in float32 with transformers' operations
    (``_get_alibi_slopes``: a float32 base raised to integer powers), so that BLOOM's scores are
    its own; for ``dtype`` float64, the formula in float64 (:func:`attnscope.reference.alibi_slopes`)."""
    if dtype == torch.float64:
        return torch.from_numpy(alibi_slopes_np(n_heads)).to(device)
    p = 2 ** math.floor(math.log2(n_heads))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(p) - 3))), dtype=torch.float32, device=device)
    slopes = torch.pow(base, torch.arange(1, 1 + p, dtype=torch.int32, device=device))
    if p != n_heads:
        extra = torch.full((), 2 ** (-(2 ** -(math.log2(2 * p) - 3))), dtype=torch.float32, device=device)
        more = torch.arange(1, 1 + 2 * min(p, n_heads - p), 2, dtype=torch.int32, device=device)
        slopes = torch.cat([slopes, torch.pow(extra, more)])
    return slopes  # (H,)


def alibi_bias(n_heads: int, q_pos: Tensor, k_pos: Tensor, dtype: torch.dtype = torch.float32, device=None) -> Tensor:
    """ALiBi (Press et al. 2022) as BLOOM adds it: ``bias[b, h, i, j] = slope_h · k_pos[b, j]``,
    ``(1|B, H, L, S)`` from ``q_pos (1|B, L)`` and ``k_pos (1|B, S)`` (an expanded view over the
    queries). The paper's ``slope_h · (k − q)`` differs by ``slope_h · q`` in each row: the same
    weights after softmax, different scores; transformers adds the key's position, and so does
    attnscope (its masked scores are BLOOM's)."""
    fdt = torch.float64 if dtype == torch.float64 else torch.float32
    slopes = alibi_slopes(n_heads, fdt, k_pos.device)  # (H,)
    row = slopes[None, :, None, None] * k_pos[:, None, None, :].to(fdt)  # (1|B, H, 1, S)
    return row.to(dtype=dtype, device=device).expand(-1, -1, q_pos.shape[-1], -1)  # (1|B, H, L, S)
