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
from typing import Optional, Union

import torch
import torch.distributed as dist

from ...errors import AttnscopeError, ConfigError, ShapeError, fmt_shape
from .. import fused
from ..blockwise.api import check_kernel
from ..blockwise.kernel import backward, forward
from ..blockwise.prepare import block_sizes, compute_dtype
from ..blockwise.tiles import LOG2E, Tiles
from ..qk import as_2d, prepare
from ..validate import broadcast_or_raise, check_qkv, check_scale, check_scoring
from .protocol import (META_DIMS, DTYPES, as_timedelta, check_agreement, comm_device, exchange_meta, global_rank,
                       group_info, meta_row, seg, wait_all)

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
                 use_fused: bool = False, scale: float = 1.0) -> None:
        self.group, self.rank, self.world = group, rank, world
        # use_fused: each step runs the fused kernel, with ``scale`` on q kᵀ; otherwise the
        # online softmax, with the factor already on q
        self.use_fused, self.scale = use_fused, scale
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
        return fused.LseProblem(q, k, v, add, causal=causal, scale=self.scale)

    def block_forward(self, q: Tensor, block: list[Tensor], bias: Optional[Tensor], src: int,
                      base2: bool) -> tuple[Tensor, Tensor]:
        """``out (*lead, L_r, d_v)``, ``lse (*lead, L_r)`` of this rank's queries over block src."""
        k, v = block[0], block[1]
        if self.use_fused:
            p = self.problem(q, k, v, bias, src)
            return p.result(*p.forward())
        return forward(self.tiles(q, k, v, bias, src, base2))

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

    def exchange(self, send: list[Tensor], recv_like: Optional[list[Tensor]] = None):
        """Post sends of ``send`` to the next rank and receives from the previous one.

        Returns ``(received, works)``: the receive buffers (on the tensors' device once
        :meth:`finish` ran) and the pending works.
        """
        out_bufs = [torch.empty_like(t, device=self.comm) for t in (recv_like or send)]
        ops = [dist.P2POp(dist.isend, t.to(self.comm).contiguous(), self.next, self.group) for t in send]
        ops += [dist.P2POp(dist.irecv, b, self.prev, self.group) for b in out_bufs]
        return out_bufs, dist.batch_isend_irecv(ops)

    def finish(self, bufs: list[Tensor], works, device: torch.device, what: str) -> list[Tensor]:
        wait_all(works, self.timeout, what)
        return [b.to(device) for b in bufs]



def pad_seq(t: Optional[Tensor], n: int, dim: int) -> Optional[Tensor]:
    """Zero-pad dim ``dim`` to length n so that every rank's buffer has one size."""
    if t is None or t.shape[dim] == n:
        return None if t is None else t.contiguous()
    pad_shape = list(t.shape)
    pad_shape[dim] = n - t.shape[dim]
    return torch.cat([t, t.new_zeros(pad_shape)], dim=dim)



def ring_forward(R: Ring, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                  base2: bool = False) -> tuple[Tensor, Tensor]:
    """out (*lead, L_r, d_v) and lse (*lead, L_r) of this rank's queries over the whole sequence.
    ``base2``: q already carries log₂e (the online kernel, forward only)."""
    s_max = max(R.k_lens)
    block = [pad_seq(k, s_max, -2), pad_seq(v, s_max, -2)] + ([] if bias is None else [pad_seq(bias, s_max, -1)])
    out = lse = None
    for step in range(R.world):
        src = (R.rank - step) % R.world
        pending = R.exchange(block) if step < R.world - 1 else None  # next block, while we compute
        if R.visible(src):
            o, l = R.block_forward(q, block, block[2] if bias is not None else None, src, base2)
            if out is None:
                out, lse = o, l
            else:
                out, lse = merge_partials(out, lse, o, l, inplace=True)
            del o
        if pending is not None:
            block = R.finish(*pending, q.device, f"step {step + 1} of the ring (receiving from rank {(R.rank - 1) % R.world})")
    if out is None:  # no key visible at all (an empty block of queries)
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
    dq = torch.zeros_like(q)
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
            grads = [torch.zeros_like(block[0]), torch.zeros_like(block[1])]
        else:
            grads = R.finish(*acc_in, q.device, f"step {step} of the backward ring (gradients)")
        if shares is not None:
            n, dk_s, dv_s = shares
            grads[0][..., :n, :] += dk_s
            grads[1][..., :n, :] += dv_s
        acc_in = R.exchange(grads)  # on to the next rank; the previous one's comes in
        del grads, shares
        if pending is not None:
            block = R.finish(*pending, q.device, f"step {step + 1} of the backward ring")
    grads = R.finish(*acc_in, q.device, "the last hop of the backward ring (gradients)")  # home
    n = R.k_lens[R.rank]
    return dq, grads[0][..., :n, :], grads[1][..., :n, :]


class RingAttentionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, R):
        with torch.no_grad():
            out, lse = ring_forward(R, q, k, v, bias)
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
            dq, dk, dv = ring_backward(ctx.R, q, k, v, ctx.bias, out, lse, d_out, d_lse)
        return dq, dk, dv, None, None


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------

def ring_attention(q: Tensor, k: Tensor, v: Tensor, group=None, causal: bool = False, *,
                   key_mask: Optional[Tensor] = None, scale: Optional[float] = None,
                   scoring: str = "scaled", temperature: Union[None, float, Tensor] = None,
                   block_size: Union[None, int, tuple[int, int]] = None,
                   timeout: Union[None, float, datetime.timedelta] = None, return_lse: bool = False,
                   kernel: str = "auto"):
    """Exact attention over a sequence whose contiguous blocks live on the ranks of ``group``.

    Call it on every rank of the group with that rank's block; rank r's block comes after rank
    r−1's. The result on each rank is that rank's rows of single-process
    ``attention(q_full, k_full, v_full, causal=causal, ...)``.

    Args:
        q: this rank's queries ``(..., L_r, d_k)``.
        k, v: this rank's keys and values ``(..., S_r, d_k)``, ``(..., S_r, d_v)``. L_r and S_r
            may differ between ranks (uneven split); every other dim must agree.
        group: a ``torch.distributed`` process group (default: the world).
        causal: query at global position i sees keys at global positions 0..i.
        key_mask: this rank's keys' mask ``(..., S_r)``: bool (True = may be attended, like
            :func:`attnscope.attention`'s masks) or float (added to the scores); it travels with
            the keys. E.g. padding of a batch of texts.
        scale, scoring, temperature: as in :func:`attnscope.attention` (a tensor temperature
            must not vary over keys).
        block_size: tile sizes of the online-softmax kernel (where a rank runs it).
        timeout: seconds (or timedelta) to wait for the other ranks at each exchange before
            raising :class:`RingTimeout`; default :data:`DEFAULT_TIMEOUT`.
        return_lse: also return the log-sum-exp per query ``(..., L_r)``.
        kernel: each step's kernel, as in :func:`attnscope.blockwise_attention`: ``"auto"``
            (PyTorch's fused kernel where it takes the inputs, forward and backward),
            ``"fused"`` (or a ConfigError), ``"online"`` (attnscope's online softmax).
    Returns:
        ``out (..., L_r, d_v)`` (or ``(out, lse)``), differentiable: the backward runs the ring
        again, so every rank must call backward too.
    Raises:
        ShapeError on every rank when the ranks' shapes, dtypes or options disagree;
        RingTimeout when a rank does not answer in time.
    """
    rank, world = group_info(group)
    timeout = as_timedelta(timeout)
    # Validate locally but raise only after the exchange, so the other ranks learn of it too.
    local_error: Optional[Exception] = None
    try:
        check_qkv(q, k, v)
        check_scoring(scoring)
        check_scale(scale)
        if q.dim() > META_DIMS or k.dim() > META_DIMS or v.dim() > META_DIMS:
            raise ShapeError(f"ring_attention supports tensors of up to {META_DIMS} dims")
        if q.dtype not in DTYPES:
            raise ShapeError(f"ring_attention supports {', '.join(map(str, DTYPES))}, got {q.dtype}")
        if key_mask is not None:
            if not isinstance(key_mask, Tensor) or (key_mask.dtype != torch.bool and not key_mask.is_floating_point()):
                raise ShapeError("key_mask must be a bool (True = attend) or float tensor (..., S_r)")
            if key_mask.dim() == 0 or key_mask.shape[-1] != k.shape[-2]:
                raise ShapeError(f"key_mask must have shape (..., S_r={k.shape[-2]}) for k {fmt_shape(k.shape)}, "
                                 f"got {fmt_shape(key_mask.shape)}")
            broadcast_or_raise("leading dims of key_mask and q, k, v", key_mask.shape[:-1], q.shape[:-2], k.shape[:-2])
        if isinstance(temperature, Tensor) and temperature.dim() >= 1 and temperature.shape[-1] != 1:
            raise ShapeError(f"ring_attention needs a temperature that is constant over keys (last dim 1), "
                             f"got shape {fmt_shape(temperature.shape)}")
        bq, bk = block_sizes(block_size)
        check_kernel(kernel)
        if kernel == "fused" and not fused.flash_lse_ok(q, k, v):
            raise ConfigError(f"kernel='fused': PyTorch's fused kernel cannot take {q.dtype} on {q.device.type} "
                              f"with q {fmt_shape(q.shape)}, k {fmt_shape(k.shape)}, v {fmt_shape(v.shape)}; "
                              f"use kernel='auto'")
    except AttnscopeError as e:
        local_error = e
        bq = bk = 1
    row = meta_row(q, k, v, key_mask, causal, scoring, scale, temperature, ok=local_error is None)
    comm = comm_device(group, q.device if isinstance(q, Tensor) else torch.device("cpu"))
    rows = exchange_meta(row, group, world, comm, timeout)
    if local_error is not None:
        raise local_error
    check_agreement(rows, rank)

    q_lens = [seg(row, 0)[-2] for row in rows]  # every rank's L_r (dim −2 of q)
    k_lens = [seg(row, 1)[-2] for row in rows]  # every rank's S_r
    cdt = compute_dtype(q.dtype)
    p = prepare(q.to(cdt), k.to(cdt), scoring, scale=scale, temperature=temperature)
    vn = v.to(cdt)
    use_fused = kernel != "online" and fused.flash_lse_ok(p.q, p.k, vn)
    if use_fused and not isinstance(p.factor, Tensor):
        qn, kn, sc = p.q, p.k, p.factor  # the factor is the kernel's scale: no scaled copy of q
    else:  # the factor is constant over keys: it goes on q
        qn, kn, sc = p.q * (as_2d(p.factor) if isinstance(p.factor, Tensor) else p.factor), p.k, 1.0  # (..., L_r, d_k)
    R = Ring(group, rank, world, q_lens, k_lens, causal, (bq, bk), timeout, comm, use_fused=use_fused, scale=sc)
    bias = None
    if key_mask is not None:
        key_mask = key_mask.to(q.device)
        bias = (torch.zeros(key_mask.shape, dtype=cdt, device=q.device).masked_fill(~key_mask, float("-inf"))
                if key_mask.dtype == torch.bool else key_mask.to(cdt))  # (..., S_r), added to scores
    if torch.is_grad_enabled() and any(t.requires_grad for t in (qn, kn, vn)):
        out, lse = RingAttentionFn.apply(qn, kn, vn, bias, R)
    else:
        with torch.no_grad():
            if use_fused:
                out, lse = ring_forward(R, qn, kn, vn, bias)
            else:
                qn = qn.mul_(LOG2E) if qn is not q else qn * LOG2E
                out, lse = ring_forward(R, qn, kn, vn, bias, base2=True)
    out = out.to(q.dtype)
    return (out, lse) if return_lse else out


def shard(x: Tensor, dim: int = -2, group=None) -> Tensor:
    """This rank's contiguous block of ``x`` along ``dim`` (as even as possible: the first
    ``n % P`` ranks get one more), the split :func:`ring_attention` expects. A view."""
    rank, world = group_info(group)
    return torch.tensor_split(x, world, dim=dim)[rank]


def gather(x: Tensor, dim: int = -2, group=None, timeout=None) -> Tensor:
    """Concatenate every rank's block along ``dim`` in rank order (blocks may differ in length)."""
    rank, world = group_info(group)
    timeout = as_timedelta(timeout)
    comm = comm_device(group, x.device)
    dim = dim % x.dim()
    n = torch.tensor([x.shape[dim]], device=comm)
    lens = [torch.empty_like(n) for _ in range(world)]
    wait_all([dist.all_gather(lens, n, group=group, async_op=True)], timeout, "gather (lengths)")
    lens = [int(t) for t in lens]
    padded = pad_seq(x.to(comm), max(lens), dim)
    parts = [torch.empty_like(padded) for _ in range(world)]
    wait_all([dist.all_gather(parts, padded, group=group, async_op=True)], timeout, "gather")
    return torch.cat([p.narrow(dim, 0, n_r) for p, n_r in zip(parts, lens)], dim=dim).to(x.device)
