"""RMSNorm (Zhang & Sennrich 2019), the norm of Llama, Qwen2, Mistral and Gemma.

``y = x / √(mean(x²) + ε) · (offset + w)`` over the last axis, computed in float32 for float32
and narrower inputs (as transformers does), in float64 for float64 ones (transformers' own
``.double()`` models still normalise in float32), then cast back. Llama's weight multiplies after the cast
(``w · y.to(dtype)``); Gemma's ``(1 + w)`` multiplies before it (``offset = 1``), and so does OLMo 2's
``w`` (``weight_first``) — the same numbers in float32, different roundings in half precision, each
as its family defines it.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import ShapeError, fmt_shape
from ..i18n import error

Tensor = torch.Tensor


class RMSNorm(nn.Module):
    """``(…, d)`` → ``(…, d)``; ``offset`` 0 (Llama: ``w · x̂``) or 1 (Gemma: ``(1 + w) · x̂``);
    ``weight_first``: the weight multiplies before the cast back to the input's dtype (OLMo 2; always
    with an offset)."""

    def __init__(self, d: int, eps: float = 1e-6, *, offset: float = 0.0, weight_first: bool = False) -> None:
        super().__init__()
        self.eps, self.offset = float(eps), float(offset)
        self.weight_first = bool(weight_first or offset)
        self.weight = nn.Parameter(torch.full((d,), 1.0 - offset))  # the identity scale either way

    def forward(self, x: Tensor) -> Tensor:
        d = self.weight.shape[0]
        if x.dim() == 0 or x.shape[-1] != d:
            raise error(ShapeError, "errors.kernel_norm_input", d=d, shape=fmt_shape(x.shape))
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)  # (…, d)
        if self.weight_first:
            return (h * (self.offset + self.weight.to(h.dtype))).type_as(x)
        return self.weight * h.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.eps}" + (f", offset={self.offset:g}" if self.offset else "")
