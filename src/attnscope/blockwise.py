"""Exact attention in O(L·d) memory: the online softmax of FlashAttention, written in PyTorch.

The dense path builds the whole ``(L, S)`` score matrix. Here the queries are cut into tiles of
``block_q`` rows and the keys into tiles of ``block_k`` columns; for one query tile the key tiles
are visited in turn while three running quantities are kept per query row:

    m    the largest score seen so far                      (..., bq)
    l    Σ exp(score − m) over the keys seen so far           (..., bq)
    acc  Σ exp(score − m) · v over the keys seen so far       (..., bq, d_v)

When a new tile raises the maximum from m to m', the old sums are rescaled by exp(m − m'), so that
every exp is taken of a number ≤ 0 (never overflows) and the result is exactly softmax · V:

    out = acc / l,      lse = m + log l   (= log Σ_j exp(score_j), the log-sum-exp per query)

The exponentials are taken in base 2 (log₂e is folded into q once): ``exp2`` is about 2.5× faster
than ``exp`` on CPU and just as accurate, and exp is most of the non-matmul work. Only one
``(bq, bk)`` tile of scores exists at a time. Causal tiles entirely above the diagonal
are skipped. A query that may look at no key keeps m = −∞, l = 0 and gets output 0 and lse = −∞
(never NaN), as the dense path does.

The backward pass is FlashAttention's too: nothing of size L×S is stored, the tiles of
probabilities are recomputed from q, k and the saved lse, P = exp(S − lse).

:func:`attention_weights` uses the same machinery to return selected softmax rows (some heads,
some queries) of a long input without building the others: one pass for their lse, one that
writes exp(score − lse).
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence, Union

import torch
import torch.nn.functional as F

from .errors import ConfigError, InputError, ShapeError, fmt_shape
from . import functional as AF

Tensor = torch.Tensor

#: Default tile sizes (queries, keys): a 256 × 256 float32 tile of one head is 256 KiB, which stays
#: in a core's L2 cache between the few elementwise passes made over it.
DEFAULT_BLOCK = (256, 256)

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_NEG_INF = float("-inf")
LOG2E = 1.0 / math.log(2.0)  # scores × log₂e → exp(s) = exp2(s · log₂e)
LN2 = math.log(2.0)

Index = Union[None, int, slice, range, Sequence[int], Tensor]


# ----------------------------------------------------------------------------------------------
# the problem, prepared once
# ----------------------------------------------------------------------------------------------

class _Tiles:
    """Everything a tile of scores needs, prepared once: operands, masks and tile boundaries.

    ``q`` already carries the scoring's factor (and normalisation); scores are ``q @ kᵀ``, times
    ``mult`` where the factor varies over keys, with ``bias`` added and ``blocked`` set to −∞.
    :meth:`scores` returns them times log₂e (base-2 scores). Causality compares global
    positions: key j is visible to query i iff k_pos[j] ≤ q_pos[i].
    """

    def __init__(self, q: Tensor, k: Tensor, v: Optional[Tensor], *, blocked: Optional[Tensor] = None,
                 bias: Optional[Tensor] = None, mult: Optional[Tensor] = None, causal: bool = False,
                 q_pos: Optional[Tensor] = None, k_pos: Optional[Tensor] = None,
                 block_q: int = DEFAULT_BLOCK[0], block_k: int = DEFAULT_BLOCK[1], base2: bool = False) -> None:
        self.q, self.k, self.v = q, k, v  # (*lead, L, d), (*lead, S, d), (*lead, S, d_v)
        # q × log₂e gives base-2 scores straight out of the matmul. ``base2``: q already carries
        # it (forward only; the backward needs the natural q, and one copy fewer is held).
        self.base2 = base2
        self.q2 = q if base2 else q * LOG2E  # (*lead, L, d)
        self.blocked, self.bias, self.mult = blocked, bias, mult  # broadcastable to (*lead, L, S)
        self.causal = causal
        L, S = q.shape[-2], k.shape[-2]
        self.L, self.S = L, S
        self.q_tiles = [(i, min(i + block_q, L)) for i in range(0, L, block_q)]
        self.k_tiles = [(j, min(j + block_k, S)) for j in range(0, S, block_k)]
        self.q_pos = self.k_pos = None
        if causal:
            dev = q.device
            self.q_pos = torch.arange(L, device=dev) if q_pos is None else q_pos.to(dev)  # (L,)
            self.k_pos = torch.arange(S, device=dev) if k_pos is None else k_pos.to(dev)  # (S,)
            # Per-tile extremes, fetched once so that skipping a tile costs no device sync.
            qp, kp = self.q_pos.tolist(), self.k_pos.tolist()
            self._q_lo = [min(qp[a:b]) for a, b in self.q_tiles]
            self._q_hi = [max(qp[a:b]) for a, b in self.q_tiles]
            self._k_lo = [min(kp[a:b]) for a, b in self.k_tiles]
            self._k_hi = [max(kp[a:b]) for a, b in self.k_tiles]

    def relation(self, ti: int, tj: int) -> str:
        """"skip" (no key of tile tj visible to any query of ti), "full" (all visible), "part"."""
        if not self.causal:
            return "full"
        if self._k_lo[tj] > self._q_hi[ti]:
            return "skip"
        if self._k_hi[tj] <= self._q_lo[ti]:
            return "full"
        return "part"

    def scores(self, ti: int, tj: int, rel: str) -> Tensor:
        """The tile of masked, scaled scores × log₂e ``(*lead, bq, bk)``; fresh memory."""
        (i0, i1), (j0, j1) = self.q_tiles[ti], self.k_tiles[tj]
        s = torch.matmul(self.q2[..., i0:i1, :], self.k[..., j0:j1, :].transpose(-2, -1))  # (*lead, bq, bk)
        grad = s.requires_grad
        if self.mult is not None:
            s = s * _tile(self.mult, i0, i1, j0, j1)
        if self.bias is not None:
            b = _tile(self.bias, i0, i1, j0, j1)
            s = s + b * LOG2E if grad else s.add_(b, alpha=LOG2E)
        if self.blocked is not None:
            b = _tile(self.blocked, i0, i1, j0, j1)
            s = s.masked_fill(b, _NEG_INF) if grad else s.masked_fill_(b, _NEG_INF)
        if rel == "part":
            future = self.k_pos[j0:j1][None, :] > self.q_pos[i0:i1][:, None]  # (bq, bk)
            s = s.masked_fill(future, _NEG_INF) if grad else s.masked_fill_(future, _NEG_INF)
        return s


def _tile(t: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """Rows i0:i1 and columns j0:j1 of a tensor broadcastable to (..., L, S) (size-1 dims kept)."""
    if t.shape[-2] != 1:
        t = t[..., i0:i1, :]
    if t.shape[-1] != 1:
        t = t[..., j0:j1]
    return t


# ----------------------------------------------------------------------------------------------
# forward and backward over the tiles
# ----------------------------------------------------------------------------------------------

def _forward(T: _Tiles, dropout_p: float = 0.0) -> tuple[Optional[Tensor], Tensor]:
    """Online softmax over the key tiles of every query tile → ``out (*lead, L, d_v)`` (None
    without v) and ``lse (*lead, L)``. Differentiable by autograd when the inputs need it (then
    every tile's probabilities are kept by autograd; :class:`_Blockwise` avoids that)."""
    if torch.is_grad_enabled() or dropout_p > 0.0:
        parts = [_forward_tile(T, ti, dropout_p) for ti in range(len(T.q_tiles))]
        lse = torch.cat([p[1] for p in parts], dim=-1)  # (*lead, L)
        out = torch.cat([p[0] for p in parts], dim=-2) if T.v is not None else None  # (*lead, L, d_v)
        return out, lse
    # No autograd: every tile writes its rows of preallocated results, side by side if possible.
    lead, L = T.q.shape[:-2], T.L
    lse = torch.empty((*lead, L), dtype=T.q.dtype, device=T.q.device)  # (*lead, L)
    out = None if T.v is None else torch.empty((*lead, L, T.v.shape[-1]), dtype=T.q.dtype, device=T.q.device)

    def run(ti: int) -> None:
        i0, i1 = T.q_tiles[ti]
        o, l = _forward_tile(T, ti, 0.0)
        lse[..., i0:i1] = l
        if out is not None:
            out[..., i0:i1, :] = o
    _map_query_tiles(run, T, parallel=True)
    return out, lse


def _forward_tile(T: _Tiles, ti: int, dropout_p: float) -> tuple[Optional[Tensor], Tensor]:
    """The recurrence for query tile ti: ``out (*lead, bq, d_v)`` (or None), ``lse (*lead, bq)``."""
    i0, i1 = T.q_tiles[ti]
    lead, n = T.q.shape[:-2], i1 - i0
    dtype, dev = T.q.dtype, T.q.device
    m = torch.full((*lead, n), _NEG_INF, dtype=dtype, device=dev)  # running max (*lead, bq), base 2
    l = torch.zeros((*lead, n), dtype=dtype, device=dev)  # running Σ 2^(s − m)
    acc = None if T.v is None else torch.zeros((*lead, n, T.v.shape[-1]), dtype=dtype, device=dev)
    for tj, (j0, j1) in enumerate(T.k_tiles):
        rel = T.relation(ti, tj)
        if rel == "skip":
            continue
        s = T.scores(ti, tj, rel)  # (*lead, bq, bk)
        grad = s.requires_grad
        # The max only keeps exp in range; the result does not depend on it, so no gradient.
        m_new = torch.maximum(m, s.detach().amax(dim=-1))  # (*lead, bq)
        shift = torch.where(torch.isneginf(m_new), 0.0, m_new)  # rows with nothing visible yet
        p = torch.exp2(s - shift[..., None]) if grad else torch.exp2(s.sub_(shift[..., None]), out=s)  # (*lead, bq, bk)
        alpha = torch.exp2(m - shift)  # rescales the old sums to the new max; 0 while m = −∞
        l = l * alpha + p.sum(dim=-1)
        if acc is not None:
            pv = F.dropout(p, p=dropout_p) if dropout_p > 0.0 else p
            acc = acc * alpha[..., None] + torch.matmul(pv, T.v[..., j0:j1, :])  # (*lead, bq, d_v)
        m = m_new
    empty = l == 0  # queries that could see no key
    l_safe = torch.where(empty, 1.0, l)
    shift = torch.where(torch.isneginf(m), 0.0, m)
    lse = torch.where(empty, _NEG_INF, (shift + torch.log2(l_safe)) * LN2)  # (*lead, bq), natural log
    return (None if acc is None else acc / l_safe[..., None]), lse  # out 0 where empty


# ----------------------------------------------------------------------------------------------
# parallel over query tiles
# ----------------------------------------------------------------------------------------------
#
# Query tiles are independent, so they can run side by side, each on one core with
# single-threaded ops — the way the fused kernels split their work. Leaving the parallelism to
# each op instead (torch's default) puts an OpenMP barrier after every small op on a tile; where
# the cores are shared that costs several times the arithmetic (measured: 4-6× slower at 2
# threads on this project's busy 2-core machine, against 1.2-1.6× SDPA's time with the tiles
# spread over threads).

_POOLS: dict[int, Optional[ThreadPoolExecutor]] = {}
_POOL_LOCK = threading.Lock()
_POOL_PID = os.getpid()  # a forked child inherits the dict but not the threads: start afresh


def _tile_pool(n: int) -> Optional[ThreadPoolExecutor]:
    """n worker threads whose torch ops run on one thread each; None where that cannot be set.

    OpenMP keeps the thread count per thread: a worker's first torch call copies the process
    default, ``torch.set_num_threads(1)`` then lowers its own. That call also lowers the process
    default, which is restored once every worker has started.
    """
    global _POOL_PID
    with _POOL_LOCK:
        if _POOL_PID != os.getpid():
            _POOLS.clear()
            _POOL_PID = os.getpid()
        if n in _POOLS:
            return _POOLS[n]
        if "OpenMP" not in torch.__config__.parallel_info():
            _POOLS[n] = None  # other backends have one process-wide pool: leave it alone
            return None
        before = torch.get_num_threads()
        started = threading.Barrier(n + 1)

        def init() -> None:
            torch.get_num_threads()
            torch.set_num_threads(1)
            started.wait()
        pool = ThreadPoolExecutor(n, thread_name_prefix="attnscope-tiles", initializer=init)
        for _ in range(n):  # a pool starts its threads on demand: make it start all n now
            pool.submit(lambda: None)
        started.wait()
        torch.set_num_threads(before)
        _POOLS[n] = pool
        return pool


def _map_query_tiles(fn: Callable[[int], Any], T: _Tiles, parallel: bool) -> list:
    """``[fn(ti) for every query tile]``, spread over torch's thread count when that helps."""
    n_tiles = len(T.q_tiles)
    threads = torch.get_num_threads()
    work = T.q.shape[:-2].numel() * T.L * T.S
    pool = None
    if parallel and threads > 1 and n_tiles >= threads and work >= _PARALLEL_MIN_WORK \
            and T.q.device.type == "cpu" and not _in_pool():
        pool = _tile_pool(threads)
    if pool is None:
        return [fn(ti) for ti in range(n_tiles)]

    def task(ti: int):
        with torch.no_grad():  # grad mode is per thread
            return fn(ti)
    # Causal: later tiles see more keys; handing the tiles out one by one balances the load.
    return list(pool.map(task, range(n_tiles)))


#: Below this many scores (lead · L · S) the tiles run one after the other.
_PARALLEL_MIN_WORK = 1 << 22


def _in_pool() -> bool:
    return threading.current_thread().name.startswith("attnscope-tiles")


def _backward(T: _Tiles, out: Tensor, lse: Tensor, d_out: Optional[Tensor],
              d_lse: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of q, k, v from the saved ``out`` and ``lse``, recomputing each tile.

    With P = exp(S − lse) the softmax tile, dV = Pᵀ dO, dP = dO Vᵀ and
    dS = P ∘ (dP − D + d_lse) where D = rowsum(dO ∘ O); then dQ = dS K and dK = dSᵀ Q.
    """
    assert not T.base2, "the backward needs the natural q"
    q, k, v = T.q, T.k, T.v
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
        for tj, (j0, j1) in enumerate(T.k_tiles):
            rel = T.relation(ti, tj)
            if rel == "skip":
                continue
            s = T.scores(ti, tj, rel)
            p = torch.exp2(s.sub_(lse_fix[..., i0:i1, None]), out=s)  # (*lead, bq, bk)
            dv[..., j0:j1, :] += torch.matmul(p.transpose(-2, -1), do_i)
            dp = torch.matmul(do_i, v[..., j0:j1, :].transpose(-2, -1))  # (*lead, bq, bk)
            ds = p.mul_(dp.sub_(D[..., i0:i1, None]))  # (*lead, bq, bk), w.r.t. the scaled scores
            if T.mult is not None:
                ds = ds * _tile(T.mult, i0, i1, j0, j1)  # chain rule through s = (q kᵀ) ∘ mult
            dq[..., i0:i1, :] += torch.matmul(ds, k[..., j0:j1, :])
            dk[..., j0:j1, :] += torch.matmul(ds.transpose(-2, -1), q[..., i0:i1, :])
    return dq, dk, dv


class _Blockwise(torch.autograd.Function):
    """Blockwise attention with the memory-light FlashAttention backward.

    Inputs q, k, v must already be expanded to one leading shape; masks carry no gradient.
    """

    @staticmethod
    def forward(ctx, q, k, v, spec):
        T = _Tiles(q, k, v, **spec)
        with torch.no_grad():
            out, lse = _forward(T)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.spec = spec
        return out, lse

    @staticmethod
    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        T = _Tiles(q, k, v, **ctx.spec)
        with torch.no_grad():
            dq, dk, dv = _backward(T, out, lse, d_out, d_lse)
        return dq, dk, dv, None


# ----------------------------------------------------------------------------------------------
# preparing q, k, masks and factors from attention()'s arguments
# ----------------------------------------------------------------------------------------------

def _as_2d(t: Tensor) -> Tensor:
    """A tensor broadcastable to (..., L, S) with at least those two dims."""
    return t.reshape((1,) * (2 - t.dim()) + tuple(t.shape)) if t.dim() < 2 else t


def _block_sizes(block_size) -> tuple[int, int]:
    if block_size is None:
        return DEFAULT_BLOCK
    if isinstance(block_size, int) and not isinstance(block_size, bool):
        pair = (block_size, block_size)
    elif isinstance(block_size, (tuple, list)) and len(block_size) == 2:
        pair = tuple(block_size)
    else:
        raise ConfigError(f"block_size must be an int or a pair (block_q, block_k), got {block_size!r}")
    if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in pair):
        raise ConfigError(f"block sizes must be positive integers, got {block_size!r}")
    return pair  # type: ignore[return-value]


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # Half precision exp/sums lose too much over thousands of keys: accumulate in float32.
    return torch.float32 if dtype in _LOW_PRECISION else dtype


def _prepare(q: Tensor, k: Tensor, v: Optional[Tensor], mask: Optional[Tensor], *, scale, scoring: str,
             temperature, base2: bool = False) -> tuple[Tensor, Tensor, Optional[Tensor], dict, torch.Size]:
    """Normalise and scale q, split the mask into bool/additive parts, expand to the common lead.

    Returns ``q (*lead, L, d)`` carrying the factor (and log₂e too with ``base2``), ``k``, ``v``,
    the mask/factor parts for :class:`_Tiles`, and ``lead``.
    """
    c = LOG2E if base2 else 1.0
    L, S = q.shape[-2], k.shape[-2]
    cdt = _compute_dtype(q.dtype)
    qn, kn = AF.prepare_qk(q.to(cdt), k.to(cdt), scoring)
    factor = AF.score_factor(scoring, q.shape[-1], scale, temperature)
    shapes = [q.shape[:-2], k.shape[:-2]] + ([v.shape[:-2]] if v is not None else [])
    mult = None
    if isinstance(factor, torch.Tensor):
        factor = _as_2d(factor.to(device=q.device, dtype=cdt))
        try:
            full = torch.broadcast_shapes(factor.shape, (*torch.broadcast_shapes(*shapes), L, S))
        except RuntimeError:
            full = None
        if full is None or tuple(full[-2:]) != (L, S):
            raise ShapeError(f"temperature of shape {fmt_shape(factor.shape)} does not broadcast to the "
                             f"scores' shape (..., L={L}, S={S})")
        shapes.append(factor.shape[:-2])
        if factor.shape[-1] == 1:
            qn = qn * (factor * c)  # constant over keys: fold into q, L·d multiplies instead of L·S
        else:
            mult = factor  # varies over keys: multiply each score tile
            qn = qn * c
    else:
        qn = qn * (factor * c)
    blocked = bias = None
    if mask is not None:
        mask = _as_2d(mask.to(q.device))
        shapes.append(mask.shape[:-2])
        if mask.dtype == torch.bool:
            blocked = ~mask  # True = may not attend
        else:
            bias = mask.to(cdt)
    lead = torch.broadcast_shapes(*shapes)
    qn = qn.expand(*lead, L, qn.shape[-1])
    kn = kn.expand(*lead, S, kn.shape[-1])
    if v is not None:
        v = v.to(cdt).expand(*lead, S, v.shape[-1])
    return qn, kn, v, {"blocked": blocked, "bias": bias, "mult": mult}, lead


def _check_common(q: Tensor, k: Tensor, mask: Optional[Tensor], scoring: str) -> None:
    AF.check_scoring(scoring)
    lead = AF._broadcast_or_raise("leading dims of q, k", q.shape[:-2], k.shape[:-2])
    AF.check_mask(mask, q.shape[-2], k.shape[-2], lead)


# ----------------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------------

def blockwise_attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *,
                        causal: bool = False, scale: Optional[float] = None, scoring: str = "scaled",
                        temperature: Union[None, float, Tensor] = None, dropout_p: float = 0.0,
                        block_size: Union[None, int, tuple[int, int]] = None, return_lse: bool = False):
    """Exact attention, same arguments and result as :func:`attnscope.attention`, in O(L·d) memory.

    Args:
        q, k, v: ``(..., L, d_k)``, ``(..., S, d_k)``, ``(..., S, d_v)``.
        mask: bool (True = attend) or float (added to the scaled scores), broadcastable to
            ``(..., L, S)``; sliced tile by tile, never expanded.
        causal: query i sees keys 0..i (top-left aligned, as SDPA's ``is_causal``).
        scale, scoring, temperature: as in :func:`attnscope.attention`.
        dropout_p: dropout on the probabilities (training only; the backward then goes through
            autograd and keeps every tile, O(L·S) memory).
        block_size: ``block_q`` = ``block_k`` (int) or ``(block_q, block_k)``; default 256 × 256.
        return_lse: also return the log-sum-exp of every query's scaled, masked scores.
    Returns:
        ``out (..., L, d_v)`` in q's dtype, or ``(out, lse (..., L))`` with ``return_lse``
        (lse in float32 for half inputs). A query that may see no key: out 0, lse −∞.
    """
    AF.check_qkv(q, k, v)
    _check_common(q, k, mask, scoring)
    if not 0.0 <= dropout_p < 1.0:
        raise ConfigError(f"dropout_p must be in [0, 1), got {dropout_p}")
    bq, bk = _block_sizes(block_size)
    grad = torch.is_grad_enabled() and any(
        isinstance(t, Tensor) and t.requires_grad for t in (q, k, v, mask, temperature))
    tau_per_key = (isinstance(temperature, Tensor) and scoring == "cosine" and scale is None
                   and _as_2d(temperature).shape[-1] != 1)
    # The memory-light custom backward covers q, k, v (and τ folded into q); dropout, a float
    # mask that wants its gradient or τ varying over keys go through autograd, tile by tile.
    custom = grad and dropout_p == 0.0 and not (isinstance(mask, Tensor) and mask.requires_grad) \
        and not (tau_per_key and temperature.requires_grad)
    with torch.set_grad_enabled(grad):
        qs, ks, vs, parts, _ = _prepare(q, k, v, mask, scale=scale, scoring=scoring, temperature=temperature,
                                        base2=not custom)
        spec = dict(parts, causal=causal, block_q=bq, block_k=bk)
        if custom:
            out, lse = _Blockwise.apply(qs, ks, vs, spec)
        else:  # forward only (or autograd through the loop): q held once, already in base 2
            out, lse = _forward(_Tiles(qs, ks, vs, base2=True, **spec), dropout_p)
    out = out.to(q.dtype)
    return (out, lse) if return_lse else out


def attention_lse(q: Tensor, k: Tensor, mask: Optional[Tensor] = None, *, causal: bool = False,
                  scale: Optional[float] = None, scoring: str = "scaled",
                  temperature: Union[None, float, Tensor] = None,
                  block_size: Union[None, int, tuple[int, int]] = None) -> Tensor:
    """log Σ_j exp(score_ij) of every query ``(..., L)``, blockwise (no values needed); −∞ for a
    query that may see no key. Not differentiable (a statistic for inspection)."""
    AF._require_float("q", q)
    AF._require_float("k", k)
    _check_qk(q, k)
    _check_common(q, k, mask, scoring)
    bq, bk = _block_sizes(block_size)
    with torch.no_grad():
        qs, ks, _, parts, _ = _prepare(q, k, None, mask, scale=scale, scoring=scoring, temperature=temperature,
                                       base2=True)
        _, lse = _forward(_Tiles(qs, ks, None, causal=causal, block_q=bq, block_k=bk, base2=True, **parts))
    return lse


def attention_weights(q: Tensor, k: Tensor, mask: Optional[Tensor] = None, *, heads: Index = None,
                      queries: Index = None, causal: bool = False, scale: Optional[float] = None,
                      scoring: str = "scaled", temperature: Union[None, float, Tensor] = None,
                      block_size: Union[None, int, tuple[int, int]] = None) -> Tensor:
    """Selected rows of the softmax weights, without building the others.

    For a long input the full weights ``(B, H, L, S)`` may not fit; this returns only the heads
    and queries asked for, computed from q and k in two passes over key tiles: the log-sum-exp of
    the selected rows, then ``exp(score − lse)`` written tile by tile into the result. Peak memory
    is the result plus one tile.

    Args:
        q: ``(..., H, L, d_k)``; k: ``(..., H, S, d_k)`` (leading dims broadcast).
        mask: bool (True = attend) or float, broadcastable to ``(..., H, L, S)``.
        heads: which heads (dim −3): an int (that dim is dropped), a slice/range/list/1-D tensor
            (kept), or None for all.
        queries: which query positions (dim −2), same forms.
        causal, scale, scoring, temperature: as in :func:`attnscope.attention`; causal masking
            uses the queries' true positions.
    Returns:
        ``(..., h, l, S)`` weights in q's dtype; each row sums to 1, or is all 0 for a query that
        may see no key. Equal to ``attention(..., return_weights=True)[1]`` at those indices.
    """
    AF._require_float("q", q)
    AF._require_float("k", k)
    _check_qk(q, k)
    _check_common(q, k, mask, scoring)
    bq, bk = _block_sizes(block_size)
    L, S = q.shape[-2], k.shape[-2]
    if heads is not None and q.dim() < 3:
        raise ShapeError(f"heads= needs q with a head dim (..., H, L, d_k), got q {fmt_shape(q.shape)}")
    n_heads = q.shape[-3] if q.dim() >= 3 else 1
    h_idx, h_drop = _index("heads", heads, max(n_heads, k.shape[-3] if k.dim() >= 3 else 1), q.device)
    q_idx, q_drop = _index("queries", queries, L, q.device)

    def pick(t, dims_from_end, idx):
        # Select along a dim counted from the end, unless t broadcasts there (size 1 or absent).
        if idx is None or t.dim() < dims_from_end or t.shape[-dims_from_end] == 1:
            return t
        return t.index_select(t.dim() - dims_from_end, idx)

    q_sel = pick(pick(q, 3, h_idx), 2, q_idx)  # (..., h, l, d_k)
    k_sel = pick(k, 3, h_idx)  # (..., h, S, d_k)
    m_sel = None if mask is None else pick(pick(_as_2d(mask), 3, h_idx), 2, q_idx)
    t_sel = temperature
    if isinstance(temperature, torch.Tensor):
        t_sel = pick(pick(_as_2d(temperature), 3, h_idx), 2, q_idx)
    q_pos = None if q_idx is None else q_idx  # true positions of the selected queries, for causal

    with torch.no_grad():
        qs, ks, _, parts, lead = _prepare(q_sel, k_sel, None, m_sel, scale=scale, scoring=scoring,
                                          temperature=t_sel, base2=True)
        T = _Tiles(qs, ks, None, causal=causal, q_pos=q_pos, block_q=bq, block_k=bk, base2=True, **parts)
        _, lse = _forward(T)  # (*lead, l)
        lse_fix = torch.where(torch.isneginf(lse), float("inf"), lse * LOG2E)  # rows seeing nothing → 0
        l_sel = qs.shape[-2]
        w = torch.zeros((*lead, l_sel, S), dtype=qs.dtype, device=qs.device)  # (..., h, l, S)

        def fill(ti: int) -> None:  # query tiles write disjoint rows: safe side by side
            i0, i1 = T.q_tiles[ti]
            for tj, (j0, j1) in enumerate(T.k_tiles):
                rel = T.relation(ti, tj)
                if rel == "skip":
                    continue
                s = T.scores(ti, tj, rel)
                w[..., i0:i1, j0:j1] = torch.exp2(s.sub_(lse_fix[..., i0:i1, None]), out=s)
        _map_query_tiles(fill, T, parallel=True)
    w = w.to(q.dtype)
    if q_drop:
        w = w.squeeze(-2)
    if h_drop:
        w = w.squeeze(-3 if not q_drop else -2)
    return w


def _check_qk(q: Tensor, k: Tensor) -> None:
    for name, t in (("q", q), ("k", k)):
        if t.dim() < 2:
            raise ShapeError(f"{name} must have at least 2 dims (..., length, dim), got shape {fmt_shape(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(f"q and k must have the same last dim d_k, got q {fmt_shape(q.shape)} and k {fmt_shape(k.shape)}")
    if q.dtype != k.dtype or q.device != k.device:
        raise ShapeError(f"q and k must share dtype and device, got {q.dtype}/{q.device} and {k.dtype}/{k.device}")


def _index(name: str, sel: Index, n: int, device: torch.device) -> tuple[Optional[Tensor], bool]:
    """A selection → (1-D long index tensor or None for all, whether the dim is dropped)."""
    if sel is None:
        return None, False
    if isinstance(sel, bool):
        raise _bad_index(name, sel)
    if isinstance(sel, int):
        if not -n <= sel < n:
            raise InputError(f"{name} index {sel} out of range: there are {n} (0..{n - 1})")
        return torch.tensor([sel % n], device=device), True
    if isinstance(sel, slice):
        sel = range(*sel.indices(n))
    if isinstance(sel, Tensor):
        if sel.dim() != 1 or sel.is_floating_point() or sel.dtype == torch.bool:
            raise _bad_index(name, sel)
        sel = sel.tolist()
    try:
        idx = [int(i) for i in sel]
    except (TypeError, ValueError):
        raise _bad_index(name, sel) from None
    if not idx:
        raise InputError(f"{name} selects nothing (empty selection)")
    bad = [i for i in idx if not -n <= i < n]
    if bad:
        raise InputError(f"{name} index {bad[0]} out of range: there are {n} (0..{n - 1})")
    return torch.tensor([i % n for i in idx], device=device), False


def _bad_index(name: str, sel) -> InputError:
    return InputError(f"{name} must be an int, a slice, a range, a list of ints or a 1-D integer tensor, "
                      f"got {type(sel).__name__}")


def trace_weights(trace, layer: int, *, heads: Index = None, queries: Index = None,
                  block_size: Union[None, int, tuple[int, int]] = None) -> Tensor:
    """Weights of one layer's selected heads and query range, from a trace's recorded q and k.

    A trace of a long text records ``layers.{i}.attn.q`` and ``.k`` cheaply (O(L·d) each, the
    fused kernel keeps running); this computes only the requested softmax rows from them with
    :func:`attention_weights`, with the padding mask and causality the model used::

        tr = model.trace(long_text, names=["layers.3.attn.q", "layers.3.attn.k"])
        w = trace_weights(tr, 3, heads=5, queries=slice(1000, 1100))   # (B, 100, L)

    Args:
        trace: an :class:`attnscope.trace.Trace` with ``layers.{layer}.attn.q`` and ``.k``
            (or, for ``heads=h``, ``.q[h]`` and ``.k[h]``).
        layer: the layer index.
        heads, queries: as in :func:`attention_weights` (an int drops that dim).
    Returns:
        ``(B, h, l, L)`` weights (dims of int selections dropped); keys at padding get 0.
    """
    names = [f"layers.{layer}.attn.{s}" for s in ("q", "k")]
    if all(n in trace for n in names):
        q, k = trace[names[0]], trace[names[1]]  # (B, H, L, d_head)
    elif isinstance(heads, int) and all(f"{n}[{heads}]" in trace for n in names):
        q, k = trace[f"{names[0]}[{heads}]"].unsqueeze(1), trace[f"{names[1]}[{heads}]"].unsqueeze(1)  # (B, 1, L, d)
        heads = 0
    else:
        raise InputError(f"the trace lacks {names[0]} and {names[1]}; trace with "
                         f"names=[{names[0]!r}, {names[1]!r}] to get weights on demand")
    scoring = trace.config.scoring
    if scoring == "cosine":
        raise InputError("cosine scoring uses the model's learned temperature, which a trace does not "
                         "record; trace the weights themselves (names='layers.{i}.attn.weights[h]')")
    if scoring == "qknorm":
        scoring = "scaled"  # the recorded q, k are after the LayerNorm; what remains is ÷√d_head
    am = trace.attention_mask.to(q.device).bool()  # (B, L), True = real token
    mask = None if bool(am.all()) else am[:, None, None, :]  # (B, 1, 1, S): keys at padding blocked
    return attention_weights(q, k, mask, heads=heads, queries=queries, causal=bool(trace.config.causal),
                             scoring=scoring, block_size=block_size)
