"""The blockwise kernel's entry points: on prepared inputs (for the step function and the ring)
and the public functions with attention()'s arguments.

:func:`attention_weights` returns selected softmax rows (some heads, some queries) of a long
input without building the others: one pass for their row max, one that writes
``exp(score − max)`` and divides by the row's sum.
"""

from __future__ import annotations

from typing import Optional, Union

import torch

from ...errors import ConfigError, ShapeError, fmt_shape
from ...i18n import Msg, error
from .. import fused
from ..backend import FUSED_LSE, Facts, choose_backend
from ..qk import Prepared, as_2d, fold_factor, prepare
from ..validate import (
    LEAD_QK,
    broadcast_or_raise,
    check_attention_args,
    check_dropout,
    check_flag,
    check_qkv,
    kv_groups,
)
from .kernel import BlockwiseFn, forward
from .pool import map_query_tiles
from .prepare import BlockSize, Index, block_sizes, check_qk, compute_dtype, index, tile_operands
from .tiles import Tiles

Tensor = torch.Tensor


def repeat_kv(t: Tensor, groups: int) -> Tensor:
    """``(..., H_kv, S, d)`` → ``(..., H_kv·groups, S, d)``: each k/v head repeated for the query
    heads it serves (grouped-query attention)."""
    return t if groups == 1 else t.repeat_interleave(groups, dim=-3)


def empty_result(p: Prepared, v: Optional[Tensor], lead) -> tuple[Optional[Tensor], Tensor]:
    """out 0 and lse −∞ for every query when there is no key (S = 0) or no query (L = 0)."""
    L = p.q.shape[-2]
    lse = p.q.new_full((*lead, L), float("-inf"))
    out = None if v is None else p.q.new_zeros((*lead, L, v.shape[-1]))
    return out, lse


def run(p: Prepared, v: Optional[Tensor], mask: Optional[Tensor], *, causal: bool, dropout_p: float = 0.0,
        block_size: BlockSize = None, bias: Optional[Tensor] = None) -> tuple[Optional[Tensor], Tensor]:
    """``out (*lead, L, d_v)`` (None without v) and ``lse (*lead, L)`` of prepared q', k'.

    Differentiable in q', k', v (FlashAttention's memory-light backward) unless dropout, a mask
    or bias that wants its gradient, or a factor varying over keys that wants its gradient
    send the gradient through autograd tile by tile.
    """
    bq, bk = block_sizes(block_size)
    grad = torch.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad
                                           for t in (p.q, p.k, v, mask, bias, p.factor))
    custom = grad and v is not None and dropout_p == 0.0 \
        and not any(isinstance(t, Tensor) and t.requires_grad for t in (mask, bias)) \
        and not (p.per_key and isinstance(p.factor, Tensor) and p.factor.requires_grad)  # per_key: a tensor
    with torch.set_grad_enabled(grad):
        qs, ks, vs, parts, lead = tile_operands(p, v, mask, bias=bias, base2=not custom)
        if qs.shape[-2] == 0 or ks.shape[-2] == 0:
            return empty_result(Prepared(qs, ks, 1.0), vs, lead)
        spec = dict(parts, causal=causal, block_q=bq, block_k=bk)
        if custom:
            return BlockwiseFn.apply(qs, ks, vs, spec)
        # forward only (or autograd through the loop): q held once, already in base 2
        return forward(Tiles(qs, ks, vs, base2=True, **spec), dropout_p)


#: ``kernel=`` of the public functions: the fused kernel where it serves, always, or never.
KERNELS = ("auto", "fused", "online")


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise error(ConfigError, "errors.kernel_choice", choices=", ".join(map(repr, KERNELS)), value=repr(kernel))
    return kernel


def flash_usable(p: Prepared, v: Optional[Tensor], *, mask_grad: bool = False, q_pos: Optional[Tensor] = None,
                 causal: bool = False, kernel: str = "auto") -> bool:
    """The facts of :func:`choose_backend` for a log-sum-exp: may the fused kernel serve?
    ``kernel="fused"`` where it cannot: a ConfigError that says why."""
    if kernel == "online":
        return False
    ok = fused.flash_lse_ok(p.q, p.k, v) and not (causal and q_pos is not None)
    use = choose_backend(Facts(lse=True, fusable=not p.per_key, flash_lse=ok, mask_grad=mask_grad)) == FUSED_LSE
    if kernel == "fused" and not use:
        why = (Msg("errors.kernel_why_per_key") if p.per_key else
               Msg("errors.kernel_why_mask_grad") if mask_grad else
               Msg("errors.kernel_why_inputs", dtype=p.q.dtype, device=p.q.device.type, q=fmt_shape(p.q.shape),
                   k=fmt_shape(p.k.shape)))
        raise error(ConfigError, "errors.kernel_fused_cannot", why=why)
    return use


def run_flash(p: Prepared, v: Optional[Tensor], mask: Optional[Tensor], *, causal: bool,
              bias: Optional[Tensor] = None, dtype: Optional[torch.dtype] = None) -> tuple[Optional[Tensor], Tensor]:
    """``run`` by the fused kernel: differentiable in q', k', v (and a folded factor).
    ``dtype``: the kernel's operand dtype (half inputs run the half kernel, as SDPA does)."""
    q, scale = fold_factor(p)
    k = p.k
    if dtype is not None and dtype != q.dtype:
        q, k, v = q.to(dtype), k.to(dtype), None if v is None else v.to(dtype)
    return fused.flash_lse(q, k, v, mask, causal=causal, scale=scale, bias=bias)


def lse_of(p: Prepared, mask: Optional[Tensor], *, causal: bool, block_size: BlockSize = None,
           bias: Optional[Tensor] = None, q_pos: Optional[Tensor] = None, kernel: str = "auto") -> Tensor:
    """log Σ_j exp(score_ij) ``(*lead, L)`` of prepared q', k' (no gradient)."""
    with torch.no_grad():
        if flash_usable(p, None, q_pos=q_pos, causal=causal, kernel=kernel):
            return run_flash(p, None, mask, causal=causal, bias=bias)[1]
        bq, bk = block_sizes(block_size)
        qs, ks, _, parts, lead = tile_operands(p, None, mask, bias=bias, base2=True)
        if qs.shape[-2] == 0 or ks.shape[-2] == 0:
            return empty_result(Prepared(qs, ks, 1.0), None, lead)[1]
        return forward(Tiles(qs, ks, None, causal=causal, q_pos=q_pos, block_q=bq, block_k=bk, base2=True, **parts))[1]


def weights_of(p: Prepared, mask: Optional[Tensor], *, causal: bool, block_size: BlockSize = None,
               bias: Optional[Tensor] = None, q_pos: Optional[Tensor] = None) -> Tensor:
    """The softmax weights ``(*lead, L, S)`` of prepared q', k', written tile by tile into the one
    result (no gradient): the max of every row first, then ``exp(score − max)`` and the division
    by the row's sum, as a softmax does. (Not ``exp(score − lse)``: where a large mask puts every
    score of a row near −1e9, lse = max + log Σ loses its log Σ to rounding, and float32 rows
    of n such keys summed to n.) Peak memory is the result plus one tile."""
    bq, bk = block_sizes(block_size)
    with torch.no_grad():
        qs, ks, _, parts, lead = tile_operands(p, None, mask, bias=bias, base2=True)
        T = Tiles(qs, ks, None, causal=causal, q_pos=q_pos, block_q=bq, block_k=bk, base2=True, **parts)
        w = torch.zeros((*lead, T.L, T.S), dtype=qs.dtype, device=qs.device)  # (*lead, L, S)
        m = torch.full((*lead, T.L, 1), float("-inf"), dtype=qs.dtype, device=qs.device)  # row max (*lead, L, 1)

        def row_max(ti: int) -> None:  # query tiles write disjoint rows: safe side by side
            i0, i1 = T.q_tiles[ti]
            for _, _, s in T.visible(ti):
                m[..., i0:i1, :] = torch.maximum(m[..., i0:i1, :], s.amax(dim=-1, keepdim=True))

        def fill(ti: int) -> None:
            i0, i1 = T.q_tiles[ti]
            mi = m[..., i0:i1, :]
            shift = torch.where(torch.isneginf(mi), float("inf"), mi)  # rows seeing nothing → 0
            total = torch.zeros_like(shift)  # (*lead, bq, 1)
            for j0, j1, s in T.visible(ti):
                e = torch.exp2(s.sub_(shift), out=s)  # (*lead, bq, bk), ≤ 1
                total += e.sum(dim=-1, keepdim=True)
                w[..., i0:i1, j0:j1] = e
            w[..., i0:i1, :] /= torch.where(total == 0, 1.0, total)
        map_query_tiles(row_max, T, parallel=True)
        map_query_tiles(fill, T, parallel=True)
    return w


# ----------------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------------

def _check_common(q: Tensor, k: Tensor, mask: Optional[Tensor], scoring, scale, temperature):
    lead = broadcast_or_raise(LEAD_QK, q.shape[:-2], k.shape[:-2]) if kv_groups(q, k) == 1 \
        else broadcast_or_raise(LEAD_QK, q.shape[:-2], (*k.shape[:-3], q.shape[-3]))
    return check_attention_args(mask, q.shape[-2], k.shape[-2], lead, scoring, scale, temperature)


def blockwise_attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
                        causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
                        temperature: Union[None, float, Tensor] = None, dropout_p: float = 0.0,
                        block_size: BlockSize = None, return_lse: bool = False, kernel: str = "auto"):
    """Exact attention, same arguments and result as :func:`attnscope.attention`, in O(L·d) memory.

    Args:
        q, k, v: ``(..., L, d_k)``, ``(..., S, d_k)``, ``(..., S, d_v)``; k, v may have fewer
            heads (dim −3) than q (grouped-query attention).
        mask: bool (True = attend) or float (added to the scaled scores), broadcastable to
            ``(..., L, S)``; sliced tile by tile, never expanded.
        causal: query i sees keys 0..i (top-left aligned, as SDPA's ``is_causal``).
        scale, scoring, temperature: as in :func:`attnscope.attention`.
        dropout_p: dropout on the probabilities (training only; the backward then goes through
            autograd and keeps every tile, O(L·S) memory).
        block_size: ``block_q`` = ``block_k`` (int) or ``(block_q, block_k)``; default 256 × 256.
        return_lse: also return the log-sum-exp of every query's scaled, masked scores. Half
            inputs on the fused kernel: q', k' are prepared in float32 and rounded to the input
            dtype for the kernel (as SDPA takes them), so the lse carries that rounding of the
            scores (≈ |score|·2⁻⁸ in bfloat16); the online kernel keeps q', k' in float32.
        kernel: ``"auto"``: PyTorch's fused kernel that returns the log-sum-exp (CPU flash, CUDA
            memory-efficient; SDPA's speed, forward and backward) where it takes the inputs, else
            attnscope's online softmax; ``"fused"``: that kernel or a ConfigError saying why
            not; ``"online"``: attnscope's own online softmax in PyTorch, the reference (its
            tiles are ``block_size``; the fused kernel tiles itself).
    Returns:
        ``out (..., L, d_v)`` in q's dtype, or ``(out, lse (..., L))`` with ``return_lse``
        (lse in float32 for half inputs). A query that may see no key: out 0, lse −∞.
    """
    check_qkv(q, k, v)
    _check_common(q, k, mask, scoring, scale, temperature)
    causal, return_lse = check_flag(causal), check_flag(return_lse, "return_lse")
    dropout_p = check_dropout(dropout_p)
    block_sizes(block_size)
    check_kernel(kernel)
    if kernel == "fused" and dropout_p > 0.0:
        raise error(ConfigError, "errors.kernel_fused_dropout")
    g = kv_groups(q, k)
    k, v = repeat_kv(k, g), repeat_kv(v, g)
    cdt = compute_dtype(q.dtype)
    grad = torch.is_grad_enabled() and any(
        isinstance(t, Tensor) and t.requires_grad for t in (q, k, v, mask, temperature))
    mask_grad = grad and isinstance(mask, Tensor) and mask.requires_grad
    with torch.set_grad_enabled(grad):
        p = prepare(q.to(cdt), k.to(cdt), scoring, scale=scale, temperature=temperature)
        vc = v.to(cdt)
        if dropout_p == 0.0 and flash_usable(p, vc, mask_grad=mask_grad, causal=causal, kernel=kernel):
            # Half inputs: the prepared q', k' (prepared in float32) go back to the input dtype, so
            # that the kernel runs at SDPA's half speed, accumulating in float32 as SDPA does.
            out, lse = run_flash(p, vc, mask, causal=causal, dtype=q.dtype)
        else:
            out, lse = run(p, vc, mask, causal=causal, dropout_p=dropout_p, block_size=block_size)
    assert out is not None  # None only without v
    out = out.to(q.dtype)
    return (out, lse) if return_lse else out


def attention_lse(q: Tensor, k: Tensor, mask: Optional[Tensor] = None, *, causal: bool = False,
                  scale: Optional[float] = None, scoring: str = "scaled",
                  temperature: Union[None, float, Tensor] = None, block_size: BlockSize = None,
                  kernel: str = "auto") -> Tensor:
    """log Σ_j exp(score_ij) of every query ``(..., L)`` in O(L·d) memory (no values needed); −∞
    for a query that may see no key. Not differentiable (a statistic for inspection).
    ``kernel`` as in :func:`blockwise_attention`."""
    check_qk(q, k)
    _check_common(q, k, mask, scoring, scale, temperature)
    causal = check_flag(causal)
    block_sizes(block_size)
    check_kernel(kernel)
    k = repeat_kv(k, kv_groups(q, k))
    cdt = compute_dtype(q.dtype)
    with torch.no_grad():
        p = prepare(q.to(cdt), k.to(cdt), scoring, scale=scale, temperature=temperature)
        return lse_of(p, mask, causal=causal, block_size=block_size, kernel=kernel)


def attention_weights(q: Tensor, k: Tensor, mask: Optional[Tensor] = None, *, heads: Index = None,
                      queries: Index = None, causal: bool = False, scale: Optional[float] = None,
                      scoring: str = "scaled", temperature: Union[None, float, Tensor] = None,
                      block_size: BlockSize = None) -> Tensor:
    """Selected rows of the softmax weights, without building the others.

    For a long input the full weights ``(B, H, L, S)`` may not fit; this returns only the heads
    and queries asked for, computed from q and k in two passes over key tiles: the max of
    the selected rows, then ``exp(score − max)`` written tile by tile into the result and divided
    by the row's sum. Peak memory
    is the result plus one tile.

    Args:
        q: ``(..., H, L, d_k)``; k: ``(..., H, S, d_k)`` or ``(..., H_kv, S, d_k)`` with H a
            multiple of H_kv (leading dims broadcast).
        mask: bool (True = attend) or float, broadcastable to ``(..., H, L, S)``.
        heads: which (query) heads (dim −3): an int (that dim is dropped), a
            slice/range/list/1-D tensor (kept), or None for all.
        queries: which query positions (dim −2), same forms.
        causal, scale, scoring, temperature: as in :func:`attnscope.attention`; causal masking
            uses the queries' true positions.
    Returns:
        ``(..., h, l, S)`` weights in q's dtype; each row sums to 1, or is all 0 for a query that
        may see no key. Equal to ``attention(..., return_weights=True)[1]`` at those indices.
    """
    check_qk(q, k)
    sc, scale = _check_common(q, k, mask, scoring, scale, temperature)
    causal = check_flag(causal)
    block_sizes(block_size)
    L = q.shape[-2]
    if heads is not None and q.dim() < 3:
        raise error(ShapeError, "errors.kernel_heads_dim", shape=fmt_shape(q.shape))
    g = kv_groups(q, k)
    n_heads = q.shape[-3] if q.dim() >= 3 else 1
    h_idx, h_drop = index("heads", heads, max(n_heads, k.shape[-3] * g if k.dim() >= 3 else 1), q.device)
    q_idx, q_drop = index("queries", queries, L, q.device)

    def pick(t, dims_from_end, idx):
        # Select along a dim counted from the end, unless t broadcasts there (size 1 or absent).
        if idx is None or t.dim() < dims_from_end or t.shape[-dims_from_end] == 1:
            return t
        return t.index_select(t.dim() - dims_from_end, idx)

    q_sel = pick(pick(q, 3, h_idx), 2, q_idx)  # (..., h, l, d_k)
    if g > 1:  # query head h reads k/v head h // g
        k_sel = repeat_kv(k, g) if h_idx is None else k.index_select(k.dim() - 3, h_idx // g)  # (..., h, S, d_k)
    else:
        k_sel = pick(k, 3, h_idx)  # (..., h, S, d_k)
    m_sel = None if mask is None else pick(pick(as_2d(mask), 3, h_idx), 2, q_idx)
    t_sel = temperature
    if isinstance(temperature, Tensor):
        t_sel = pick(pick(as_2d(temperature), 3, h_idx), 2, q_idx)
    cdt = compute_dtype(q.dtype)
    with torch.no_grad():
        p = prepare(q_sel.to(cdt), k_sel.to(cdt), sc, scale=scale, temperature=t_sel)
        w = weights_of(p, m_sel, causal=causal, block_size=block_size, q_pos=q_idx)  # (..., h, l, S)
    w = w.to(q.dtype)
    if q_drop:
        w = w.squeeze(-2)
    if h_drop:
        w = w.squeeze(-3 if not q_drop else -2)
    return w
