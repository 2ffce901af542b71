"""Ring attention's public functions: :func:`ring_attention` (validation on every rank, the metadata
exchange, preparation by the scoring, then the passes of :mod:`.ring`), :func:`shard` and
:func:`gather`."""

from __future__ import annotations

import datetime
from typing import Optional, Union

import torch
import torch.distributed as dist

from ...errors import AttnscopeError, ConfigError, ShapeError, fmt_shape
from ...i18n import error
from ...scorings import get_scoring
from .. import fused
from ..blockwise.api import check_kernel, repeat_kv
from ..blockwise.prepare import block_sizes, compute_dtype
from ..blockwise.tiles import LOG2E
from ..qk import as_2d, prepare
from ..validate import (
    LEAD_KEY_MASK,
    broadcast_or_raise,
    check_flag,
    check_qkv,
    check_scale,
    check_temperature,
    kv_groups,
)
from .protocol import (
    DTYPES,
    GATHER,
    GATHER_LENGTHS,
    META_DIMS,
    as_timedelta,
    check_agreement,
    comm_device,
    exchange_meta,
    group_info,
    meta_row,
    seg,
    wait_all,
)
from .ring import Ring, RingAttentionFn, n_head_chunks, pad_seq, ring_forward_heads

Tensor = torch.Tensor


def ring_attention(q: Tensor, k: Tensor, v: Tensor, group=None, causal: bool = False, *,
                   key_mask: Optional[Tensor] = None, scale: Optional[float] = None,
                   scoring: str = "scaled", temperature: Union[None, float, Tensor] = None,
                   block_size: Union[None, int, tuple[int, int]] = None,
                   timeout: Union[None, float, datetime.timedelta] = None, return_lse: bool = False,
                   kernel: str = "auto", head_chunks: Optional[int] = None):
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
        head_chunks: run the ring over this many groups of heads (dim −3) one after the other,
            so that the two K/V blocks a rank holds at once, and the partial result, are that
            much smaller; default: 4 where a rank's K/V block reaches 4 MiB, else 1. Must
            agree across ranks.
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
        check_temperature(temperature, get_scoring(scoring), scale)  # ConfigError listing the choices first
        check_scale(scale)
        causal, return_lse = check_flag(causal), check_flag(return_lse, "return_lse")
        if q.dim() > META_DIMS or k.dim() > META_DIMS or v.dim() > META_DIMS:
            raise error(ShapeError, "errors.kernel_ring_dims", n=META_DIMS)
        if q.dtype not in DTYPES:
            raise error(ShapeError, "errors.kernel_ring_dtype", dtypes=", ".join(map(str, DTYPES)), dtype=q.dtype)
        if key_mask is not None:
            if not isinstance(key_mask, Tensor) or (key_mask.dtype != torch.bool and not key_mask.is_floating_point()):
                raise error(ShapeError, "errors.kernel_ring_key_mask_dtype")
            if key_mask.dim() == 0 or key_mask.shape[-1] != k.shape[-2]:
                raise error(ShapeError, "errors.kernel_ring_key_mask_shape", S=k.shape[-2], k=fmt_shape(k.shape),
                            got=fmt_shape(key_mask.shape))
            broadcast_or_raise(LEAD_KEY_MASK, key_mask.shape[:-1], q.shape[:-2], k.shape[:-2])
        if isinstance(temperature, Tensor) and temperature.dim() >= 1 and temperature.shape[-1] != 1:
            raise error(ShapeError, "errors.kernel_ring_temperature", shape=fmt_shape(temperature.shape))
        bq, bk = block_sizes(block_size)
        check_kernel(kernel)
        if head_chunks is not None and (not isinstance(head_chunks, int) or isinstance(head_chunks, bool)
                                        or head_chunks < 1):
            raise error(ConfigError, "errors.kernel_ring_head_chunks", value=repr(head_chunks))
        if kernel == "fused" and not fused.flash_lse_ok(q, repeat_kv(k, kv_groups(q, k)), repeat_kv(v, kv_groups(q, k))):
            raise error(ConfigError, "errors.kernel_ring_fused", dtype=q.dtype, device=q.device.type,
                        q=fmt_shape(q.shape), k=fmt_shape(k.shape), v=fmt_shape(v.shape))
    except AttnscopeError as e:
        local_error = e
        bq = bk = 1
    row = meta_row(q, k, v, key_mask, causal, scoring, scale, temperature, ok=local_error is None,
                   head_chunks=head_chunks if isinstance(head_chunks, int) and head_chunks > 0 else 0)
    comm = comm_device(group, q.device if isinstance(q, Tensor) else torch.device("cpu"))
    rows = exchange_meta(row, group, world, comm, timeout)
    if local_error is not None:
        raise local_error
    check_agreement(rows, rank)

    q_lens = [seg(row, 0)[-2] for row in rows]  # every rank's L_r (dim −2 of q)
    k_lens = [seg(row, 1)[-2] for row in rows]  # every rank's S_r
    g = kv_groups(q, k)  # grouped-query heads: each k/v head repeated for the query heads it serves,
    k, v = repeat_kv(k, g), repeat_kv(v, g)  # as blockwise_attention does (autograd sums dK, dV back)
    cdt = compute_dtype(q.dtype)
    p = prepare(q.to(cdt), k.to(cdt), scoring, scale=scale, temperature=temperature)
    vn = v.to(cdt)
    use_fused = kernel != "online" and fused.flash_lse_ok(p.q, p.k, vn)
    if use_fused and not isinstance(p.factor, Tensor):
        qn, kn, sc = p.q, p.k, p.factor  # the factor is the kernel's scale: no scaled copy of q
    else:  # the factor is constant over keys: it goes on q
        qn, kn, sc = p.q * (as_2d(p.factor) if isinstance(p.factor, Tensor) else p.factor), p.k, 1.0  # (..., L_r, d_k)
    if use_fused and q.dtype != cdt:  # half inputs: the half kernel (SDPA's speed), merged in float32
        qn, kn, vn = qn.to(q.dtype), kn.to(q.dtype), v
    bias = None
    if key_mask is not None:
        key_mask = key_mask.to(q.device)
        bias = (torch.zeros(key_mask.shape, dtype=cdt, device=q.device).masked_fill(~key_mask, float("-inf"))
                if key_mask.dtype == torch.bool else key_mask.to(cdt))  # (..., S_r), added to scores
    lead = torch.broadcast_shapes(qn.shape[:-2], kn.shape[:-2], vn.shape[:-2], *([] if bias is None else [bias.shape[:-1]]))
    chunks = n_head_chunks(head_chunks, lead, max(k_lens), kn.shape[-1] + vn.shape[-1], vn.element_size())
    R = Ring(group, rank, world, q_lens, k_lens, causal, (bq, bk), timeout, comm, use_fused=use_fused, scale=sc,
             chunks=chunks)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (qn, kn, vn)):
        out, lse = RingAttentionFn.apply(qn, kn, vn, bias, R)
    else:
        with torch.no_grad():
            if use_fused:
                out, lse = ring_forward_heads(R, qn, kn, vn, bias)
            else:
                qn = qn.mul_(LOG2E) if qn is not q else qn * LOG2E
                out, lse = ring_forward_heads(R, qn, kn, vn, bias, base2=True)
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
    wait_all([dist.all_gather(lens, n, group=group, async_op=True)], timeout, GATHER_LENGTHS)
    sizes = [int(t) for t in lens]
    padded = pad_seq(x.to(comm), max(sizes), dim)
    parts = [torch.empty_like(padded) for _ in range(world)]
    wait_all([dist.all_gather(parts, padded, group=group, async_op=True)], timeout, GATHER)
    return torch.cat([p.narrow(dim, 0, n_r) for p, n_r in zip(parts, sizes)], dim=dim).to(x.device)
