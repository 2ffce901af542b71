"""The steps of scaled dot-product attention in float64: prepared q and k, the scoring's factor,
the raw scores, the masks, softmax (stable; a row that sees nothing gives 0) and the weighted sum."""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import torch

from ..errors import ConfigError
from ..i18n import error
from ..kernels.validate import check_scale, check_temperature, check_width
from ..scorings import DEFAULT_EPS, SCORINGS, get_scoring
from .arrays import Array, as_f64
from .masks import combine_masks


def prepare_qk(q, k, scoring: str = "scaled", eps: float = DEFAULT_EPS) -> tuple[Array, Array]:
    """q', k' as the scoring prepares them (cosine: unit length; qknorm: LayerNorm, no affine)."""
    return get_scoring(scoring).prepare_qk_np(as_f64(q), as_f64(k), eps)


def score_factor(scoring: str, d_k: int, scale: Optional[float] = None,
                 temperature: Union[None, float, Array] = None) -> Union[float, Array]:
    """The factor on q'·k': 1/√d_k for "scaled", 1/τ for "cosine", …; ``scale`` overrides. The
    arguments are refused as the torch functions refuse them (a τ ≤ 0, a τ beside a scale or for a
    scoring without one, a scale that is not a finite number, a d_k < 0)."""
    sc = get_scoring(scoring)
    check_temperature(torch.from_numpy(temperature) if isinstance(temperature, np.ndarray) else temperature, sc, scale)
    scale = check_scale(scale)
    check_width("d_k", d_k)
    if scale is not None:
        return scale
    t = None if temperature is None else as_f64(temperature)
    f = sc.factor_for(d_k, t if t is None or t.ndim else float(t))
    return f if isinstance(f, np.ndarray) else float(f)


def operand_factor(scoring: str, d_k: int) -> float:
    """The factor on a model's *prepared* q', k' (what a trace records as ``attn.q``/``attn.k``:
    after qknorm's LayerNorms, say), for a scoring whose factor depends on d_k alone.

    ConfigError for a scoring with a temperature (cosine): its τ is a learned parameter of the
    model that the prepared operands do not carry.
    """
    sc = get_scoring(scoring)
    if sc.uses_temperature:
        raise error(ConfigError, "errors.reference_operand_temperature", scoring=scoring,
                    names=", ".join(n for n in SCORINGS if not get_scoring(n).uses_temperature))
    return float(sc.factor_for(d_k))


def raw_scores(q, k) -> Array:
    """``q @ kᵀ`` → ``(..., L, S)``; one query ``q (d_k,)`` gives its row ``(S,)``."""
    q, k = as_f64(q), as_f64(k)
    # einsum for matrices, BLAS for one row: the summation orders explain, the viewer and the
    # server have always used, so that their printed digits do not move
    return k @ q if q.ndim == 1 else np.einsum("...ld,...sd->...ls", q, k)


def softmax(x, axis: int = -1) -> Array:
    """Stable softmax (max subtracted); a row with no finite entry gives 0, never NaN."""
    x = as_f64(x)
    if x.shape[axis] == 0:
        return x.copy()
    alive = np.isfinite(x).any(axis=axis, keepdims=True)
    m = np.where(alive, np.max(np.where(np.isfinite(x), x, -np.inf), axis=axis, keepdims=True), 0.0)
    e = np.exp(x - m)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(alive, e / np.where(alive, total, 1.0), 0.0)


def logsumexp(x, axis: int = -1) -> Array:
    """log Σ exp(x) along ``axis``, stable; −inf for a row with no finite entry."""
    x = as_f64(x)
    alive = np.isfinite(x).any(axis=axis)
    m = np.where(alive, np.max(np.where(np.isfinite(x), x, -np.inf), axis=axis), 0.0)
    total = np.exp(x - np.expand_dims(m, axis)).sum(axis=axis)
    return np.where(alive, m + np.log(np.where(alive, total, 1.0)), -np.inf)


def log_softmax(x, axis: int = -1) -> Array:
    """``x − logsumexp(x)``; −inf throughout a row with no finite entry."""
    x = as_f64(x)
    lse = np.expand_dims(logsumexp(x, axis), axis)
    return np.where(np.isneginf(lse), -np.inf, x - np.where(np.isneginf(lse), 0.0, lse))


def weighted_sum(weights, v) -> Array:
    """``weights @ v`` → ``(..., L, d_v)``; one row ``weights (S,)`` gives ``(d_v,)``."""
    return as_f64(weights) @ as_f64(v)


def attention_steps(q, k, v, mask=None, *, causal: bool = False, scoring: str = "scaled",
                    scale: Optional[float] = None, temperature=None, eps: float = DEFAULT_EPS) -> dict[str, Array]:
    """Every step as in :func:`attnscope.attention_steps`, plus ``q``/``k`` (prepared) and ``lse``.

    Returns ``q``, ``k`` (..., L|S, d_k), ``scores``, ``scaled``, ``masked``, ``weights``
    (..., L, S), ``out`` (..., L, d_v) and ``lse`` (..., L).
    """
    qp, kp = prepare_qk(q, k, scoring, eps)
    v = as_f64(v)
    scores = raw_scores(qp, kp)
    L, S = scores.shape[-2:]
    scaled = scores * score_factor(scoring, qp.shape[-1], scale, temperature)
    add = combine_masks(mask, L, S, causal)
    masked = scaled if add is None else scaled + add
    weights = softmax(masked)
    return {"q": qp, "k": kp, "scores": scores, "scaled": scaled, "masked": masked, "weights": weights,
            "out": weighted_sum(weights, v), "lse": logsumexp(masked)}


def attention(q, k, v, mask=None, **kwargs) -> tuple[Array, Array]:
    """``(out, weights)`` of :func:`attention_steps`."""
    s = attention_steps(q, k, v, mask, **kwargs)
    return s["out"], s["weights"]


def attention_weights(q, k, factor, *, causal: bool = False, mask=None) -> Array:
    """``softmax(factor · q·kᵀ)`` of prepared q, k ``(..., L|S, d_k)`` → ``(..., L, S)``, with the
    bool or additive ``mask`` and causality; rows that see nothing are 0."""
    q, k = as_f64(q), as_f64(k)
    scaled = raw_scores(q, k) * factor
    add = combine_masks(mask, scaled.shape[-2], scaled.shape[-1], causal)
    return softmax(scaled if add is None else scaled + add)
