"""q and k as a scoring prepares them, and the factor on their product: defined once, used by
every kernel (fused, blockwise, explicit, ring).

Every registered scoring is dot-product attention on prepared inputs, so after
:func:`prepare` the kernels only see ``q', k'`` and a ``factor``: a number (SDPA's ``scale=``)
or a tensor broadcastable to the scores — folded into q' when it is constant over keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import nn

from ..errors import ShapeError, fmt_shape
from ..i18n import error
from ..scorings import DEFAULT_EPS, get_scoring
from .validate import broadcast_shapes

Tensor = torch.Tensor


@dataclass
class Prepared:
    """``q (..., L, d_k)``, ``k (..., S, d_k)`` ready for ``q @ kᵀ``, and ``factor``.

    ``factor`` is a float, or a tensor with at least 2 dims broadcastable to ``(..., L, S)``;
    ``per_key`` says it varies over keys (its last dim is not 1), which SDPA cannot take.
    """

    q: Tensor
    k: Tensor
    factor: Union[float, Tensor]
    per_key: bool = False


def as_2d(t: Tensor) -> Tensor:
    """A tensor broadcastable to (..., L, S) with at least those two dims."""
    return t.reshape((1,) * (2 - t.dim()) + tuple(t.shape)) if t.dim() < 2 else t


def prepare(q: Tensor, k: Tensor, scoring, *, scale: Optional[float] = None,
            temperature: Union[None, float, Tensor] = None, params: Optional[nn.Module] = None,
            eps: float = DEFAULT_EPS) -> Prepared:
    """Apply ``scoring``'s preparation to q and k and compute its factor.

    Args:
        q, k: ``(..., L, d_k)``, ``(..., S, d_k)``.
        scoring: a registered name or :class:`~attnscope.scorings.Scoring`.
        scale: overrides the factor of every scoring.
        temperature: τ of scorings that use one (float or tensor broadcastable to the scores).
        params: the module holding the scoring's learnable parts (its LayerNorms replace the
            functional preparation, its logit scale gives τ).
    """
    sc = get_scoring(scoring)
    learn = sc.learnable if params is not None else None
    if learn is not None and params is not None and learn.prepare is not None:  # learn implies params
        q, k = learn.prepare(params, q, k)
    else:
        q, k = sc.prepare_qk(q, k, eps)
    if scale is not None:
        return Prepared(q, k, scale)
    if learn is not None and params is not None and learn.temperature is not None:
        temperature = learn.temperature(params)
    factor = sc.factor_for(q.shape[-1], temperature)
    if isinstance(factor, Tensor):
        factor = as_2d(factor.to(device=q.device, dtype=q.dtype if q.is_floating_point() else factor.dtype))
        return Prepared(q, k, factor, per_key=factor.shape[-1] != 1)
    return Prepared(q, k, float(factor))


def check_factor(factor, lead, L: int, S: int) -> None:
    """A tensor factor (from a tensor temperature) must broadcast to the scores' shape."""
    if not isinstance(factor, Tensor):
        return
    target = (*lead, L, S)
    out = broadcast_shapes(factor.shape, target)
    if out is None or tuple(out[-2:]) != (L, S) or len(out) > len(target) and any(n != 1 for n in out[:-len(target)]):
        raise error(ShapeError, "errors.kernel_temperature_broadcast", shape=fmt_shape(factor.shape), L=L, S=S)


def fold_factor(p: Prepared) -> tuple[Tensor, float]:
    """``(q', scale)`` for SDPA: a float factor stays a ``scale=``; a tensor constant over keys
    is multiplied into q' (L·d multiplies) and the scale becomes 1."""
    if isinstance(p.factor, Tensor):
        assert not p.per_key, "a factor that varies over keys cannot be folded into q"
        return p.q * p.factor, 1.0  # (..., L, d_k)
    return p.q, p.factor
