"""Exact attention in O(L·d) memory: the online softmax of FlashAttention, written in PyTorch.

The queries are cut into tiles of ``block_q`` rows and the keys into tiles of ``block_k``
columns; for one query tile the key tiles are visited in turn while three running quantities are
kept per query row:

    m    the largest score seen so far                      (..., bq)
    l    Σ exp(score − m) over the keys seen so far           (..., bq)
    acc  Σ exp(score − m) · v over the keys seen so far       (..., bq, d_v)

When a new tile raises the maximum from m to m', the old sums are rescaled by exp(m − m'), so that
every exp is taken of a number ≤ 0 (never overflows) and the result is exactly softmax · V:

    out = acc / l,      lse = m + log l   (= log Σ_j exp(score_j), the log-sum-exp per query)

Only one ``(bq, bk)`` tile of scores exists at a time. Causal tiles entirely above the diagonal
are skipped. A query that may look at no key keeps m = −∞, l = 0 and gets output 0 and lse = −∞
(never NaN), as the dense path does.

The backward pass is FlashAttention's too: nothing of size L×S is stored, the tiles of
probabilities are recomputed from q, k and the saved lse, P = exp(S − lse).
"""

from __future__ import annotations

from typing import Optional, cast

import torch
import torch.nn.functional as F

from .pool import map_query_tiles
from .tiles import LN2, LOG2E, NEG_INF, Tiles, tile

Tensor = torch.Tensor


def forward(T: Tiles, dropout_p: float = 0.0) -> tuple[Optional[Tensor], Tensor]:
    """Online softmax over the key tiles of every query tile → ``out (*lead, L, d_v)`` (None
    without v) and ``lse (*lead, L)``. Differentiable by autograd when the inputs need it (then
    every tile's probabilities are kept by autograd; :class:`BlockwiseFn` avoids that)."""
    if torch.is_grad_enabled() or dropout_p > 0.0:
        parts = [forward_tile(T, ti, dropout_p) for ti in range(len(T.q_tiles))]
        lse = torch.cat([p[1] for p in parts], dim=-1)  # (*lead, L)
        # with v every tile has an output (forward_tile returns None only without v)
        out = torch.cat([cast(Tensor, p[0]) for p in parts], dim=-2) if T.v is not None else None  # (*lead, L, d_v)
        return out, lse
    # No autograd: every tile writes its rows of preallocated results, side by side if possible.
    lead, L = T.q.shape[:-2], T.L
    lse = torch.empty((*lead, L), dtype=T.q.dtype, device=T.q.device)  # (*lead, L)
    out = None if T.v is None else torch.empty((*lead, L, T.v.shape[-1]), dtype=T.q.dtype, device=T.q.device)

    def run(ti: int) -> None:
        i0, i1 = T.q_tiles[ti]
        o, l = forward_tile(T, ti, 0.0)
        lse[..., i0:i1] = l
        if out is not None and o is not None:  # both or neither: there is a v
            out[..., i0:i1, :] = o
    map_query_tiles(run, T, parallel=True)
    return out, lse


def forward_tile(T: Tiles, ti: int, dropout_p: float) -> tuple[Optional[Tensor], Tensor]:
    """The recurrence for query tile ti: ``out (*lead, bq, d_v)`` (or None), ``lse (*lead, bq)``."""
    i0, i1 = T.q_tiles[ti]
    lead, n = T.q.shape[:-2], i1 - i0
    dtype, dev = T.q.dtype, T.q.device
    m = torch.full((*lead, n), NEG_INF, dtype=dtype, device=dev)  # running max (*lead, bq), base 2
    l = torch.zeros((*lead, n), dtype=dtype, device=dev)  # running Σ 2^(s − m)
    acc = None if T.v is None else torch.zeros((*lead, n, T.v.shape[-1]), dtype=dtype, device=dev)
    for j0, j1, s in T.visible(ti):  # s: (*lead, bq, bk)
        grad = s.requires_grad
        # The max only keeps exp in range; the result does not depend on it, so no gradient.
        m_new = torch.maximum(m, s.detach().amax(dim=-1))  # (*lead, bq)
        shift = torch.where(torch.isneginf(m_new), 0.0, m_new)  # rows with nothing visible yet
        p = torch.exp2(s - shift[..., None]) if grad else torch.exp2(s.sub_(shift[..., None]), out=s)  # (*lead, bq, bk)
        alpha = torch.exp2(m - shift)  # rescales the old sums to the new max; 0 while m = −∞
        l = l * alpha + p.sum(dim=-1)
        if acc is not None and T.v is not None:  # both or neither
            pv = F.dropout(p, p=dropout_p) if dropout_p > 0.0 else p
            acc = acc * alpha[..., None] + torch.matmul(pv, T.v[..., j0:j1, :])  # (*lead, bq, d_v)
        m = m_new
    empty = l == 0  # queries that could see no key
    l_safe = torch.where(empty, 1.0, l)
    shift = torch.where(torch.isneginf(m), 0.0, m)
    lse = torch.where(empty, NEG_INF, (shift + torch.log2(l_safe)) * LN2)  # (*lead, bq), natural log
    return (None if acc is None else acc / l_safe[..., None]), lse  # out 0 where empty



def backward(T: Tiles, out: Tensor, lse: Tensor, d_out: Optional[Tensor],
              d_lse: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of q, k, v from the saved ``out`` and ``lse``, recomputing each tile.

    With P = exp(S − lse) the softmax tile, dV = Pᵀ dO, dP = dO Vᵀ and
    dS = P ∘ (dP − D + d_lse) where D = rowsum(dO ∘ O); then dQ = dS K and dK = dSᵀ Q.
    """
    assert not T.base2, "the backward needs the natural q"
    q, k, v = T.q, T.k, T.v
    assert v is not None, "the backward needs v"
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    if d_out is None:
        d_out = torch.zeros_like(out)
    D = (d_out * out).sum(dim=-1)  # (*lead, L)
    if d_lse is not None:
        D = D - d_lse
    # 2^(s − (+∞)) = 0 gives rows without a visible key zero probability (their lse is −∞).
    lse_fix = torch.where(torch.isneginf(lse), float("inf"), lse * LOG2E)  # (*lead, L), base 2
    for ti, (i0, i1) in enumerate(T.q_tiles):
        do_i = d_out[..., i0:i1, :]  # (*lead, bq, d_v)
        for j0, j1, s in T.visible(ti):
            p = torch.exp2(s.sub_(lse_fix[..., i0:i1, None]), out=s)  # (*lead, bq, bk)
            dv[..., j0:j1, :] += torch.matmul(p.transpose(-2, -1), do_i)
            dp = torch.matmul(do_i, v[..., j0:j1, :].transpose(-2, -1))  # (*lead, bq, bk)
            ds = p.mul_(dp.sub_(D[..., i0:i1, None]))  # (*lead, bq, bk), w.r.t. the scaled scores
            if T.mult is not None:
                ds = ds * tile(T.mult, i0, i1, j0, j1)  # chain rule through s = (q kᵀ) ∘ mult
            dq[..., i0:i1, :] += torch.matmul(ds, k[..., j0:j1, :])
            dk[..., j0:j1, :] += torch.matmul(ds.transpose(-2, -1), q[..., i0:i1, :])
    return dq, dk, dv


class BlockwiseFn(torch.autograd.Function):
    """Blockwise attention with the memory-light FlashAttention backward.

    Inputs q, k, v must already be expanded to one leading shape; masks carry no gradient.
    """

    @staticmethod
    def forward(ctx, q, k, v, spec):
        T = Tiles(q, k, v, **spec)
        with torch.no_grad():
            out, lse = forward(T)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.spec = spec
        return out, lse

    @staticmethod
    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        T = Tiles(q, k, v, **ctx.spec)
        with torch.no_grad():
            dq, dk, dv = backward(T, out, lse, d_out, d_lse)
        return dq, dk, dv, None

