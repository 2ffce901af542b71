"""Softmax and scaled dot-product attention as plain functions.

The formula of the articles, ``softmax(Q Kᵀ / √d_k) V``, split into the steps that they walk
through so that each step can be inspected on its own:

    raw     = q @ kᵀ                         (..., L, S)   "scores"
    scaled  = raw * factor                   (..., L, S)   factor = 1/√d_k for "scaled"
    masked  = scaled + mask                  (..., L, S)   -inf where a query may not look
    weights = softmax(masked, dim=-1)        (..., L, S)   each row sums to 1 (0 if fully masked)
    out     = weights @ v                    (..., L, d_v)

``attention`` runs them all; when the weights are not wanted and the scoring is the standard one it
hands the work to ``torch.nn.functional.scaled_dot_product_attention`` (fused kernels, no L×S
matrix kept); other scorings without weights go to the blockwise online-softmax kernel of
:mod:`attnscope.blockwise` (no L×S matrix either); with weights it computes the steps explicitly,
or — for inference on inputs whose step-by-step matrices would not fit — writes the weights
blockwise straight into the one L×S result.

Masks follow ``scaled_dot_product_attention``: a boolean mask is True where attention is allowed,
a float mask is added to the scaled scores. Both broadcast to ``(..., L, S)``.
"""

from __future__ import annotations

import math
from typing import Optional, Union

import torch
import torch.nn.functional as F

from .errors import ShapeError, ConfigError, fmt_shape

Tensor = torch.Tensor

#: The ways of turning q and k into scores that the articles discuss.
SCORINGS = ("scaled", "unscaled", "inv_d", "cosine", "qknorm")

#: Default temperature τ of cosine scoring (Swin V2 starts its learnable logit scale at 1/τ = 10).
DEFAULT_COSINE_TEMPERATURE = 0.1

_LOW_PRECISION = (torch.float16, torch.bfloat16)


# ----------------------------------------------------------------------------------------------
# softmax
# ----------------------------------------------------------------------------------------------

def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Numerically stable softmax along ``dim``.

    Subtracts the row maximum before ``exp`` so that no finite input overflows. A row whose entries
    are all ``-inf`` (a query that may look at nothing) gives zeros instead of ``0/0 = NaN``.
    float16/bfloat16 inputs are computed in float32 and returned in their own dtype.

    Args:
        x: scores of any shape, floating point.
        dim: the dimension that sums to 1.
    Returns:
        Tensor of ``x``'s shape and dtype.
    """
    _require_float("x", x)
    # torch.softmax subtracts the row max before exp (the stable form) in one fused kernel;
    # the only case it gets wrong for attention is a row with no finite entry: max = -inf,
    # x - max = NaN. Those rows are shifted to 0 first and zeroed after, so that neither the
    # weights nor their gradients are NaN.
    dead = torch.isneginf(x.amax(dim=dim, keepdim=True))  # rows where every entry is -inf
    any_dead = bool(dead.any())
    if any_dead:
        x = x.masked_fill(dead, 0.0)
    out = torch.softmax(x, dim=dim, dtype=torch.float32 if x.dtype in _LOW_PRECISION else None)
    if any_dead:
        out = out.masked_fill(dead, 0.0)
    return out.to(x.dtype)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """log of :func:`softmax`, stable; ``-inf`` for fully masked rows (never NaN)."""
    _require_float("x", x)
    work = x.float() if x.dtype in _LOW_PRECISION else x
    row_max = work.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    shifted = work - row_max.detach()
    lse = torch.logsumexp(shifted, dim=dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)  # -inf - -inf would be NaN
    return (shifted - lse).to(x.dtype)


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------

def _require_float(name: str, t: Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise ShapeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise ShapeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")


def broadcast_shapes(*shapes) -> Optional[torch.Size]:
    """The broadcast of ``shapes`` (NumPy rules), or None if they do not broadcast.

    Plain Python: ``torch.broadcast_shapes`` costs ~30-100 µs a call, more than a small SDPA.
    """
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, start=ndim - len(s)):
            n = int(n)
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    return None
                out[i] = n
    return torch.Size(out)


def _broadcast_or_raise(what: str, *shapes) -> torch.Size:
    out = broadcast_shapes(*shapes)
    if out is None:
        raise ShapeError(
            f"{what}: shapes " + " and ".join(fmt_shape(s) for s in shapes) + " do not broadcast"
        )
    return out


def check_qkv(q: Tensor, k: Tensor, v: Tensor) -> torch.Size:
    """Validate ``q (..., L, d)``, ``k (..., S, d)``, ``v (..., S, d_v)``; raise ShapeError.

    Returns the broadcast leading (batch/head) dims.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        _require_float(name, t)
        if t.dim() < 2:
            raise ShapeError(f"{name} must have at least 2 dims (..., length, dim), got shape {fmt_shape(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(
            f"q and k must have the same last dim d_k, got q {fmt_shape(q.shape)} and k {fmt_shape(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"k and v must have the same length S (dim -2), got k {fmt_shape(k.shape)} and v {fmt_shape(v.shape)}"
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise ShapeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ShapeError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    return _broadcast_or_raise("leading (batch/head) dims of q, k, v", q.shape[:-2], k.shape[:-2], v.shape[:-2])


def check_mask(mask: Optional[Tensor], L: int, S: int, lead: torch.Size, name: str = "mask") -> None:
    """A mask must be bool or floating and broadcast to ``(*lead, L, S)``."""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor):
        raise ShapeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise ShapeError(f"{name} must be boolean (True = attend) or floating (added to scores), got dtype {mask.dtype}")
    target = (*lead, L, S)
    out = broadcast_shapes(mask.shape, target)
    if out is None or tuple(out) != tuple(target):
        raise ShapeError(
            f"{name} of shape {fmt_shape(mask.shape)} does not broadcast to the scores' shape "
            f"{fmt_shape(target)} (..., L={L}, S={S})"
        )


def check_scoring(scoring: str) -> None:
    if scoring not in SCORINGS:
        raise ConfigError(f"unknown scoring {scoring!r}; choose one of {', '.join(SCORINGS)}")


# ----------------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------------

def score_factor(scoring: str, d_k: int, scale: Optional[float] = None,
                 temperature: Union[None, float, Tensor] = None) -> Union[float, Tensor]:
    """The factor that multiplies the raw scores: 1/√d_k, 1, 1/d_k, or 1/τ.

    ``scale`` overrides it for every scoring. For "cosine", ``temperature`` may be a tensor
    (e.g. a learnable one per head, shape broadcastable to the scores).
    """
    check_scoring(scoring)
    if scale is not None:
        return scale
    if scoring in ("scaled", "qknorm"):
        return 1.0 / math.sqrt(d_k)
    if scoring == "unscaled":
        return 1.0
    if scoring == "inv_d":
        return 1.0 / d_k
    tau = DEFAULT_COSINE_TEMPERATURE if temperature is None else temperature
    return 1.0 / tau


def prepare_qk(q: Tensor, k: Tensor, scoring: str, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """Normalise q and k as the scoring requires before the dot product.

    "cosine": unit L2 norm (so q·k = cos(q, k)); "qknorm": LayerNorm without affine over d_k
    (modules add their learnable affine themselves before calling this). Others: unchanged.
    """
    if scoring == "cosine":
        return F.normalize(q, dim=-1, eps=eps), F.normalize(k, dim=-1, eps=eps)
    if scoring == "qknorm":
        d = q.shape[-1]
        return F.layer_norm(q, (d,), eps=eps), F.layer_norm(k, (d,), eps=eps)
    return q, k


def raw_scores(q: Tensor, k: Tensor) -> Tensor:
    """``q @ kᵀ``: (..., L, d) × (..., S, d) → (..., L, S)."""
    return torch.matmul(q, k.transpose(-2, -1))  # (..., L, S)


def combine_masks(mask: Optional[Tensor], L: int, S: int, *, causal: bool,
                  dtype: torch.dtype, device: torch.device) -> Optional[Tensor]:
    """One additive float mask (0 = attend, -inf = blocked), or None if nothing is masked.

    ``causal`` blocks keys after the query (top-left aligned, as ``is_causal`` in SDPA:
    query i sees keys 0..i).
    """
    additive = None
    if mask is not None:
        if mask.dtype == torch.bool:
            additive = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, float("-inf"))
        else:
            additive = mask.to(dtype)
    if causal:
        blocked = torch.ones(L, S, dtype=torch.bool, device=device).triu(diagonal=1)  # (L, S)
        causal_add = torch.zeros(L, S, dtype=dtype, device=device).masked_fill(blocked, float("-inf"))
        additive = causal_add if additive is None else additive + causal_add
    return additive


def attention_steps(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
                    causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
                    temperature: Union[None, float, Tensor] = None) -> dict[str, Tensor]:
    """Every intermediate of attention, computed explicitly.

    Returns a dict with ``scores`` (raw q·k, (..., L, S)), ``scaled``, ``masked``, ``weights``
    (..., L, S) and ``out`` (..., L, d_v). No validation; use :func:`attention` for that.
    """
    qn, kn = prepare_qk(q, k, scoring)
    raw = raw_scores(qn, kn)  # (..., L, S)
    scaled = raw * score_factor(scoring, q.shape[-1], scale, temperature)  # (..., L, S)
    add = combine_masks(mask, q.shape[-2], k.shape[-2], causal=causal, dtype=scaled.dtype, device=scaled.device)
    masked = scaled if add is None else scaled + add  # (..., L, S)
    weights = softmax(masked, dim=-1)  # (..., L, S)
    out = torch.matmul(weights, v)  # (..., L, d_v)
    return {"scores": raw, "scaled": scaled, "masked": masked, "weights": weights, "out": out}


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
              causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
              dropout_p: float = 0.0, return_weights: bool = False,
              temperature: Union[None, float, Tensor] = None):
    """Dot-product attention ``softmax(score(q, k)) @ v`` over any leading dims.

    Args:
        q: queries ``(..., L, d_k)``.
        k: keys ``(..., S, d_k)``.
        v: values ``(..., S, d_v)``.
        mask: bool (True = attend) or float (added to the scaled scores), broadcastable to
            ``(..., L, S)``.
        causal: block keys after each query (query i sees keys 0..i).
        scale: overrides the scoring's factor (1/√d_k for "scaled").
        scoring: one of :data:`SCORINGS`.
        dropout_p: dropout on the weights (only pass > 0 while training).
        return_weights: also return the softmax weights ``(..., L, S)`` (before dropout).
        temperature: τ of "cosine" scoring (float or tensor broadcastable to the scores).
    Returns:
        ``out (..., L, d_v)``, or ``(out, weights)`` with ``return_weights=True``.
        A query whose keys are all masked gets weights 0 and output 0, never NaN.
    """
    lead = check_qkv(q, k, v)
    check_scoring(scoring)
    L, S = q.shape[-2], k.shape[-2]
    check_mask(mask, L, S, lead)
    if not 0.0 <= dropout_p < 1.0:
        raise ConfigError(f"dropout_p must be in [0, 1), got {dropout_p}")

    if not return_weights and scoring == "scaled":
        return _sdpa(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)

    from . import blockwise  # here, not at the top: blockwise builds on this module
    if not return_weights:
        # The fused kernel only forms q·kᵀ/√d_k; every other scoring gets the blockwise kernel:
        # the same numbers (≤ 1e-6 apart in float32) in O(L·d) memory, no L×S matrix.
        return blockwise.blockwise_attention(q, k, v, mask, causal=causal, scale=scale, scoring=scoring,
                                             temperature=temperature, dropout_p=dropout_p)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))) and \
            not _dense_fits(3 * _nbytes(lead, L, S, q), q.device):
        # Inference on a long input: the explicit path would hold ~3 L×S matrices at once. Only
        # the weights themselves are needed: one pass for each row's log-sum-exp, one that writes
        # exp(score − lse) straight into the result.
        weights = blockwise.attention_weights(q, k, mask, causal=causal, scale=scale, scoring=scoring,
                                              temperature=temperature)  # (..., L, S)
        dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
        return torch.matmul(dropped, v), weights  # (..., L, d_v), (..., L, S)

    # Explicit path. Only what the result needs is kept: the factor goes on q (L·d multiplies
    # instead of L·S) and the raw scores are never stored, so the peak is about two L×S matrices.
    qn, kn = prepare_qk(q, k, scoring)
    factor = score_factor(scoring, q.shape[-1], scale, temperature)
    scaled = raw_scores(qn * factor, kn)  # (..., L, S)
    add = combine_masks(mask, L, S, causal=causal, dtype=scaled.dtype, device=scaled.device)
    weights = softmax(scaled if add is None else scaled + add, dim=-1)  # (..., L, S)
    del scaled
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    out = torch.matmul(dropped, v)  # (..., L, d_v)
    return (out, weights) if return_weights else out


#: Bytes the explicit path may use for its L×S matrices before ``attention(return_weights=True)``
#: switches to the blockwise weights (inference only). None: what the device has available now.
DENSE_MEMORY_LIMIT: Optional[int] = None


def _nbytes(lead: torch.Size, L: int, S: int, q: Tensor) -> int:
    """Bytes of one (*lead, L, S) matrix in q's dtype."""
    return math.prod(lead) * L * S * q.element_size()


def _dense_fits(nbytes: int, device: torch.device) -> bool:
    """Would ``nbytes`` more fit in the device's free memory (or under DENSE_MEMORY_LIMIT)?"""
    if DENSE_MEMORY_LIMIT is not None:
        return nbytes <= DENSE_MEMORY_LIMIT
    if nbytes < 1 << 26:  # below 64 MiB nobody needs to ask
        return True
    try:
        if device.type == "cuda":
            return nbytes <= torch.cuda.mem_get_info(device)[0]
        if device.type == "cpu":
            with open("/proc/meminfo") as f:
                info = dict(line.split(":", 1) for line in f)
            return nbytes <= int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError, RuntimeError):
        pass
    return True  # cannot tell: the explicit path, as before


def _sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], *, causal: bool,
          scale: Optional[float], dropout_p: float) -> Tensor:
    """The fused kernel. SDPA refuses ``is_causal`` together with a mask, so fold them then."""
    if causal and mask is not None:
        mask = combine_masks(mask, q.shape[-2], k.shape[-2], causal=True, dtype=q.dtype, device=q.device)
        causal = False
    elif mask is not None and mask.dtype != torch.bool and mask.dtype != q.dtype:
        mask = mask.to(q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                          is_causal=causal, scale=scale)
