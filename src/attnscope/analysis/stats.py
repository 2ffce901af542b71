"""Per-head attention statistics as streaming sums, computed from the weights alone.

Everything here is a function of ``weights (B, H, L, L)``, ``attention_mask (B, L)`` and boolean
token-kind masks ``(B, L)``; no model is involved, so every statistic can be checked on hand-made
attention patterns.

Which queries count
-------------------
A *query* is a row ``i`` of a weight matrix. Only real tokens are queries: rows of padding
positions (``attention_mask == 0``) never count. By default the special tokens ([CLS], [SEP],
``<s>``, ``</s>``) count as queries too, because the model computes their rows like any other and
Clark et al. (2019) average over all tokens; ``special_queries=False`` leaves them out. On top of
that, a statistic that needs a particular key only counts the queries that have it:

=================  ====================================================  ===========================
statistic          value of one query i (keys j visible to i)            queries counted
=================  ====================================================  ===========================
``entropy``        ``-Σ_j w_ij ln w_ij`` (nats)                           all
``entropy_norm``   ``entropy / ln(n_i)``, n_i = number of visible keys   n_i ≥ 2
``distance``       ``Σ_j w_ij |i - j|`` (tokens)                         all
``to_cls``         ``Σ_{j is [CLS]} w_ij``                                all (texts that have one)
``to_sep``         ``Σ_{j is [SEP]} w_ij``                                all (texts that have one)
``to_punct``       ``Σ_{j is punctuation} w_ij``                          all
``to_self``        ``w_ii``                                               all
``to_prev``        ``w_{i,i-1}``                                          key i-1 is real
``to_next``        ``w_{i,i+1}``                                          key i+1 is real and visible
``argmax_prev``    1 if ``w_{i,i-1}`` is the row's unique maximum         key i-1 is real
``argmax_next``    1 if ``w_{i,i+1}`` is the row's unique maximum         key i+1 is real and visible
``to_local``       ``Σ_{|i-j| ≤ window} w_ij``                            all
=================  ====================================================  ===========================

``distance_content`` is the mean distance of the attention that lands on non-special keys,
weighted by that attention: ``Σ_i Σ_{j content} w_ij |i-j| / Σ_i Σ_{j content} w_ij``. It removes
the long jumps to [CLS]/[SEP] that dominate ``distance`` in the middle layers of BERT.

"Unique maximum" means ties do not count: a uniform row has no most-attended token, so a uniform
head scores 0 on ``argmax_prev``, not ``1/(n-1)``. In a causal model the next token is never
visible, so ``to_next``/``argmax_next`` count no queries and come out as NaN ("not applicable").

The means reported per head are ``Σ value / Σ count`` over all counted queries of all texts,
i.e. every counted query of the corpus weighs the same (long texts weigh more than short ones).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from ..errors import ShapeError, fmt_shape

Tensor = torch.Tensor

#: Statistic names, in the order of every table.
STAT_NAMES = (
    "entropy", "entropy_norm", "distance", "distance_content", "to_cls", "to_sep", "to_punct",
    "to_self", "to_prev", "to_next", "argmax_prev", "argmax_next", "to_local",
)

#: One line per statistic, for reports and ``--help``.
STAT_DOCS = {
    "entropy": "attention entropy -Σ w ln w of a query's row, in nats",
    "entropy_norm": "entropy / ln(number of visible keys): 1 = uniform, 0 = one key",
    "distance": "mean attention distance Σ w |i-j|, in tokens",
    "distance_content": "mean distance of the attention on non-special keys, in tokens",
    "to_cls": "fraction of attention on [CLS] (the leading special token)",
    "to_sep": "fraction of attention on [SEP] (the trailing special token)",
    "to_punct": "fraction of attention on punctuation tokens",
    "to_self": "fraction of attention on the query token itself",
    "to_prev": "fraction of attention on the previous token",
    "to_next": "fraction of attention on the next token",
    "argmax_prev": "fraction of queries whose unique most-attended token is the previous one",
    "argmax_next": "fraction of queries whose unique most-attended token is the next one",
    "to_local": "fraction of attention within ±window tokens (the query included)",
}

#: Token kinds a batch carries, each a (B, L) bool mask.
KINDS = ("cls", "sep", "punct", "special")


@dataclass
class StatOptions:
    """How the statistics are measured.

    Attributes:
        special_queries: count the rows of [CLS]/[SEP]-like tokens as queries (default True).
        window: half-width of the window of ``to_local`` (|i - j| ≤ window), in tokens.
        causal: the model is causal (each query sees keys 0..i); decides n_i and ``to_next``.
    """

    special_queries: bool = True
    window: int = 3
    causal: bool = False


def _unique_max(w: Tensor, row_max: Tensor, rows: Tensor) -> Tensor:
    """(B, H, L) bool: the row's maximum is reached once, checked only on the ``rows`` asked
    (those whose previous or next token is at the maximum), which are few: a gather, not a pass."""
    L = w.shape[-1]
    out = torch.zeros(rows.numel(), dtype=torch.bool, device=rows.device)
    idx = rows.reshape(-1).nonzero().squeeze(1)  # (K,) flat row numbers
    if idx.numel():
        ties = (w.reshape(-1, L).index_select(0, idx) == row_max.reshape(-1)[idx, None]).sum(-1)  # (K,)
        out[idx] = ties == 1
    return out.view_as(rows)


def check_inputs(weights: Tensor, attention_mask: Tensor, kinds: Mapping[str, Tensor]) -> None:
    """Raise ShapeError unless weights (B, H, L, L), attention_mask (B, L) and kinds (B, L) agree."""
    if not isinstance(weights, Tensor) or weights.dim() != 4 or not weights.is_floating_point():
        got = fmt_shape(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        raise ShapeError(f"weights must be a floating tensor of shape (B, H, L, L), got {got}")
    B, H, L, S = weights.shape
    if L != S:
        raise ShapeError(f"weights must be self-attention weights (B, H, L, L), got {fmt_shape(weights.shape)}")
    if not isinstance(attention_mask, Tensor) or tuple(attention_mask.shape) != (B, L):
        got = fmt_shape(attention_mask.shape) if isinstance(attention_mask, Tensor) else type(attention_mask).__name__
        raise ShapeError(f"attention_mask must have shape (B, L) = ({B}, {L}), got {got}")
    for name, m in kinds.items():
        if name not in KINDS:
            raise ShapeError(f"unknown token kind {name!r}; kinds are {', '.join(KINDS)}")
        if not isinstance(m, Tensor) or tuple(m.shape) != (B, L):
            got = fmt_shape(m.shape) if isinstance(m, Tensor) else type(m).__name__
            raise ShapeError(f"kinds[{name!r}] must have shape (B, L) = ({B}, {L}), got {got}")


@dataclass
class BatchContext:
    """What the statistics need from a batch besides the weights: the same for every layer, so
    built once per batch (:func:`batch_context`) and shared by the layers' calls."""

    B: int
    L: int
    key_rows: Tensor       # (B, 4, L): [CLS], [SEP], punctuation, content keys (weights' dtype)
    dist: Tensor           # (L, L): |i - j|
    special_idx: Tensor    # (B, S): positions of the special tokens of each text (padded with 0)
    special_dist: Tensor   # (B, L, S): |i - special_idx| where valid, else 0
    band_cols: Tensor      # (L, 2W+1): key j = i + offset, clamped into 0..L-1
    band_inside: Tensor    # (L, 2W+1): 1 where i + offset is inside 0..L-1
    counted: Tensor        # (B, L, K): which queries count for each per-query value (see _VALUES)
    log_n: Tensor          # (B, L) float64: ln(number of visible keys), ≥ ln 2
    options: StatOptions


#: The per-query values summed, in order; the last two are the content distance's numerator and
#: denominator (a ratio of sums, see the module docstring).
_VALUES = ("entropy", "entropy_norm", "distance", "to_cls", "to_sep", "to_punct", "to_self", "to_prev",
           "to_next", "argmax_prev", "argmax_next", "to_local", "distance_content", "_content_mass")


def batch_context(attention_mask: Tensor, kinds: Optional[Mapping[str, Tensor]] = None,
                  options: Optional[StatOptions] = None, *, dtype=torch.float32, device=None) -> BatchContext:
    """Masks, token kinds and index tables of one batch, for :func:`attention_sums`."""
    opt = options or StatOptions()
    dev = attention_mask.device if device is None else torch.device(device)
    real = attention_mask.to(dev).bool()  # (B, L)
    B, L = real.shape
    kinds = dict(kinds or {})
    no = torch.zeros(B, L, dtype=torch.bool, device=dev)
    cls, sep, punct = (kinds.get(k, no).to(dev).bool() & real for k in ("cls", "sep", "punct"))
    special = kinds.get("special", cls | sep).to(dev).bool() & real  # (B, L)
    query = real & ~special if not opt.special_queries else real  # (B, L)
    content = real & ~special  # (B, L)
    pos = torch.arange(L, device=dev)
    if opt.causal:
        n_keys = (real[:, None, :] & (pos[None, None, :] <= pos[None, :, None])).sum(-1)  # (B, L)
    else:
        n_keys = real.sum(-1, keepdim=True).expand(B, L)  # (B, L)
    prev_ok = query & torch.cat([no[:, :1], real[:, :-1]], dim=1)  # (B, L): key i-1 is real
    next_ok = query & torch.cat([real[:, 1:], no[:, :1]], dim=1) if not opt.causal else no  # (B, L)
    has_cls = cls.any(-1, keepdim=True) & query  # (B, L): texts without a [CLS] are n/a
    has_sep = sep.any(-1, keepdim=True) & query
    ok = {"entropy": query, "entropy_norm": query & (n_keys >= 2), "distance": query, "to_cls": has_cls,
          "to_sep": has_sep, "to_punct": query, "to_self": query, "to_prev": prev_ok, "to_next": next_ok,
          "argmax_prev": prev_ok, "argmax_next": next_ok, "to_local": query, "distance_content": query,
          "_content_mass": query}
    # special positions: few per text, so their distances are gathered rather than a full pass
    S = int(special.sum(-1).max()) if B else 0
    rank = special.long().cumsum(-1) - 1  # (B, L): index of each special among its text's specials
    idx = torch.zeros(B, max(S, 1), dtype=torch.long, device=dev)
    valid = torch.zeros(B, max(S, 1), dtype=torch.bool, device=dev)
    b, j = special.nonzero(as_tuple=True)
    idx[b, rank[b, j]] = j
    valid[b, rank[b, j]] = True
    sp_dist = (pos[None, :, None] - idx[:, None, :]).abs().to(dtype) * valid[:, None, :]  # (B, L, S)
    W = max(opt.window, 1)
    cols = pos[:, None] + torch.arange(-W, W + 1, device=dev)[None, :]  # (L, 2W+1)
    return BatchContext(
        B=B, L=L, key_rows=torch.stack([cls, sep, punct, content], dim=1).to(dtype),
        dist=(pos[:, None] - pos[None, :]).abs().to(dtype), special_idx=idx[:, :S], special_dist=sp_dist[..., :S],
        band_cols=cols.clamp(0, L - 1), band_inside=((cols >= 0) & (cols < L)).to(dtype),
        counted=torch.stack([ok[v] for v in _VALUES], dim=-1), log_n=torch.log(n_keys.clamp(min=2).double()),
        options=opt)


@torch.no_grad()
def attention_sums(weights: Tensor, attention_mask: Optional[Tensor] = None,
                   kinds: Optional[Mapping[str, Tensor]] = None, options: Optional[StatOptions] = None, *,
                   context: Optional[BatchContext] = None) -> dict[str, tuple[Tensor, Tensor]]:
    """Sums over the counted queries of one batch, per head.

    Args:
        weights: ``(B, H, L, L)`` attention weights, rows summing to 1 over visible keys.
        attention_mask: ``(B, L)``, 1/True = real token, 0/False = padding.
        kinds: ``{"cls", "sep", "punct", "special"}`` → ``(B, L)`` bool; missing ones are all
            False, and ``special`` defaults to ``cls | sep``.
        options: :class:`StatOptions`.
        context: a :func:`batch_context` of this batch instead of the three arguments above
            (what a per-layer hook passes, so that the batch is prepared once).
    Returns:
        ``{stat: (sum (H,), count (H,))}``, float64 on the weights' device; the per-head mean of a
        stat is ``sum / count`` (see the module docstring for what a query's value is).
    """
    if context is None:
        if attention_mask is None:
            raise ShapeError("attention_sums needs attention_mask (or a batch context)")
        check_inputs(weights, attention_mask, dict(kinds or {}))
        context = batch_context(attention_mask, kinds, options, dtype=weights.dtype, device=weights.device)
    ctx = context
    w = weights
    if not isinstance(w, Tensor) or w.dim() != 4 or tuple(w.shape[::2]) != (ctx.B, ctx.L) or w.shape[-1] != ctx.L:
        got = fmt_shape(w.shape) if isinstance(w, Tensor) else type(w).__name__
        raise ShapeError(f"weights must have shape (B, H, L, L) = ({ctx.B}, H, {ctx.L}, {ctx.L}) for this batch, got {got}")
    B, H, L, _ = w.shape
    # On a CPU the statistics make several passes over the weights; done a few texts at a time,
    # the passes after the first read from the core's cache instead of memory (about 1.4× faster
    # on MiniLM's 32×128 batches). On a GPU one launch per op is best.
    per_text = H * L * L * w.element_size()
    step = B if w.device.type != "cpu" else max(1, min(B, CPU_CHUNK_BYTES // per_text))
    starts = range(0, B, step)
    values = torch.empty(B, H, L, len(_VALUES), dtype=w.dtype, device=w.device)  # (B, H, L, K) per query
    pool = _worker_pool(torch.get_num_threads()) if w.device.type == "cpu" and len(starts) > 1 else None
    if pool is None:
        for b in starts:
            _chunk_values(w[b:b + step], ctx, b, values[b:b + step])
    else:  # chunks side by side on single-threaded workers: no OpenMP barrier after each small op
        list(pool.map(lambda b: _chunk_values(w[b:b + step], ctx, b, values[b:b + step]), starts))
    # One reduction for the whole batch: uncounted queries are set to 0 (not multiplied: rows of
    # padding queries may hold NaN, fully masked rows), then summed in float64.
    sums = values.masked_fill_(~ctx.counted[:, None], 0.0).sum(dim=(0, 2), dtype=torch.float64)  # (H, K)
    counts = ctx.counted.sum(dim=(0, 1)).to(torch.float64)  # (K,)
    out = {v: (sums[:, k], counts[k].expand(H)) for k, v in enumerate(_VALUES)}
    # the content distance is Σ w|i-j| / Σ w over content keys: its count is the content mass
    out["distance_content"] = (out["distance_content"][0], out.pop("_content_mass")[0])
    return {name: out[name] for name in STAT_NAMES}


#: Bytes of weights processed at once on a CPU: about one core's L2 cache.
CPU_CHUNK_BYTES = 3 * 2**19

_POOLS: dict = {}
_POOL_LOCK = threading.Lock()


def one_thread() -> None:
    """Make the calling thread's torch ops run on one thread, whatever the process's setting.

    torch sets a thread's OpenMP thread count from the process's setting lazily, at the thread's
    first op; asking for the count first does that now, so that the 1 set after it sticks (a set
    before it would be undone once the process's setting is restored)."""
    torch.get_num_threads()
    torch.set_num_threads(1)


def _worker_pool(n: int) -> Optional[ThreadPoolExecutor]:
    """n threads whose torch ops each run on one thread (None for n = 1, or without OpenMP).

    The statistics are many small ops; split over torch's own threads, each op ends in an OpenMP
    barrier, which on a shared machine costs more than the arithmetic. OpenMP keeps its thread
    count per thread, so workers set theirs to 1 and the caller's stays as it was (restored once
    every worker has started, since the first set also moves the process default).
    """
    if n <= 1 or "OpenMP" not in torch.__config__.parallel_info():
        return None
    with _POOL_LOCK:
        key = (os.getpid(), n)  # a forked child has the dict but not the threads
        if key not in _POOLS:
            before = torch.get_num_threads()
            started = threading.Barrier(n + 1)

            def init() -> None:
                one_thread()
                started.wait()
            pool = ThreadPoolExecutor(n, thread_name_prefix="attnscope-stats", initializer=init)
            for _ in range(n):  # start all n now, so that the barrier is reached
                pool.submit(lambda: None)
            started.wait()
            torch.set_num_threads(before)
            _POOLS[key] = pool
        return _POOLS[key]


def _chunk_values(w: Tensor, ctx: BatchContext, b0: int, out: Tensor) -> None:
    """Every per-query value of texts b0..b0+B, written into ``out (B, H, L, K)`` (order of _VALUES)."""
    B, H, L, _ = w.shape
    dt = w.dtype
    opt = ctx.options
    rows = slice(b0, b0 + B)
    key_rows, special_idx, special_dist = ctx.key_rows[rows], ctx.special_idx[rows], ctx.special_dist[rows]

    # A few passes over w (B, H, L, L); everything after is (B, H, L) or smaller. The forms are
    # the fastest measured on CPU (benchmarks/analysis.py): clamp+log beats xlogy and entr, a GEMM
    # with the kinds as its short side beats a skinny bmm, gathers beat passes for the few special
    # keys, and one scratch matrix serves the two products (entropy, distance).
    tiny = torch.finfo(dt).tiny  # w·log(max(w, tiny)) is exactly 0 at w = 0
    scratch = torch.clamp_min(w, tiny)  # (B, H, L, L)
    entropy = scratch.log_().mul_(w).sum(-1).neg_()  # (B, H, L)
    d_all = torch.mul(w, ctx.dist.to(dt), out=scratch).sum(-1)  # (B, H, L): Σ_j w_ij |i-j|
    del scratch
    mass = torch.bmm(key_rows.to(dt), w.reshape(B, H * L, L).transpose(1, 2))  # (B, 4, H·L): Σ_j w_ij kind_j
    mass = mass.view(B, 4, H, L)
    S = special_idx.shape[1]
    if S:
        g = w.gather(-1, special_idx[:, None, None, :].expand(B, H, L, S))  # (B, H, L, S)
        d_content = d_all - torch.linalg.vecdot(g, special_dist[:, None].to(dt))  # (B, H, L): Σ over content keys
    else:
        d_content = d_all
    row_max = w.amax(-1)  # (B, H, L)
    # The band |i - j| ≤ W around the diagonal, gathered once (a diagonal read directly touches
    # one cache line per element; a row's band is one or two lines).
    W = (ctx.band_cols.shape[1] - 1) // 2
    band = w.gather(-1, ctx.band_cols.expand(B, H, L, 2 * W + 1)).mul_(ctx.band_inside.to(dt))  # (B, H, L, 2W+1)
    w_self, w_prev, w_next = band[..., W], band[..., W - 1], band[..., W + 1]  # (B, H, L) each
    local = band[..., W - opt.window:W + opt.window + 1].sum(-1)  # (B, H, L)
    top_prev, top_next = w_prev == row_max, w_next == row_max  # (B, H, L): the maximum, maybe tied
    unique = _unique_max(w, row_max, top_prev | top_next)  # (B, H, L)

    per_query = {  # stat -> value (B, H, L), in the order of _VALUES
        "entropy": entropy, "entropy_norm": entropy / ctx.log_n[rows, None, :].to(dt), "distance": d_all,
        "to_cls": mass[:, 0], "to_sep": mass[:, 1], "to_punct": mass[:, 2], "to_self": w_self,
        "to_prev": w_prev, "to_next": w_next, "argmax_prev": (top_prev & unique).to(dt),
        "argmax_next": (top_next & unique).to(dt), "to_local": local, "distance_content": d_content,
        "_content_mass": mass[:, 3],
    }
    torch.stack([per_query[v] for v in _VALUES], dim=-1, out=out)  # (B, H, L, K)


@torch.no_grad()
def uniform_distance_sums(attention_mask: Tensor, kinds: Optional[Mapping[str, Tensor]] = None,
                          options: Optional[StatOptions] = None) -> tuple[Tensor, Tensor]:
    """The ``distance`` a head would have if it spread every query's attention evenly over the
    keys it can see: ``(sum, count)`` over the counted queries, float64 scalars. A baseline that
    depends only on the texts' lengths, against which ``distance`` reads as near or far."""
    opt = options or StatOptions()
    real = attention_mask.bool()  # (B, L)
    B, L = real.shape
    kinds = dict(kinds or {})
    no = torch.zeros_like(real)
    special = kinds.get("special", kinds.get("cls", no) | kinds.get("sep", no)).to(real.device).bool() & real
    query = real if opt.special_queries else real & ~special  # (B, L)
    pos = torch.arange(L, device=real.device)
    visible = real[:, None, :].expand(B, L, L)  # (B, L, L): key j visible to query i
    if opt.causal:
        visible = visible & (pos[None, None, :] <= pos[None, :, None])
    dist = (pos[:, None] - pos[None, :]).abs().to(torch.float64)  # (L, L)
    mean = (visible * dist).sum(-1) / visible.sum(-1).clamp(min=1)  # (B, L)
    return torch.where(query, mean, 0.0).sum(), query.sum().to(torch.float64)


def attention_means(weights: Tensor, attention_mask: Tensor, kinds: Optional[Mapping[str, Tensor]] = None,
                    options: Optional[StatOptions] = None) -> dict[str, Tensor]:
    """``{stat: mean (H,)}`` of one batch (NaN where no query counts); see :func:`attention_sums`."""
    return {k: s / c for k, (s, c) in attention_sums(weights, attention_mask, kinds, options).items()}

