"""Ring attention: exact attention over a sequence split across processes.

Each of the P ranks of a ``torch.distributed`` group holds one contiguous block of the sequence:
its queries ``q (..., L_r, d)`` and the keys/values at the same positions ``k, v (..., S_r, d)``.
The key/value blocks travel around the ring (rank r sends to r+1 and receives from r−1) with
point-to-point ops while every rank runs the blockwise kernel of :mod:`attnscope.blockwise` on
the block it holds. After P steps each rank has seen every key; the partial results are merged
by their log-sum-exp, the overflow-safe way (every weight is exp of a number ≤ 0):

    m   = max(lse_a, lse_b)
    lse = m + log(exp(lse_a − m) + exp(lse_b − m))
    out = (exp(lse_a − m) · out_a + exp(lse_b − m) · out_b) / exp(lse − m)

The transfer of the next block is posted before the current one is computed, so communication
overlaps computation. Memory per rank is O((L/P)·d) plus one tile of scores: a rank never holds
the whole sequence. Causal attention skips the blocks that lie entirely in a rank's future.

The backward pass runs the ring again: the blocks travel with their gradient accumulators dK, dV,
to which every rank adds its share, and one last hop brings each accumulator home.

Before any of this the ranks exchange a small record of their shapes, dtypes and options, so
that a mismatch raises the same clear :class:`~attnscope.errors.ShapeError` on every rank instead
of a hang or a garbled result; every wait has a time-out.

The code is device-agnostic: gloo (CPU) and NCCL (GPU) groups alike. Lengths need not divide
evenly: ranks may hold blocks of different lengths (:func:`shard` splits as evenly as possible).
"""

from __future__ import annotations

import datetime
import io
import os
import queue as queue_mod
import struct
import tempfile
import time
import traceback
from typing import Any, Callable, Optional, Sequence, Union

import torch
import torch.distributed as dist

from . import blockwise as BW
from . import functional as AF
from .errors import AttnscopeError, ConfigError, ShapeError, fmt_shape

Tensor = torch.Tensor

#: How long a rank waits for the others (metadata exchange, each block transfer) before giving up.
DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_META_DIMS = 8  # tensors of up to 8 dims
_SEG = _META_DIMS + 1  # per tensor: ndim, then its dims right-aligned, −1 before them
_META_LEN = 8 + 4 * _SEG


class RingTimeout(AttnscopeError, TimeoutError):
    """Another rank did not answer within the time-out (it crashed, hangs, or never called)."""


# ----------------------------------------------------------------------------------------------
# small helpers around torch.distributed
# ----------------------------------------------------------------------------------------------

def _as_timedelta(timeout) -> datetime.timedelta:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return datetime.timedelta(seconds=float(timeout))
    raise ConfigError(f"timeout must be positive seconds or a timedelta, got {timeout!r}")


def _wait(works, timeout: datetime.timedelta, what: str) -> None:
    for w in works:
        try:
            w.wait(timeout=timeout)
        except RuntimeError as e:
            raise RingTimeout(f"ring_attention: {what} did not complete within "
                              f"{timeout.total_seconds():g} s (another rank crashed, hangs, or did not "
                              f"call ring_attention): {str(e).splitlines()[0][:200]}") from None


def _comm_device(group, device: torch.device) -> torch.device:
    """gloo moves CPU tensors; other backends (NCCL) move tensors on the inputs' device."""
    return torch.device("cpu") if dist.get_backend(group) == "gloo" else device


def _group_info(group) -> tuple[int, int]:
    if not dist.is_available() or not dist.is_initialized():
        raise ConfigError("ring_attention needs torch.distributed to be initialised "
                          "(torch.distributed.init_process_group) on every rank")
    return dist.get_rank(group), dist.get_world_size(group)


def _global(group, group_rank: int) -> int:
    return group_rank if group is None else dist.get_global_rank(group, group_rank)


# ----------------------------------------------------------------------------------------------
# metadata exchange: every rank learns every other rank's shapes, or everyone raises
# ----------------------------------------------------------------------------------------------

def _shape_row(t: Optional[Tensor]) -> list[int]:
    if t is None:
        return [-2] * _SEG
    dims = list(t.shape)[-_META_DIMS:]
    return [t.dim()] + [-1] * (_META_DIMS - len(dims)) + dims


def _seg(row: list[int], which: int) -> list[int]:
    """The shape record of tensor ``which`` (0 q, 1 k, 2 v, 3 key_mask) in a metadata row."""
    return row[8 + which * _SEG: 8 + (which + 1) * _SEG]


def _float_bits(x) -> int:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return struct.unpack("<q", struct.pack("<d", float(x)))[0]
    return -1 if x is None else -3  # a tensor temperature: only its presence is compared


def _meta(q, k, v, key_mask, causal, scoring, scale, temperature, ok: bool) -> list[int]:
    dtype = q.dtype if isinstance(q, Tensor) else None
    row = [0 if ok else 1,
           _DTYPES.index(dtype) if dtype in _DTYPES else -1,
           {"cpu": 0, "cuda": 1}.get(q.device.type, 2) if isinstance(q, Tensor) else -1,
           int(bool(causal)),
           AF.SCORINGS.index(scoring) if scoring in AF.SCORINGS else -1,
           _float_bits(scale), _float_bits(temperature), 0]
    for t in (q, k, v, key_mask):
        row += _shape_row(t if isinstance(t, Tensor) else None)
    return row[:_META_LEN] + [0] * (_META_LEN - len(row))


def _exchange_meta(row: list[int], group, world: int, device: torch.device,
                   timeout: datetime.timedelta) -> list[list[int]]:
    mine = torch.tensor(row, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(world)]
    work = dist.all_gather(rows, mine, group=group, async_op=True)
    _wait([work], timeout, "the exchange of shapes between ranks")
    return [r.tolist() for r in rows]


def _describe(row: list[int], which: int) -> str:
    """Shape of tensor ``which`` (0 q, 1 k, 2 v, 3 key_mask) from a metadata row, as text."""
    seg = _seg(row, which)
    if seg[0] == -2:
        return "none"
    return fmt_shape([d for d in seg[1:] if d != -1])


def _check_agreement(rows: list[list[int]], rank: int) -> None:
    """Raise the same ShapeError on every rank if the ranks' inputs do not fit together."""
    bad = [r for r, row in enumerate(rows) if row[0] != 0]
    if bad:
        if rank in bad:
            return  # this rank raises its own, more detailed error
        raise ShapeError(f"ring_attention: rank(s) {', '.join(map(str, bad))} rejected their inputs "
                         f"(see the error there); every rank stops")

    def disagree(what: str, values: Sequence) -> None:
        if len(set(values)) > 1:
            listed = ", ".join(f"rank {r} {v}" for r, v in enumerate(values))
            raise ShapeError(f"ring_attention: ranks disagree on {what}: {listed}")

    disagree("dtype", [_DTYPES[row[1]] if row[1] >= 0 else "?" for row in rows])
    disagree("device type", [["cpu", "cuda", "other"][row[2]] for row in rows])
    disagree("causal", [bool(row[3]) for row in rows])
    disagree("scoring", [AF.SCORINGS[row[4]] for row in rows])
    disagree("scale", [row[5] for row in rows])
    disagree("temperature", [row[6] for row in rows])
    for which, name in enumerate(("q", "k", "v", "key_mask")):
        # Everything but the sequence dim (−2 for q/k/v, −1 for the key mask) must agree.
        seq = -1 if which == 3 else -2

        def key(row, which=which, seq=seq):
            seg = _seg(row, which)
            return (seg[0], tuple(d for i, d in enumerate(seg[1:]) if i != _META_DIMS + seq))
        if len({key(row) for row in rows}) > 1:
            listed = ", ".join(f"rank {r} {_describe(row, which)}" for r, row in enumerate(rows))
            where = "length" if which == 3 else "sequence length (dim −2)"
            raise ShapeError(f"ring_attention: {name} must have the same shape on every rank except the "
                             f"{where}; got {listed}")


# ----------------------------------------------------------------------------------------------
# merging partial results
# ----------------------------------------------------------------------------------------------

def merge_partials(out_a: Tensor, lse_a: Tensor, out_b: Tensor, lse_b: Tensor) -> tuple[Tensor, Tensor]:
    """Combine attention over two disjoint sets of keys into attention over their union.

    ``out_* (..., L, d_v)`` are softmax-weighted values over each set and ``lse_* (..., L)`` the
    log-sum-exp of each set's scores. Overflow-safe (exponents ≤ 0); −∞ and 0 where both sets
    are empty for a query.
    """
    m = torch.maximum(lse_a, lse_b)  # (..., L)
    m = torch.where(torch.isneginf(m), 0.0, m)
    w_a, w_b = torch.exp(lse_a - m), torch.exp(lse_b - m)  # (..., L), each ≤ 1, one of them = 1
    total = w_a + w_b
    empty = total == 0
    total = torch.where(empty, 1.0, total)
    out = (w_a[..., None] * out_a + w_b[..., None] * out_b) / total[..., None]  # (..., L, d_v)
    lse = torch.where(empty, float("-inf"), m + torch.log(total))
    return out, lse


# ----------------------------------------------------------------------------------------------
# the ring
# ----------------------------------------------------------------------------------------------

class _Ring:
    """One rank's view of the ring: who sends to whom, every rank's offsets and lengths."""

    def __init__(self, group, rank: int, world: int, q_lens: list[int], k_lens: list[int], causal: bool,
                 block: tuple[int, int], timeout: datetime.timedelta, comm: torch.device) -> None:
        self.group, self.rank, self.world = group, rank, world
        self.q_lens, self.k_lens = q_lens, k_lens
        self.q_off = [sum(q_lens[:r]) for r in range(world)]
        self.k_off = [sum(k_lens[:r]) for r in range(world)]
        self.causal, self.block, self.timeout, self.comm = causal, block, timeout, comm
        self.next = _global(group, (rank + 1) % world)
        self.prev = _global(group, (rank - 1) % world)

    def visible(self, src: int) -> bool:
        """Does any of this rank's queries see any key of rank src's block?"""
        if self.q_lens[self.rank] == 0 or self.k_lens[src] == 0:
            return False
        return not self.causal or self.k_off[src] <= self.q_off[self.rank] + self.q_lens[self.rank] - 1

    def tiles(self, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor], src: int, base2: bool) -> BW._Tiles:
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
        return BW._Tiles(q, k, v, bias=bias, causal=self.causal, q_pos=q_pos, k_pos=k_pos,
                         block_q=self.block[0], block_k=self.block[1], base2=base2)

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
        _wait(works, self.timeout, what)
        return [b.to(device) for b in bufs]


def _pad_seq(t: Optional[Tensor], n: int, dim: int) -> Optional[Tensor]:
    """Zero-pad dim ``dim`` to length n so that every rank's buffer has one size."""
    if t is None or t.shape[dim] == n:
        return None if t is None else t.contiguous()
    pad_shape = list(t.shape)
    pad_shape[dim] = n - t.shape[dim]
    return torch.cat([t, t.new_zeros(pad_shape)], dim=dim)


def _merge_into(out: Tensor, lse: Tensor, o: Tensor, l: Tensor) -> Tensor:
    """:func:`merge_partials` writing into ``out`` (no copies of the (…, L, d_v) results); → lse."""
    m = torch.maximum(lse, l)
    m = torch.where(torch.isneginf(m), 0.0, m)
    w_a, w_b = torch.exp(lse - m), torch.exp(l - m)  # (..., L), ≤ 1
    total = w_a + w_b
    empty = total == 0
    total = torch.where(empty, 1.0, total)
    out.mul_((w_a / total)[..., None]).add_(o.mul_((w_b / total)[..., None]))
    return torch.where(empty, float("-inf"), m + torch.log(total))


def _ring_forward(R: _Ring, q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                  base2: bool = False) -> tuple[Tensor, Tensor]:
    """out (*lead, L_r, d_v) and lse (*lead, L_r) of this rank's queries over the whole sequence.
    ``base2``: q already carries log₂e (forward only)."""
    s_max = max(R.k_lens)
    block = [_pad_seq(k, s_max, -2), _pad_seq(v, s_max, -2)] + ([] if bias is None else [_pad_seq(bias, s_max, -1)])
    out = lse = None
    for step in range(R.world):
        src = (R.rank - step) % R.world
        pending = R.exchange(block) if step < R.world - 1 else None  # next block, while we compute
        if R.visible(src):
            T = R.tiles(q, block[0], block[1], block[2] if bias is not None else None, src, base2)
            o, l = BW._forward(T)
            if out is None:
                out, lse = o, l
            else:
                lse = _merge_into(out, lse, o, l)
            del T, o
        if pending is not None:
            block = R.finish(*pending, q.device, f"step {step + 1} of the ring (receiving from rank {(R.rank - 1) % R.world})")
    if out is None:  # no key visible at all (an empty block of queries)
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        out = q.new_zeros((*lead, q.shape[-2], v.shape[-1]))
        lse = q.new_full((*lead, q.shape[-2]), float("-inf"))
    return out, lse


def _ring_backward(R: _Ring, q, k, v, bias, out, lse, d_out, d_lse) -> tuple[Tensor, Tensor, Tensor]:
    s_max = max(R.k_lens)
    block = [_pad_seq(k, s_max, -2), _pad_seq(v, s_max, -2)] + ([] if bias is None else [_pad_seq(bias, s_max, -1)])
    dq = torch.zeros_like(q)
    grads = [torch.zeros_like(block[0]), torch.zeros_like(block[1])]  # dK, dV of the block held
    for step in range(R.world):
        src = (R.rank - step) % R.world
        pending = R.exchange(block) if step < R.world - 1 else None
        if R.visible(src):
            T = R.tiles(q, block[0], block[1], block[2] if bias is not None else None, src, False)
            dq_s, dk_s, dv_s = BW._backward(T, out, lse, d_out, d_lse)  # this block's share
            n = R.k_lens[src]
            dq += dq_s.sum_to_size(dq.shape)
            grads[0][..., :n, :] += dk_s.sum_to_size((*k.shape[:-2], n, k.shape[-1]))
            grads[1][..., :n, :] += dv_s.sum_to_size((*v.shape[:-2], n, v.shape[-1]))
        if pending is not None:
            block = R.finish(*pending, q.device, f"step {step + 1} of the backward ring")
        # The accumulators follow their block to the next rank; after the last step that is home.
        sent = R.exchange(grads)
        grads = R.finish(*sent, q.device, f"step {step + 1} of the backward ring (gradients)")
    n = R.k_lens[R.rank]
    return dq, grads[0][..., :n, :], grads[1][..., :n, :]


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, R):
        with torch.no_grad():
            out, lse = _ring_forward(R, q, k, v, bias)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.bias, ctx.R = bias, R
        return out, lse

    @staticmethod
    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        if d_out is None:
            d_out = torch.zeros_like(out)
        with torch.no_grad():
            dq, dk, dv = _ring_backward(ctx.R, q, k, v, ctx.bias, out, lse, d_out, d_lse)
        return dq, dk, dv, None, None


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------

def ring_attention(q: Tensor, k: Tensor, v: Tensor, group=None, causal: bool = False, *,
                   key_mask: Optional[Tensor] = None, scale: Optional[float] = None,
                   scoring: str = "scaled", temperature: Union[None, float, Tensor] = None,
                   block_size: Union[None, int, tuple[int, int]] = None,
                   timeout: Union[None, float, datetime.timedelta] = None, return_lse: bool = False):
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
        block_size: tile sizes of the blockwise kernel each rank runs.
        timeout: seconds (or timedelta) to wait for the other ranks at each exchange before
            raising :class:`RingTimeout`; default :data:`DEFAULT_TIMEOUT`.
        return_lse: also return the log-sum-exp per query ``(..., L_r)``.
    Returns:
        ``out (..., L_r, d_v)`` (or ``(out, lse)``), differentiable: the backward runs the ring
        again, so every rank must call backward too.
    Raises:
        ShapeError on every rank when the ranks' shapes, dtypes or options disagree;
        RingTimeout when a rank does not answer in time.
    """
    rank, world = _group_info(group)
    timeout = _as_timedelta(timeout)
    # Validate locally but raise only after the exchange, so the other ranks learn of it too.
    local_error: Optional[Exception] = None
    try:
        AF.check_qkv(q, k, v)
        AF.check_scoring(scoring)
        if q.dim() > _META_DIMS or k.dim() > _META_DIMS or v.dim() > _META_DIMS:
            raise ShapeError(f"ring_attention supports tensors of up to {_META_DIMS} dims")
        if q.dtype not in _DTYPES:
            raise ShapeError(f"ring_attention supports {', '.join(map(str, _DTYPES))}, got {q.dtype}")
        if key_mask is not None:
            if not isinstance(key_mask, Tensor) or (key_mask.dtype != torch.bool and not key_mask.is_floating_point()):
                raise ShapeError("key_mask must be a bool (True = attend) or float tensor (..., S_r)")
            if key_mask.dim() == 0 or key_mask.shape[-1] != k.shape[-2]:
                raise ShapeError(f"key_mask must have shape (..., S_r={k.shape[-2]}) for k {fmt_shape(k.shape)}, "
                                 f"got {fmt_shape(key_mask.shape)}")
            AF._broadcast_or_raise("leading dims of key_mask and q, k, v", key_mask.shape[:-1], q.shape[:-2], k.shape[:-2])
        if isinstance(temperature, Tensor) and temperature.dim() >= 1 and temperature.shape[-1] != 1:
            raise ShapeError(f"ring_attention needs a temperature that is constant over keys (last dim 1), "
                             f"got shape {fmt_shape(temperature.shape)}")
        bq, bk = BW._block_sizes(block_size)
    except AttnscopeError as e:
        local_error = e
        bq = bk = 1
    row = _meta(q, k, v, key_mask, causal, scoring, scale, temperature, ok=local_error is None)
    comm = _comm_device(group, q.device if isinstance(q, Tensor) else torch.device("cpu"))
    rows = _exchange_meta(row, group, world, comm, timeout)
    if local_error is not None:
        raise local_error
    _check_agreement(rows, rank)

    q_lens = [_seg(row, 0)[-2] for row in rows]  # every rank's L_r (dim −2 of q)
    k_lens = [_seg(row, 1)[-2] for row in rows]  # every rank's S_r
    R = _Ring(group, rank, world, q_lens, k_lens, causal, (bq, bk), timeout, comm)

    cdt = BW._compute_dtype(q.dtype)
    qn, kn = AF.prepare_qk(q.to(cdt), k.to(cdt), scoring)
    factor = AF.score_factor(scoring, q.shape[-1], scale, temperature)
    if isinstance(factor, Tensor):
        factor = BW._as_2d(factor.to(device=q.device, dtype=cdt))
    qn = qn * factor  # (..., L_r, d_k): the factor is constant over keys, it goes on q
    bias = None
    if key_mask is not None:
        key_mask = key_mask.to(q.device)
        bias = (torch.zeros(key_mask.shape, dtype=cdt, device=q.device).masked_fill(~key_mask, float("-inf"))
                if key_mask.dtype == torch.bool else key_mask.to(cdt))  # (..., S_r), added to scores
    vn = v.to(cdt)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (qn, kn, vn)):
        out, lse = _RingAttention.apply(qn, kn, vn, bias, R)
    else:
        with torch.no_grad():
            out, lse = _ring_forward(R, qn.mul_(BW.LOG2E), kn, vn, bias, base2=True)
    out = out.to(q.dtype)
    return (out, lse) if return_lse else out


def shard(x: Tensor, dim: int = -2, group=None) -> Tensor:
    """This rank's contiguous block of ``x`` along ``dim`` (as even as possible: the first
    ``n % P`` ranks get one more), the split :func:`ring_attention` expects. A view."""
    rank, world = _group_info(group)
    return torch.tensor_split(x, world, dim=dim)[rank]


def gather(x: Tensor, dim: int = -2, group=None, timeout=None) -> Tensor:
    """Concatenate every rank's block along ``dim`` in rank order (blocks may differ in length)."""
    rank, world = _group_info(group)
    timeout = _as_timedelta(timeout)
    comm = _comm_device(group, x.device)
    dim = dim % x.dim()
    n = torch.tensor([x.shape[dim]], device=comm)
    lens = [torch.empty_like(n) for _ in range(world)]
    _wait([dist.all_gather(lens, n, group=group, async_op=True)], timeout, "gather (lengths)")
    lens = [int(t) for t in lens]
    padded = _pad_seq(x.to(comm), max(lens), dim)
    parts = [torch.empty_like(padded) for _ in range(world)]
    _wait([dist.all_gather(parts, padded, group=group, async_op=True)], timeout, "gather")
    return torch.cat([p.narrow(dim, 0, n_r) for p, n_r in zip(parts, lens)], dim=dim).to(x.device)


# ----------------------------------------------------------------------------------------------
# running a function on P local processes (tests, benchmarks, trying ring attention on one box)
# ----------------------------------------------------------------------------------------------

def _child(rank: int, fn: Callable, world: int, args: tuple, backend: str, init_file: str,
           threads: Optional[int], results) -> None:
    try:
        if threads:
            torch.set_num_threads(threads)
        dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        try:
            value = fn(rank, world, *args)
        finally:
            dist.destroy_process_group()
        buf = io.BytesIO()
        torch.save(value, buf)
        results.put((rank, True, buf.getvalue()))
    except BaseException as e:  # report everything, the parent raises
        results.put((rank, False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def run_local(fn: Callable, world_size: int, args: tuple = (), *, backend: str = "gloo",
              timeout: float = 120.0, threads: Optional[int] = 1) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` fresh local processes joined in a
    process group, and return their results in rank order.

    ``fn`` must be importable (a module-level function); results are anything ``torch.save``
    can write. Each process uses ``threads`` intra-op threads. Raises RuntimeError naming the
    rank and its error if one fails, and :class:`RingTimeout` (after killing them all) if they
    have not finished within ``timeout`` seconds.
    """
    if world_size < 1:
        raise ConfigError(f"world_size must be ≥ 1, got {world_size}")
    import torch.multiprocessing as mp
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "attnscope.distributed"])
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="attnscope-ring-") as tmp:
        init_file = os.path.join(tmp, "rendezvous")
        procs = [ctx.Process(target=_child, args=(r, fn, world_size, args, backend, init_file, threads, results),
                             daemon=True) for r in range(world_size)]
        for p in procs:
            p.start()
        got: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        try:
            while len(got) < world_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RingTimeout(f"run_local: ranks {sorted(set(range(world_size)) - set(got))} did not "
                                      f"finish within {timeout:g} s")
                try:
                    rank, ok, payload = results.get(timeout=min(left, 1.0))
                except queue_mod.Empty:
                    dead = [r for r, p in enumerate(procs) if not p.is_alive() and p.exitcode not in (0, None)
                            and r not in got]
                    if dead:
                        raise RuntimeError(f"run_local: rank {dead[0]} died with exit code {procs[dead[0]].exitcode}")
                    continue
                if not ok:
                    raise RuntimeError(f"run_local: rank {rank} failed: {payload}")
                got[rank] = torch.load(io.BytesIO(payload), weights_only=False)
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join()
    return [got[r] for r in range(world_size)]
