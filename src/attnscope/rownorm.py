"""Row normalisations of q and k over their last dim, written for speed: the preparations of the
cosine and qknorm scorings (:mod:`attnscope.scorings`), which every fused call runs before SDPA.

At L = 512 the two preparations are a tenth of the attention itself, so their cost is the cost
of the scoring. ``F.normalize`` makes four passes over its input (norm, expand, clamp, divide) and
its autograd backward about ten; :func:`unit_rows` makes two (the norm, one division: the same
bits as ``F.normalize``) and its backward three. ``F.layer_norm`` without an affine weight takes a slower CPU path than with one
(measured 1.7× at 512 × 64 rows on one thread), so :func:`layer_norm_rows` passes a weight of ones,
which changes no value (multiplying by 1 is exact).

Both follow their input's device and dtype and give what the textbook forms give: ``x / max(‖x‖, ε)``
(as ``F.normalize``) and ``(x − mean) / √(var + ε)`` (as ``F.layer_norm``), to float rounding.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def _clamped_norm(x: Tensor, eps: float) -> Tensor:
    """``max(‖x‖₂, ε)`` per row, ``(..., 1)``."""
    return torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min_(eps)


def _inverse_norm(x: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(1 / max(‖x‖, ε), ‖x‖ ≥ ε)`` per row, each ``(..., 1)`` (differentiable in x)."""
    n = torch.linalg.vector_norm(x, dim=-1, keepdim=True)  # (..., 1)
    return n.clamp_min(eps).reciprocal(), n >= eps


class _UnitRows(torch.autograd.Function):
    """``y = x · r`` with ``r = 1 / max(‖x‖, ε)`` per row; backward ``r · (g − y (g·y))`` where the
    norm was kept (a row clamped at ε has a constant denominator: ``r · g``)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, eps: float) -> Tensor:
        return x / _clamped_norm(x, eps)  # (..., n, d)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Tensor) -> None:
        x, eps = inputs
        ctx.eps = eps
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None]:
        x, y = ctx.saved_tensors
        r, kept = _inverse_norm(x, ctx.eps)
        if torch.is_grad_enabled():
            # create_graph: the same formula, every factor recomputed from x by differentiable
            # ops, so that a second derivative is right.
            y = x * r
            dot = torch.linalg.vecdot(g, y).unsqueeze(-1) * kept
            return (g - y * dot) * r, None
        dot = torch.linalg.vecdot(g, y).unsqueeze(-1).mul_(kept).mul_(r)  # (..., 1)
        return torch.addcmul(g * r, y, dot, value=-1), None  # (..., n, d)


def unit_rows(x: Tensor, eps: float) -> Tensor:
    """``x / max(‖x‖₂, ε)`` over the last dim (``F.normalize(x, dim=-1, eps=eps)``), ``(..., d)``."""
    if torch.is_grad_enabled() and x.requires_grad:
        return _UnitRows.apply(x, eps)
    return x / _clamped_norm(x, eps)  # (..., n, d): a division, as F.normalize, for the same bits


def layer_norm_rows(x: Tensor, eps: float) -> Tensor:
    """``(x − mean) / √(var + ε)`` over the last dim, no affine (``F.layer_norm(x, (d,))``), ``(..., d)``."""
    d = x.shape[-1]
    ones = torch.ones(d, dtype=x.dtype, device=x.device)  # (d,): the faster affine kernel, same values
    return F.layer_norm(x, (d,), ones, None, eps)
