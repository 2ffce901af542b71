"""Softmax and scaled dot-product attention as plain functions.

The formula of the articles, ``softmax(Q Kᵀ / √d_k) V``, split into the steps that they walk
through so that each step can be inspected on its own:

    raw     = q' @ k'ᵀ                       (..., L, S)   "scores" (q', k' as the scoring prepares them)
    scaled  = raw * factor                   (..., L, S)   factor = 1/√d_k for "scaled"
    masked  = scaled + mask                  (..., L, S)   -inf where a query may not look
    weights = softmax(masked, dim=-1)        (..., L, S)   each row sums to 1 (0 if fully masked)
    out     = weights @ v                    (..., L, d_v)

``attention`` runs them through :func:`attnscope.kernels.steps.attend`, the one definition of
attention: without weights every scoring goes to ``torch.nn.functional.scaled_dot_product_attention``
on the prepared q, k (fused kernels, no L×S matrix kept); with weights it computes the steps
explicitly, or — for inference on inputs whose step-by-step matrices would not fit — writes the
weights blockwise straight into the one L×S result (:mod:`attnscope.kernels.backend` has the
table).

Masks follow ``scaled_dot_product_attention``: a boolean mask is True where attention is allowed,
a float mask is added to the scaled scores. Both broadcast to ``(..., L, S)``.

Edge cases, decided once: no keys (S = 0) gives output 0 and weights of shape ``(..., L, 0)``;
no queries (L = 0) gives empty results; d_k = 0 gives scores 0 (an empty dot product), so every
visible key gets the same weight — as SDPA. With or without weights the output is the same.
Non-finite values flow through as IEEE arithmetic makes them unless ``check_finite=True`` (or
``with attnscope.kernels.checking_finite():``) asks for a :class:`~attnscope.errors.NonFiniteError`
naming the step; ``scale`` must always be a finite number.
"""

from __future__ import annotations

from typing import Optional, Union, cast

import torch

from .errors import ConfigError
from .i18n import error
from .kernels import dense
from .kernels.blockwise.prepare import check_qk
from .kernels.dense import log_softmax, softmax
from .kernels.steps import RecordSteps, attend
from .kernels.validate import (
    LEAD_QK,
    broadcast_or_raise,
    broadcast_shapes,
    check_attention_args,
    check_dropout,
    check_flag,
    check_mask,
    check_qkv,
    check_scale,
    check_temperature,
    check_width,
    require_float,
)
from .scorings import DEFAULT_COSINE_TEMPERATURE, DEFAULT_EPS, SCORINGS, check_positive, get_scoring
from .scorings import get_scoring as check_scoring  # public here as check_scoring

Tensor = torch.Tensor

__all__ = ["SCORINGS", "DEFAULT_COSINE_TEMPERATURE", "softmax", "log_softmax", "attention", "attention_steps",
           "score_factor", "prepare_qk", "raw_scores", "combine_masks", "check_qkv", "check_mask", "check_scoring",
           "broadcast_shapes"]


def score_factor(scoring: str, d_k: int, scale: Optional[float] = None,
                 temperature: Union[None, float, Tensor] = None) -> Union[float, Tensor]:
    """The factor that multiplies the raw scores: 1/√d_k, 1, 1/d_k, or 1/τ (the scoring's own).

    ``d_k``: an integer ≥ 0. ``scale`` overrides it for every scoring (a finite number). For
    "cosine", ``temperature`` may be a tensor (e.g. a learnable one per head, shape broadcastable
    to the scores). Arguments are checked as :func:`attention` checks them.
    """
    sc = get_scoring(scoring)
    check_temperature(temperature, sc, scale)  # refused for a scoring without one, or beside a scale
    scale = check_scale(scale)
    check_width("d_k", d_k)
    if scale is not None:
        return scale
    return cast("Union[float, Tensor]", sc.factor_for(d_k, temperature))  # an array only for an array τ


def prepare_qk(q: Tensor, k: Tensor, scoring: str, eps: float = DEFAULT_EPS) -> tuple[Tensor, Tensor]:
    """Normalise q and k as the scoring requires before the dot product.

    "cosine": unit L2 norm (so q·k = cos(q, k)); "qknorm": LayerNorm without affine over d_k
    (modules use their learnable affine instead). Others: unchanged. ``eps``: a positive finite
    number (the floor of the norm, the LayerNorm's ε).
    """
    sc = get_scoring(scoring)
    require_float("q", q)
    require_float("k", k)
    return sc.prepare_qk(q, k, check_positive("eps", eps))


def raw_scores(q: Tensor, k: Tensor) -> Tensor:
    """``q @ kᵀ``: (..., L, d) × (..., S, d) → (..., L, S); ShapeError naming what does not fit."""
    check_qk(q, k)
    broadcast_or_raise(LEAD_QK, q.shape[:-2], k.shape[:-2])
    return dense.raw_scores(q, k)  # (..., L, S)


def combine_masks(mask: Optional[Tensor], L: int, S: int, *, causal: bool, dtype: torch.dtype,
                  device: torch.device, bias: Optional[Tensor] = None) -> Optional[Tensor]:
    """One additive float mask (0 = attend, −inf = blocked, plus any score ``bias``) broadcastable
    to ``(..., L, S)``, or None if nothing is masked or added; ``mask`` as in :func:`attention`."""
    L, S, causal = check_width("L", L), check_width("S", S), check_flag(causal)
    if mask is not None:
        check_mask(mask, L, S, mask.shape[:-2] if isinstance(mask, Tensor) else torch.Size())
    if bias is not None:
        require_float("bias", bias)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise error(ConfigError, "errors.kernel_mask_out_dtype", dtype=repr(dtype))
    return dense.combine_masks(mask, L, S, causal=causal, dtype=dtype, device=device, bias=bias)


def _validate(q, k, v, mask, causal, scoring, scale, temperature, dropout_p, check_finite):
    lead = check_qkv(q, k, v)
    sc, scale = check_attention_args(mask, q.shape[-2], k.shape[-2], lead, scoring, scale, temperature)
    if check_finite is not None:  # 'no' would be truthy: the checks asked for
        check_flag(check_finite, "check_finite")
    return sc, scale, check_dropout(dropout_p), check_flag(causal)


def attention_steps(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
                    causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
                    temperature: Union[None, float, Tensor] = None,
                    check_finite: Optional[bool] = None) -> dict[str, Tensor]:
    """Every intermediate of attention, computed explicitly.

    Returns a dict with ``scores`` (raw q'·k', (..., L, S)), ``scaled``, ``masked``, ``weights``
    (..., L, S) and ``out`` (..., L, d_v); arguments as :func:`attention`.
    """
    sc, scale, _, causal = _validate(q, k, v, mask, causal, scoring, scale, temperature, 0.0, check_finite)
    rec = RecordSteps()
    out, _ = attend(q, k, v, mask, causal=causal, scoring=sc, scale=scale, temperature=temperature, hooks=rec,
                    check_finite=check_finite)
    return {"scores": rec.steps["scores"], "scaled": rec.steps["scaled"], "masked": rec.steps["masked"],
            "weights": rec.steps["weights"], "out": out}


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
              causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
              dropout_p: float = 0.0, return_weights: bool = False,
              temperature: Union[None, float, Tensor] = None, check_finite: Optional[bool] = None):
    """Dot-product attention ``softmax(score(q, k)) @ v`` over any leading dims.

    Args:
        q: queries ``(..., L, d_k)``.
        k: keys ``(..., S, d_k)``; with a head dim, k and v may have fewer heads than q when
            q's count is a multiple of theirs (grouped-query attention).
        v: values ``(..., S, d_v)``.
        mask: bool (True = attend) or float (added to the scaled scores), broadcastable to
            ``(..., L, S)``.
        causal: block keys after each query (query i sees keys 0..i).
        scale: overrides the scoring's factor (1/√d_k for "scaled"); a finite number.
        scoring: one of :data:`SCORINGS` (see :mod:`attnscope.scorings`).
        dropout_p: dropout on the weights (only pass > 0 while training).
        return_weights: also return the softmax weights ``(..., L, S)`` (before dropout).
        temperature: τ of "cosine" scoring (float or tensor broadcastable to the scores).
        check_finite: raise NonFiniteError naming the step where a NaN/±inf appears (None: the
            setting of :func:`attnscope.kernels.checking_finite`, off by default).
    Returns:
        ``out (..., L, d_v)``, or ``(out, weights)`` with ``return_weights=True``.
        A query whose keys are all masked gets weights 0 and output 0, never NaN.
    """
    sc, scale, dropout_p, causal = _validate(q, k, v, mask, causal, scoring, scale, temperature, dropout_p,
                                             check_finite)
    return_weights = check_flag(return_weights, "return_weights")  # 'no' would be truthy: the weights returned
    out, weights = attend(q, k, v, mask, causal=causal, scoring=sc, scale=scale, temperature=temperature,
                          dropout_p=dropout_p, need_weights=return_weights, check_finite=check_finite)
    return (out, weights) if return_weights else out
