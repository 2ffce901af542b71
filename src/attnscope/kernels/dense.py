"""The explicit steps of attention, each an (..., L, S) matrix that a hook may read or replace:

    scores  = q' @ k'ᵀ                    (..., L, S)   q', k' prepared by the scoring
    scaled  = scores · factor             (..., L, S)
    masked  = scaled + bias + mask        (..., L, S)   −inf where a query may not look
    weights = softmax(masked, dim=-1)     (..., L, S)   each row sums to 1 (0 if fully masked)
    z       = weights @ v                 (..., L, d_v)

plus the stable softmax and log-softmax themselves.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import torch
import torch.nn.functional as F

from .derived import note, shared
from .validate import Q_AND_FACTOR, broadcast_or_raise, broadcast_shapes, check_dim, require_float

Tensor = torch.Tensor
Hook = Optional[Callable[[str, Tensor], Tensor]]

LOW_PRECISION = (torch.float16, torch.bfloat16)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Numerically stable softmax along ``dim``.

    Subtracts the row maximum before ``exp`` so that no finite input overflows. A row whose entries
    are all ``-inf`` (a query that may look at nothing) gives zeros instead of ``0/0 = NaN``.
    float16/bfloat16 inputs are computed in float32 and returned in their own dtype. An empty
    ``dim`` gives an empty result.

    Args:
        x: scores of any shape, floating point.
        dim: the dimension that sums to 1.
    Returns:
        Tensor of ``x``'s shape and dtype.
    """
    require_float("x", x)
    dim = check_dim("x", x, dim)
    if x.shape[dim] == 0:
        return x.clone()
    # torch.softmax subtracts the row max before exp (the stable form) in one fused kernel;
    # the only case it gets wrong for attention is a row with no finite entry: max = -inf,
    # x - max = NaN. Those rows are shifted to 0 first and zeroed after, so that neither the
    # weights nor their gradients are NaN. Such a row is -inf in its first entry too: only when
    # some row starts with -inf is the row maximum read (a pass over x, ~10 % of an L×S step's time).
    if not maybe_dead(x, dim):
        return torch.softmax(x, dim=dim, dtype=torch.float32 if x.dtype in LOW_PRECISION else None).to(x.dtype)
    dead = torch.isneginf(x.amax(dim=dim, keepdim=True))  # rows where every entry is -inf
    any_dead = bool(dead.any())
    if any_dead:
        x = x.masked_fill(dead, 0.0)
    out = torch.softmax(x, dim=dim, dtype=torch.float32 if x.dtype in LOW_PRECISION else None)
    if any_dead:
        out = out.masked_fill(dead, 0.0)
    return out.to(x.dtype)


def maybe_dead(x: Tensor, dim: int = -1) -> bool:
    """Might some row of ``x`` along ``dim`` (not empty) be ``-inf`` throughout? False when every
    row's first entry is something else: one read of a (…, L) slice, not of x."""
    return bool(torch.isneginf(x.select(dim, 0)).any())


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """log of :func:`softmax`, stable; ``-inf`` for fully masked rows (never NaN)."""
    require_float("x", x)
    dim = check_dim("x", x, dim)
    if x.shape[dim] == 0:
        return x.clone()
    work = x.float() if x.dtype in LOW_PRECISION else x
    row_max = work.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    shifted = work - row_max.detach()
    lse = torch.logsumexp(shifted, dim=dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)  # -inf - -inf would be NaN
    return (shifted - lse).to(x.dtype)


def raw_scores(q: Tensor, k: Tensor) -> Tensor:
    """``q @ kᵀ``: (..., L, d) × (..., S, d) → (..., L, S)."""
    return torch.matmul(q, k.transpose(-2, -1))  # (..., L, S)


def causal_blocked(L: int, S: int, device) -> Tensor:
    """True above the diagonal (top-left aligned, as SDPA's ``is_causal``: query i sees keys 0..i)."""
    return torch.ones(L, S, dtype=torch.bool, device=device).triu(diagonal=1)  # (L, S)


#: The causal mask of the last shape asked for, kept for the next layer of the same forward (a
#: decoder's layers share it: building it is four L×S passes, ~8 % of a weights trace). Only
#: masks up to this many entries are kept (16 MiB in float32), one at a time.
CAUSAL_CACHE_MAX = 1 << 22
_causal_cache: dict[tuple, Tensor] = {}


def causal_additive(L: int, S: int, dtype: torch.dtype, device: torch.device, *, reuse: bool = False) -> Tensor:
    """``(L, S)``: 0 on and below the diagonal, -inf above it. With ``reuse`` the tensor may be
    shared with other callers (never modify it in place)."""
    key = (L, S, dtype, torch.device(device), torch.is_inference_mode_enabled())
    if reuse and (hit := _causal_cache.get(key)) is not None:
        return hit
    add = torch.zeros(L, S, dtype=dtype, device=device).masked_fill(causal_blocked(L, S, device), float("-inf"))
    if reuse and L * S <= CAUSAL_CACHE_MAX:
        _causal_cache.clear()
        _causal_cache[key] = add
    return add


def is_shared_causal(add: Optional[Tensor]) -> bool:
    """Is ``add`` the shared causal mask (whose rows all see key 0, so none is fully masked)?"""
    return add is not None and any(add is t for t in list(_causal_cache.values()))


def combine_masks(mask: Optional[Tensor], L: int, S: int, *, causal: bool, dtype: torch.dtype,
                  device: torch.device, bias: Optional[Tensor] = None, reuse: bool = False) -> Optional[Tensor]:
    """One additive float mask (0 = attend, -inf = blocked, plus any score ``bias``), or None if
    nothing is masked or added. With ``reuse`` a causal-only mask may be the shared one of
    :func:`causal_additive` (read it, never modify it in place). In a trace's pass the layers
    that hand the same mask (and no bias) share one result (:func:`~attnscope.kernels.derived.shared`)."""
    if mask is not None and bias is None:
        return shared(("combine_masks", id(mask), L, S, causal, dtype, str(device)), mask,
                      lambda: _combined(mask, L, S, causal=causal, dtype=dtype, device=device, bias=None, reuse=reuse))
    return _combined(mask, L, S, causal=causal, dtype=dtype, device=device, bias=bias, reuse=reuse)


def held_within(x: Tensor, room: float) -> Tensor:
    """``x`` with its finite values clamped to ±``room`` (±inf stay: they mean "blocked")."""
    return torch.where(x.isinf(), x, x.clamp(-room, room))


def additive_as(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """A float mask in ``dtype``, its finite values held within half the dtype's range (±inf stay):
    a float32 −1e9 "blocked" became −inf in float16, emptying a row that float32 averages, and
    +1e9 became +inf, whose softmax is NaN. Half the range leaves room to add the scores."""
    if mask.dtype == dtype or torch.finfo(mask.dtype).max <= torch.finfo(dtype).max:
        return mask.to(dtype)
    return held_within(mask, torch.finfo(dtype).max / 2).to(dtype)


def _combined(mask: Optional[Tensor], L: int, S: int, *, causal: bool, dtype: torch.dtype, device: torch.device,
              bias: Optional[Tensor], reuse: bool) -> Optional[Tensor]:
    additive = None if bias is None else bias.to(dtype)
    if mask is not None:
        if mask.dtype == torch.bool:
            m = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, float("-inf"))
        else:
            m = additive_as(mask, dtype)
        additive = m if additive is None else additive + m
    if causal:
        causal_add = causal_additive(L, S, dtype, device, reuse=reuse and additive is None)
        additive = causal_add if additive is None else additive + causal_add
    if additive is not None and additive is not bias and additive is not mask and not is_shared_causal(additive):
        # made here from small inputs: a trace keeps the call, not the (…, L, S) result
        note(additive, combine_masks, mask, L, S, causal=causal, dtype=dtype, device=device, bias=bias)
    return additive


def scale(scores: Tensor, factor: Union[float, Tensor]) -> Tensor:
    """The ``scaled`` step: ``scores · factor`` (..., L, S)."""
    return scores * factor  # (..., L, S)


def add_mask(scaled: Tensor, add: Optional[Tensor]) -> Tensor:
    """The ``masked`` step: ``scaled + add`` (..., L, S); ``scaled`` itself when nothing is added."""
    return scaled if add is None else scaled + add  # (..., L, S)


def row_softmax(masked: Tensor) -> Tensor:
    """The ``weights`` step: :func:`softmax` over keys (..., L, S)."""
    return softmax(masked, dim=-1)  # (..., L, S)


def steps(q: Tensor, k: Tensor, v: Optional[Tensor], factor: Union[float, Tensor], add: Optional[Tensor], *,
          hook: Hook = None, dropout_p: float = 0.0, check: Optional[Callable[[Tensor], None]] = None,
          free: Optional[Callable[[str, Tensor], bool]] = None,
          check_scores: Optional[Callable[[Tensor], None]] = None) -> dict[str, Tensor]:
    """Every step kept apart, each passed through ``hook(step, tensor)`` (which may replace it).

    ``q (..., L, d)``, ``k (..., S, d)`` prepared; ``add`` the additive mask (or None).
    ``check_scores(t)``: called on q·k as computed, before its hook (half precision: its overflow).
    ``free(step, t)``: does nobody keep ``t``'s memory, what the hook of ``step`` gave back (no
    hook on it, or only recorders that kept the call that made it)? Then the next step is written
    over it (:func:`writable`), the same bits with one L×S matrix allocated where there were three.
    Returns ``scores``, ``scaled``, ``masked``, ``weights`` (..., L, S) and ``z`` (..., L, d_v)
    (no ``z`` without v); a step that was free holds the next one's numbers.
    """
    h = hook or (lambda name, t: t)
    # scaled, masked and weights carry the call that made them (kernels.derived): a trace keeps
    # the scores and calls these functions again on read, for the same bits
    raw = raw_scores(q, k)  # (..., L, S)
    if check_scores is not None:  # q·k itself, before a hook may write -inf into it
        check_scores(raw)
    scores = h("scores", raw)  # (..., L, S)
    scaled = h("scaled", note(scale(scores, factor), scale, scores, factor))  # (..., L, S)
    if check is not None:
        check(scaled)
    mine = free is not None and free("scaled", scaled)  # scaled's memory is ours to write over
    if add is not None:
        made = torch.add(scaled, add, out=scaled.view(scaled.shape)) if mine and writable(scaled, add) \
            else add_mask(scaled, add)  # (..., L, S)
        masked = h("masked", note(made, add_mask, scaled, add))
        mine = free is not None and free("masked", masked)  # a fresh tensor, or scaled's memory
    else:
        masked = h("masked", scaled)  # (..., L, S)
        mine = mine and free is not None and free("masked", masked)
    made = torch.softmax(masked, -1, out=masked.view(masked.shape)) \
        if mine and writable(masked) and not maybe_dead(masked) else row_softmax(masked)  # (..., L, S)
    weights = h("weights", note(made, row_softmax, masked))  # (..., L, S)
    out = {"scores": scores, "scaled": scaled, "masked": masked, "weights": weights}
    if v is not None:
        dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
        out["z"] = torch.matmul(dropped, v)  # (..., L, d_v)
    return out


def writable(t: Tensor, other: Optional[Tensor] = None) -> bool:
    """May an elementwise step on ``t`` (and ``other``), or a softmax over its rows, be written
    into t's memory? On the CPU, outside autograd, in float32/float64, when the result has t's
    shape and dtype. The result is then a view of t (``out=t.view(t.shape)``): a new tensor object,
    so that what a trace notes on it (kernels.derived) stays its own. Elementwise kernels and the
    CPU softmax read each element (row) before writing it, so the numbers are those of the call
    without ``out`` (tests/trace/test_in_place.py compares bits)."""
    if t.device.type != "cpu" or t.requires_grad or t.dtype in LOW_PRECISION or not t.shape[-1]:
        return False
    return other is None or (broadcast_shapes(t.shape, other.shape) == t.shape
                             and torch.result_type(t, other) == t.dtype and not other.requires_grad)


def lean_weights(q: Tensor, k: Tensor, factor: Union[float, Tensor], add: Optional[Tensor], *,
                 groups: int = 1, check_scaled: Optional[Callable[[Tensor], None]] = None) -> Tensor:
    """``softmax(q kᵀ · factor + add)`` in as few passes as eager BERT takes, when no step but the
    weights is wanted: a factor constant over keys goes on q (L·d multiplies, not L·S), the mask
    is added in place, and torch's fused softmax is used unless some row is fully masked (then
    ours, which gives 0 not NaN). On the CPU without autograd the softmax is written over the
    scores themselves (:func:`_softmax_over`), so that a call allocates one L×S matrix, not two;
    elsewhere the peak is about two.

    ``q (..., H, L, d)``, ``k (..., H/groups, S, d)``: with ``groups`` > 1 (grouped-query heads)
    the query heads that share a k head are stacked along L (:func:`grouped`) and multiplied by
    that k head once, instead of repeating k for each of them (a copy of H·S·d numbers per layer).
    ``check_scaled(t)``: called on the scaled scores before the mask (half precision: their overflow).
    """
    per_key = isinstance(factor, Tensor) and factor.shape[-1] != 1
    if groups > 1:  # a factor that varies over keys goes on the scores below, not on q
        att = grouped(q if per_key else scaled_q(q, factor), groups) @ k.transpose(-2, -1)  # (..., H_kv, g·L, S)
        att = att.view(*q.shape[:-1], k.shape[-2])  # (..., H, L, S)
    else:
        att = torch.matmul(q if per_key else q * factor, k.transpose(-2, -1))  # (..., L, S)
    if per_key:
        att = att * factor
    if check_scaled is not None:
        check_scaled(att)
    if add is None:
        return _softmax_over(att) if att.shape[-1] else att
    same = broadcast_shapes(att.shape, add.shape) == att.shape
    att = att.add_(add) if same else att + add  # (..., L, S)
    if att.shape[-1] == 0 or (not is_shared_causal(add) and bool(torch.isneginf(add).all(dim=-1).any())):
        return softmax(att, dim=-1)  # (..., L, S)
    return _softmax_over(att)  # (..., L, S)


def _softmax_over(att: Tensor) -> Tensor:
    """``torch.softmax(att, -1)``, written over ``att`` (a tensor this module made and nobody else
    holds) on the CPU when autograd does not need it. The CPU kernel reads each row before it
    writes it, so the numbers are the out-of-place ones bit for bit (tests/kernels/test_lean_weights.py);
    what it saves is a fresh L×S matrix per call: a weights trace keeps every layer's weights, so
    the heap grows by them, and a second matrix per layer scatters them and makes it grow more
    (each new page of memory costs a page fault)."""
    if att.device.type == "cpu" and not att.requires_grad:
        return torch.softmax(att, dim=-1, out=att)  # (..., L, S)
    return torch.softmax(att, dim=-1)  # (..., L, S)


def scaled_q(q: Tensor, factor: Union[float, Tensor]) -> Tensor:
    """``q · factor`` written into a contiguous tensor (one pass), so that :func:`grouped` is a view."""
    if torch.is_grad_enabled() and (q.requires_grad or getattr(factor, "requires_grad", False)):
        return (q * factor).contiguous()  # out= has no gradient  # (..., H, L, d)
    shape = q.shape if not isinstance(factor, Tensor) else broadcast_or_raise(Q_AND_FACTOR, q.shape, factor.shape)
    out = torch.empty(shape, dtype=q.dtype, device=q.device)  # plain Python: torch.broadcast_shapes costs ~50 µs
    return torch.mul(q, factor, out=out)  # (..., H, L, d)


def grouped(t: Tensor, groups: int) -> Tensor:
    """``(..., H, L, x)`` → ``(..., H/groups, groups·L, x)``: the query heads that share one k/v head
    stacked along L (heads ``j·groups … j·groups + groups − 1`` serve k/v head j). A view where the
    heads and rows lie one after the other, a copy otherwise."""
    *lead, H, L, x = t.shape
    return t.reshape(*lead, H // groups, groups * L, x)


def grouped_mix(weights: Tensor, v: Tensor, groups: int) -> Tensor:
    """``weights (..., H, L, S) @ v (..., H/groups, S, d_v)`` → ``(..., H, L, d_v)`` without
    repeating v for the query heads that share it."""
    if groups == 1:
        return torch.matmul(weights, v)  # (..., H, L, d_v)
    z = grouped(weights, groups) @ v  # (..., H_kv, g·L, d_v)
    return z.view(*weights.shape[:-1], v.shape[-1])  # (..., H, L, d_v)
