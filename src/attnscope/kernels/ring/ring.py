"""Ring attention: exact attention over a sequence split across processes.

Each of the P ranks of a ``torch.distributed`` group holds one contiguous block of the sequence:
its queries ``q (..., L_r, d)`` and the keys/values at the same positions ``k, v (..., S_r, d)``.
The key/value blocks travel around the ring (rank r sends to r+1 and receives from r−1) with
point-to-point ops while every rank runs PyTorch's fused attention kernel that returns the
log-sum-exp (:mod:`attnscope.kernels.fused`; attnscope's own online softmax of
:mod:`attnscope.kernels.blockwise` where it cannot serve, or with ``kernel="online"``) on the
block it holds. After P steps each rank has seen every key; the partial results are merged
by their log-sum-exp (:func:`merge_partials`), the overflow-safe way (every weight is exp of a
number ≤ 0):

    m   = max(lse_a, lse_b)
    lse = m + log(exp(lse_a − m) + exp(lse_b − m))
    out = (exp(lse_a − m) · out_a + exp(lse_b − m) · out_b) / exp(lse − m)

The transfer of the next block is posted before the current one is computed, so communication
overlaps computation. Memory per rank is O((L/P)·d) plus one tile of scores: a rank never holds
the whole sequence. Causal attention skips the blocks that lie entirely in a rank's future.

The backward pass runs the ring again, each step the fused backward from the merged out and lse
(the block's probabilities are exp(score − lse) with the global lse): the blocks travel around
again, and behind each the accumulator of its gradients dK, dV, to which every rank adds its
share; one last hop brings each accumulator home. Both transfers overlap the compute: the next
block is posted before the step's backward, and the accumulator a rank passes on is awaited by
the next rank only after its own next step.

Before any of this the ranks exchange a small record of their shapes, dtypes and options
(:mod:`.protocol`), so that a mismatch raises the same clear error on every rank.

The code is device-agnostic: gloo (CPU) and NCCL (GPU) groups alike. Lengths need not divide
evenly: ranks may hold blocks of different lengths (:func:`shard` splits as evenly as possible).
"""

from __future__ import annotations

import datetime
import math
from typing import Optional, overload

import torch
import torch.distributed as dist

from ...i18n import Msg
from .. import fused
from ..blockwise.kernel import backward, forward
from ..blockwise.prepare import compute_dtype
from ..blockwise.tiles import Tiles
from .protocol import global_rank, wait_all

Tensor = torch.Tensor


def merge_partials(out_a: Tensor, lse_a: Tensor, out_b: Tensor, lse_b: Tensor, *,
                   inplace: bool = False) -> tuple[Tensor, Tensor]:
    """Combine attention over two disjoint sets of keys into attention over their union.

    ``out_* (..., L, d_v)`` are softmax-weighted values over each set and ``lse_* (..., L)`` the
    log-sum-exp of each set's scores. Overflow-safe (exponents ≤ 0); −∞ and 0 where both sets
    are empty for a query. ``inplace``: the result is written into ``out_a`` (and ``out_b`` is
    overwritten), so that the ring merges without copies of the (…, L, d_v) results.
    """
    m = torch.maximum(lse_a, lse_b)  # (..., L)
    m = torch.where(torch.isneginf(m), 0.0, m)
    w_a, w_b = torch.exp(lse_a - m), torch.exp(lse_b - m)  # (..., L), each ≤ 1, one of them = 1
    total = w_a + w_b
    empty = total == 0
    total = torch.where(empty, 1.0, total)
    lse = torch.where(empty, float("-inf"), m + torch.log(total))
    if inplace:
        out = out_a.mul_(w_a[..., None]).add_(out_b.mul_(w_b[..., None])).div_(total[..., None])  # as below
    else:
        out = (w_a[..., None] * out_a + w_b[..., None] * out_b) / total[..., None]  # (..., L, d_v)
    return out, lse


class Ring:
    """One rank's view of the ring: who sends to whom, every rank's offsets and lengths."""

    def __init__(self, group, rank: int, world: int, q_lens: list[int], k_lens: list[int], causal: bool,
                 block: tuple[int, int], timeout: datetime.timedelta, comm: torch.device, *,
                 use_fused: bool = False, scale: float = 1.0, chunks: int = 1) -> None:
        self.group, self.rank, self.world = group, rank, world
        # use_fused: each step runs the fused kernel, with ``scale`` on q kᵀ; otherwise the
        # online softmax, with the factor already on q
        self.use_fused, self.scale = use_fused, scale
        self.chunks = chunks  # head chunks run one after the other (see n_head_chunks)
        self.q_lens, self.k_lens = q_lens, k_lens
        self.q_off = [sum(q_lens[:r]) for r in range(world)]
        self.k_off = [sum(k_lens[:r]) for r in range(world)]
        self.causal, self.block, self.timeout, self.comm = causal, block, timeout, comm
        self.next = global_rank(group, (rank + 1) % world)
        self.prev = global_rank(group, (rank - 1) % world)

    def visible(self, src: int) -> bool:
        """Does any of this rank's queries see any key of rank src's block?"""
        if self.q_lens[self.rank] == 0 or self.k_lens[src] == 0:
            return False
        return not self.causal or self.k_off[src] <= self.q_off[self.rank] + self.q_lens[self.rank] - 1

    def tiles(self, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor], src: int, base2: bool) -> Tiles:
        n = self.k_lens[src]
        k, v = k[..., :n, :], v[..., :n, :]  # drop the padding that made the buffers equal
        bias = None if bias is None else bias[..., :n].unsqueeze(-2)  # (..., 1, S_src)
        shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + ([] if bias is None else [bias.shape[:-2]])
        lead = torch.broadcast_shapes(*shapes)
        q = q.expand(*lead, *q.shape[-2:])
        k = k.expand(*lead, *k.shape[-2:])
        v = v.expand(*lead, *v.shape[-2:])
        dev = q.device
        q_pos = k_pos = None
        if self.causal:
            q_pos = torch.arange(self.q_lens[self.rank], device=dev) + self.q_off[self.rank]
            k_pos = torch.arange(n, device=dev) + self.k_off[src]
        return Tiles(q, k, v, bias=bias, causal=self.causal, q_pos=q_pos, k_pos=k_pos,
                         block_q=self.block[0], block_k=self.block[1], base2=base2)

    def problem(self, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor], src: int) -> fused.LseProblem:
        """The fused kernel's call for this rank's queries and rank src's block: its key mask,
        and causality as the block lies (wholly past: none; the diagonal: top-left causal;
        otherwise a mask of the global positions)."""
        n = self.k_lens[src]
        k, v = k[..., :n, :], v[..., :n, :]  # drop the padding that made the buffers equal
        add = None if bias is None else bias[..., :n].unsqueeze(-2)  # (..., 1, S_src)
        causal = False
        if self.causal:
            q0, k0, L = self.q_off[self.rank], self.k_off[src], self.q_lens[self.rank]
            if k0 + n - 1 > q0:  # some key lies in some query's future
                if k0 == q0:
                    causal = True
                else:
                    future = (torch.arange(n, device=q.device) + k0)[None, :] > (torch.arange(L, device=q.device) + q0)[:, None]
                    pos = torch.zeros(L, n, dtype=q.dtype, device=q.device).masked_fill(future, float("-inf"))
                    add = pos if add is None else add + pos
        return fused.LseProblem(q, k, v, None if add is None else add.to(q.dtype), causal=causal, scale=self.scale)

    def block_forward(self, q: Tensor, block: list[Tensor], bias: Optional[Tensor], src: int,
                      base2: bool) -> tuple[Tensor, Tensor]:
        """``out (*lead, L_r, d_v)``, ``lse (*lead, L_r)`` of this rank's queries over block src."""
        k, v = block[0], block[1]
        if self.use_fused:
            p = self.problem(q, k, v, bias, src)
            o, lse = p.result(*p.forward())
            return o.to(compute_dtype(o.dtype)), lse  # partials merge in float32 for half inputs
        out, lse = forward(self.tiles(q, k, v, bias, src, base2))
        assert out is not None  # None only without v
        return out, lse

    def block_backward(self, q: Tensor, block: list[Tensor], bias: Optional[Tensor], src: int, out: Tensor,
                       lse: Tensor, d_out: Tensor, d_lse: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """This block's shares of dq ``(*lead, L_r, d_k)``, dk, dv ``(*lead, S_src, ·)``."""
        k, v = block[0], block[1]
        if self.use_fused:
            p = self.problem(q, k, v, bias, src)
            d4 = p.backward(p.operand(d_out, p.L), p.operand(out, p.L), p.rows(lse),
                            None if d_lse is None else p.rows(d_lse))
            return p.grads(*d4)
        return backward(self.tiles(q, k, v, bias, src, False), out, lse, d_out, d_lse)

    def exchange(self, send: list[Tensor]) -> tuple[list[Tensor], list]:
        """Post sends of ``send`` to the next rank and receives from the previous one.

        Returns ``(received, works)``: the receive buffers (on the tensors' device once
        :meth:`finish` ran) and the pending works.
        """
        out_bufs = [torch.empty_like(t, device=self.comm) for t in send]
        ops = [dist.P2POp(dist.isend, t.to(self.comm).contiguous(), self.next, self.group) for t in send]
        ops += [dist.P2POp(dist.irecv, b, self.prev, self.group) for b in out_bufs]
        return out_bufs, dist.batch_isend_irecv(ops)

    def finish(self, bufs: list[Tensor], works, device: torch.device, what: Msg) -> list[Tensor]:
        wait_all(works, self.timeout, what)
        return [b.to(device) for b in bufs]



@overload
def pad_seq(t: Tensor, n: int, dim: int) -> Tensor: ...
@overload
def pad_seq(t: None, n: int, dim: int) -> None: ...
def pad_seq(t: Optional[Tensor], n: int, dim: int) -> Optional[Tensor]:
    """Zero-pad dim ``dim`` to length n so that every rank's buffer has one size."""
    if t is None or t.shape[dim] == n:
        return None if t is None else t.contiguous()
    pad_shape = list(t.shape)
    pad_shape[dim] = n - t.shape[dim]
    return torch.cat([t, t.new_zeros(pad_shape)], dim=dim)



#: The backward ring's last hop home, named in a RingTimeout if it does not arrive.
LAST_HOP = Msg("errors.kernel_ring_last_hop")


def ring_forward(R: Ring, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                  base2: bool = False) -> tuple[Tensor, Tensor]:
    """out (*lead, L_r, d_v) and lse (*lead, L_r) of this rank's queries over the whole sequence.
    ``base2``: q already carries log₂e (the online kernel, forward only)."""
    s_max = max(R.k_lens)
    block = [pad_seq(k, s_max, -2), pad_seq(v, s_max, -2)] + ([] if bias is None else [pad_seq(bias, s_max, -1)])
    out: Optional[Tensor] = None
    lse: Optional[Tensor] = None
    for step in range(R.world):
        src = (R.rank - step) % R.world
        pending = R.exchange(block) if step < R.world - 1 else None  # next block, while we compute
        if R.visible(src):
            o, l = R.block_forward(q, block, block[2] if bias is not None else None, src, base2)
            if out is None or lse is None:  # both or neither
                out, lse = o, l
            else:
                out, lse = merge_partials(out, lse, o, l, inplace=True)
            del o
        if pending is not None:
            block = R.finish(*pending, q.device, Msg("errors.kernel_ring_step_receive", n=step + 1,
                                                                 rank=(R.rank - 1) % R.world))
    if out is None or lse is None:  # no key visible at all (an empty block of queries)
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        out = q.new_zeros((*lead, q.shape[-2], v.shape[-1]))
        lse = q.new_full((*lead, q.shape[-2]), float("-inf"))
    return out, lse


def ring_backward(R: Ring, q, k, v, bias, out, lse, d_out, d_lse) -> tuple[Tensor, Tensor, Tensor]:
    """dq of this rank's queries, and dk, dv of this rank's own block (every rank's shares).

    Per step: post the next block, compute this block's shares, then take in the block's
    accumulator from the previous rank (posted there one step earlier, so it travelled during
    this step's compute), add the shares and post it on. Every rank posts the same sequence
    (block, accumulator, block, …), so the point-to-point messages pair up in order.
    """
    s_max = max(R.k_lens)
    block = [pad_seq(k, s_max, -2), pad_seq(v, s_max, -2)] + ([] if bias is None else [pad_seq(bias, s_max, -1)])
    acc = compute_dtype(q.dtype)  # half inputs: the gradients add up in float32
    dq = torch.zeros_like(q, dtype=acc)
    acc_in = None  # the accumulator (dK, dV) in flight to this rank
    for step in range(R.world):
        src = (R.rank - step) % R.world
        pending = R.exchange(block) if step < R.world - 1 else None
        shares = None
        if R.visible(src):
            dq_s, dk_s, dv_s = R.block_backward(q, block, block[2] if bias is not None else None, src,
                                                out, lse, d_out, d_lse)
            dq += dq_s.sum_to_size(dq.shape)
            n = R.k_lens[src]
            shares = (n, dk_s.sum_to_size((*k.shape[:-2], n, k.shape[-1])), dv_s.sum_to_size((*v.shape[:-2], n, v.shape[-1])))
            del dq_s, dk_s, dv_s
        if acc_in is None:  # the first step: this rank starts its own block's accumulator
            grads = [torch.zeros_like(block[0], dtype=acc), torch.zeros_like(block[1], dtype=acc)]
        else:
            grads = R.finish(*acc_in, q.device, Msg("errors.kernel_ring_step_backward_grads", n=step))
        if shares is not None:
            n, dk_s, dv_s = shares
            grads[0][..., :n, :] += dk_s
            grads[1][..., :n, :] += dv_s
        acc_in = R.exchange(grads)  # on to the next rank; the previous one's comes in
        del grads, shares
        if pending is not None:
            block = R.finish(*pending, q.device, Msg("errors.kernel_ring_step_backward", n=step + 1))
    assert acc_in is not None  # posted at every step, and there is at least one
    grads = R.finish(*acc_in, q.device, LAST_HOP)  # home
    n = R.k_lens[R.rank]
    return dq, grads[0][..., :n, :], grads[1][..., :n, :]


#: Auto head chunks: a rank's K/V block of at least this many bytes travels in RING_HEAD_CHUNKS parts.
CHUNK_MIN_BYTES = 4 << 20
RING_HEAD_CHUNKS = 4


def n_head_chunks(requested: Optional[int], lead, s_max: int, d: int, itemsize: int) -> int:
    """How many head chunks (dim −3) the ring runs one after the other. Each rank holds two K/V
    blocks at once (the one computed, the one arriving) plus one partial result: in chunks those
    are 1/c of the size. ``lead`` and ``s_max`` agree across ranks, so the auto choice does too."""
    H = lead[-1] if len(lead) else 1
    if requested is not None:
        return max(1, min(requested, H))
    block = math.prod(lead) * s_max * d * itemsize
    return 1 if block < CHUNK_MIN_BYTES else min(H, RING_HEAD_CHUNKS)


@overload
def head_part(t: Tensor, sl: Optional[slice], dim_from_end: int) -> Tensor: ...
@overload
def head_part(t: None, sl: Optional[slice], dim_from_end: int) -> None: ...
@overload
def head_part(t: Optional[Tensor], sl: Optional[slice], dim_from_end: int) -> Optional[Tensor]: ...
def head_part(t: Optional[Tensor], sl: Optional[slice], dim_from_end: int) -> Optional[Tensor]:
    """Heads ``sl`` of ``t`` at dim −dim_from_end, or all of t where it broadcasts there."""
    if t is None or sl is None or t.dim() < dim_from_end or t.shape[-dim_from_end] == 1:
        return t
    return t.narrow(t.dim() - dim_from_end, sl.start, sl.stop - sl.start)


def chunk_slices(R: Ring, lead) -> list[Optional[slice]]:
    if R.chunks == 1:
        return [None]
    H = lead[-1]
    bounds = [round(i * H / R.chunks) for i in range(R.chunks + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def ring_forward_heads(R: Ring, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                       base2: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`ring_forward`, one head chunk after the other, written into the one result."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], *([] if bias is None else [bias.shape[:-1]]))
    parts = chunk_slices(R, lead)
    if parts == [None]:
        return ring_forward(R, q, k, v, bias, base2)
    out = q.new_empty((*lead, q.shape[-2], v.shape[-1]))  # (*lead, L_r, d_v)
    lse = q.new_empty((*lead, q.shape[-2]))  # (*lead, L_r)
    for sl in parts:
        assert sl is not None  # [None] (one chunk) went above
        o, l = ring_forward(R, head_part(q, sl, 3), head_part(k, sl, 3), head_part(v, sl, 3),
                            head_part(bias, sl, 2), base2)
        out.narrow(out.dim() - 3, sl.start, sl.stop - sl.start).copy_(o.expand(*o.shape[:-3], sl.stop - sl.start, *o.shape[-2:]))
        lse.narrow(lse.dim() - 2, sl.start, sl.stop - sl.start).copy_(l.expand(*l.shape[:-2], sl.stop - sl.start, l.shape[-1]))
        del o, l
    return out, lse


def ring_backward_heads(R: Ring, q, k, v, bias, out, lse, d_out, d_lse) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`ring_backward`, one head chunk after the other; a tensor that broadcasts over the
    heads sums its chunks' gradients."""
    lead = out.shape[:-2]
    parts = chunk_slices(R, lead)
    if parts == [None]:
        return ring_backward(R, q, k, v, bias, out, lse, d_out, d_lse)
    grads = [torch.zeros_like(t, dtype=compute_dtype(t.dtype)) for t in (q, k, v)]
    for sl in parts:
        got = ring_backward(R, head_part(q, sl, 3), head_part(k, sl, 3), head_part(v, sl, 3), head_part(bias, sl, 2),
                            head_part(out, sl, 3), head_part(lse, sl, 2), head_part(d_out, sl, 3),
                            head_part(d_lse, sl, 2))
        for g, dg in zip(grads, got):
            part = head_part(g, sl, 3)
            part += dg.sum_to_size(part.shape)
        del got
    return grads[0], grads[1], grads[2]


class RingAttentionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, R):
        with torch.no_grad():
            out, lse = ring_forward_heads(R, q, k, v, bias)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.bias, ctx.R = bias, R
        ctx.set_materialize_grads(False)  # an unused lse sends no gradient (and costs none)
        return out, lse

    @staticmethod
    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        if d_out is None:
            d_out = torch.zeros_like(out)
        with torch.no_grad():
            dq, dk, dv = ring_backward_heads(ctx.R, q, k, v, ctx.bias, out, lse, d_out, d_lse)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None
