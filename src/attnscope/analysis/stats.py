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

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

import torch

from ..errors import ShapeError, fmt_shape, shape_or_type
from ..i18n import error
from ..threads import lane_pool
from .passes import NEAR, buffer, chunk_passes, kept_sum, unique_max_at

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
        key_windows: per layer of a causal model, its sliding window W (query i sees only keys
            j with i - j < W, Gemma 3's local layers) or None; decides n_i of that layer.
    """

    special_queries: bool = True
    window: int = 3
    causal: bool = False
    key_windows: tuple = ()


def check_inputs(weights: Tensor, attention_mask: Tensor, kinds: Mapping[str, Tensor]) -> None:
    """Raise ShapeError unless weights (B, H, L, L), attention_mask (B, L) and kinds (B, L) agree."""
    if not isinstance(weights, Tensor) or weights.dim() != 4 or not weights.is_floating_point():
        raise error(ShapeError, "errors.analysis_weights_float", got=shape_or_type(weights))
    B, H, L, S = weights.shape
    if L != S:
        raise error(ShapeError, "errors.analysis_weights_self", got=fmt_shape(weights.shape))
    if not isinstance(attention_mask, Tensor) or tuple(attention_mask.shape) != (B, L):
        raise error(ShapeError, "errors.analysis_mask_bl", B=B, L=L, got=shape_or_type(attention_mask))
    for name, m in kinds.items():
        if name not in KINDS:
            raise error(ShapeError, "errors.analysis_unknown_kind", name=repr(name), kinds=", ".join(KINDS))
        if not isinstance(m, Tensor) or tuple(m.shape) != (B, L):
            raise error(ShapeError, "errors.analysis_kind_shape", name=repr(name), B=B, L=L, got=shape_or_type(m))


@dataclass
class BatchContext:
    """What the statistics need from a batch besides the weights: the same for every layer, so
    built once per batch (:func:`batch_context`) and shared by the layers' calls."""

    B: int
    L: int
    key_rows: Tensor       # (B, 4 + S, L): [CLS], [SEP], punctuation, content keys, then one row per special token
    by_offset: Tensor      # (L, 5, L): per query i and key j, |i - j|, |i - j| ≤ window, j = i, j = i-1, j = i+1
    special_dist: Tensor   # (B, S, L): |i - position of the text's s-th special token|, 0 where it has none
    counted: Tensor        # (B, L, K): which queries count for each per-query value (see _VALUES)
    log_n: Tensor          # (B, L) float64: ln(number of visible keys), ≥ ln 2
    options: StatOptions
    #: some query may not see some key (a causal model, or padding): its weights hold exact zeros
    masked_keys: bool = True
    real: Optional[Tensor] = None  # (B, L) bool: the real tokens (for the sliding windows' n_i)
    windowed: dict = field(default_factory=dict)  # W -> this context with the n_i of window W

    def for_layer(self, layer: int) -> "BatchContext":
        """This context for ``layer``: ``log_n`` counts the keys of its sliding window, if it has one."""
        wins, real = self.options.key_windows, self.real
        W = wins[layer] if self.options.causal and 0 <= layer < len(wins) else None
        if W is None or W >= self.L or real is None:
            return self
        if W not in self.windowed:
            seen = real.long().cumsum(-1)  # (B, L): real keys j ≤ i
            before = torch.nn.functional.pad(seen, (W, 0))[:, :self.L]  # (B, L): real keys j ≤ i - W
            self.windowed[W] = replace(self, log_n=torch.log((seen - before).clamp(min=2).double()), windowed={})
        return self.windowed[W]

    def on(self, device) -> "BatchContext":
        """This context with its tensors on ``device`` (itself when they are there already): the
        layers of a model placed over several devices (``load(device_map=…)``) hand their weights
        over where they were made."""
        dev = torch.device(device)
        if self.key_rows.device == dev:
            return self
        return BatchContext(B=self.B, L=self.L, key_rows=self.key_rows.to(dev), by_offset=self.by_offset.to(dev),
                            special_dist=self.special_dist.to(dev), counted=self.counted.to(dev),
                            log_n=self.log_n.to(dev), options=self.options, masked_keys=self.masked_keys,
                            real=None if self.real is None else self.real.to(dev))

    def counted_queries(self, value: str) -> Tensor:
        """(B, L) bool: the queries that count for the per-query ``value`` ("entropy", "to_prev", …)."""
        return self.counted[..., _VALUES.index(value)]


#: The per-query values summed, in order: first the five products with ``by_offset``, then the
#: four with ``key_rows``, then the rest. ``distance_content`` and ``_content_mass`` are the
#: content distance's numerator and denominator (a ratio of sums, see the module docstring).
_VALUES = ("distance", "to_local", "to_self", "to_prev", "to_next", "to_cls", "to_sep", "to_punct",
           "_content_mass", "entropy", "entropy_norm", "argmax_prev", "argmax_next", "distance_content")


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
    sp_dist = (pos[None, None, :] - idx[:, :, None]).abs().to(dtype) * valid[:, :, None]  # (B, S, L)
    sp_rows = (pos[None, None, :] == idx[:, :, None]) & valid[:, :, None]  # (B, S, L): one-hot
    off = pos[None, :] - pos[:, None]  # (L, L): j - i
    by_offset = torch.stack([off.abs(), off.abs() <= opt.window, off == 0, off == -1, off == 1], dim=1)  # (L, 5, L)
    return BatchContext(
        B=B, L=L, key_rows=torch.cat([torch.stack([cls, sep, punct, content], dim=1), sp_rows[:, :S]], dim=1).to(dtype),
        by_offset=by_offset.to(dtype), special_dist=sp_dist[:, :S],
        counted=torch.stack([ok[v] for v in _VALUES], dim=-1), log_n=torch.log(n_keys.clamp(min=2).double()),
        options=opt, masked_keys=opt.causal or not bool(real.all()), real=real)


#: Bytes of weights processed at once on a CPU: with the scratch matrix as large, about half of
#: one core's L2 cache (MiniLM: one text of 12 heads, 0.75 MiB).
CPU_CHUNK_BYTES = 2**20

_chunk_passes = chunk_passes  # looked up here at each call (tests replace it)

#: Weight dtypes whose statistics are computed in float32 (:func:`stats_dtype`).
HALF = (torch.float16, torch.bfloat16)


def stats_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the statistics of weights in ``dtype`` are computed in: float32 for float16 and
    bfloat16, else ``dtype`` itself. In half precision a token distance above 256 is not even a
    whole number (bfloat16 keeps 8 significant bits), and a sum over a row's keys or a text's
    queries rounded to 8 bits moves a statistic by up to 0.4 %: the half-precision model's weights
    are read exactly (every bfloat16 is a float32) and everything from there on runs in float32,
    the sums over texts in float64 as always."""
    return torch.float32 if dtype in HALF else dtype


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
            raise error(ShapeError, "errors.analysis_sums_mask")
        check_inputs(weights, attention_mask, dict(kinds or {}))
        context = batch_context(attention_mask, kinds, options, dtype=stats_dtype(weights.dtype),
                                device=weights.device)
    ctx = context.on(weights.device) if isinstance(weights, Tensor) else context
    w = weights
    if not isinstance(w, Tensor) or w.dim() != 4 or tuple(w.shape[::2]) != (ctx.B, ctx.L) or w.shape[-1] != ctx.L:
        raise error(ShapeError, "errors.analysis_weights_batch", B=ctx.B, L=ctx.L, got=shape_or_type(w))
    B, H, L, _ = w.shape
    w = w.contiguous() if w.dtype not in HALF else w.float()  # (B, H, L, L); float32: see stats_dtype
    dt, dev = w.dtype, w.device
    # The passes over w (B, H, L, L) run a few texts at a time on a CPU: the passes after the
    # first read from the core's cache instead of memory. On a GPU one launch per op is best.
    per_text = H * L * L * w.element_size()
    step = B if dev.type != "cpu" else max(1, min(B, CPU_CHUNK_BYTES // per_text))
    starts = range(0, B, step)
    by_offset, key_rows = ctx.by_offset.to(dt), ctx.key_rows.to(dt)
    R = key_rows.shape[1]  # 4 kinds + S special tokens
    ent, row_max = buffer("ent", (B, H, L), dt, dev), buffer("max", (B, H, L), dt, dev)  # Σ w ln w, max_j w
    offs = buffer("offs", (B, L, 5, H), dt, dev)  # products with by_offset
    mass = buffer("mass", (B, R, H * L), dt, dev)  # products with key_rows

    def chunk(b: int) -> None:
        _chunk_passes(w[b:b + step], by_offset, key_rows[b:b + step], ent[b:b + step], row_max[b:b + step],
                      offs[b:b + step], mass[b:b + step], zeros=ctx.masked_keys)
    pool = lane_pool(torch.get_num_threads()) if dev.type == "cpu" and len(starts) > 1 else None
    if pool is None:
        for b in starts:
            chunk(b)
    else:  # chunks side by side on single-threaded workers: no OpenMP barrier after each small op
        list(pool.map(chunk, starts))

    # Everything below is (B, H, L)-sized or smaller.
    top = row_max.transpose(1, 2)  # (B, L, H): max_j w_ij
    d_all, w_prev, w_next = offs[:, :, 0], offs[:, :, 3], offs[:, :, 4]  # (B, L, H) each
    near = top * (1 - NEAR)  # (B, L, H): below this, a product's value is not the row's maximum
    argmax_prev, argmax_next = unique_max_at(w, row_max, (w_prev >= near).transpose(1, 2),
                                              (w_next >= near).transpose(1, 2))  # (B, H, L) each
    mass = mass.view(B, R, H, L)
    # the specials' part of the distance: Σ_s w_{i,s} |i - s| over the text's few special tokens
    d_special = (mass[:, 4:] * ctx.special_dist.to(dt)[:, :, None, :]).sum(1)  # (B, H, L)
    # a row holding NaN has a NaN maximum; its entropy is NaN too (the nansum of the passes skipped it)
    entropy = ent.masked_fill_(row_max.isnan(), float("nan")).neg_()  # (B, H, L)
    rest = torch.stack([entropy, entropy / ctx.log_n[:, None, :].to(dt), argmax_prev, argmax_next,
                        d_all.transpose(1, 2) - d_special], dim=1,
                       out=buffer("rest", (B, 5, H, L), dt, dev))  # (B, 5, H, L), in the order of _VALUES
    keep = ctx.counted.to(dt)  # (B, L, K)
    keep_t = keep.transpose(1, 2)[:, :, None, :]  # (B, K, 1, L)
    sums = torch.cat([kept_sum(offs, keep[:, :, :5, None], 1).T,  # (H, 5)
                      kept_sum(mass[:, :4], keep_t[:, 5:9], -1).T,  # (H, 4)
                      kept_sum(rest, keep_t[:, 9:], -1).T], dim=1)  # (H, 5) -> (H, K)
    counts = ctx.counted.sum(dim=(0, 1)).to(torch.float64)  # (K,)
    out = {v: (sums[:, k], counts[k].expand(H)) for k, v in enumerate(_VALUES)}
    # the content distance is Σ w|i-j| / Σ w over content keys: its count is the content mass
    out["distance_content"] = (out["distance_content"][0], out.pop("_content_mass")[0])
    return {name: out[name] for name in STAT_NAMES}


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
    seen = torch.ones(L, L, dtype=torch.float64, device=real.device)  # (L, L): query i may see key j
    if opt.causal:
        seen = seen.tril()
    dist = (pos[:, None] - pos[None, :]).abs().to(torch.float64) * seen  # (L, L)
    keys = real.to(torch.float64)  # (B, L): key j is real
    # sums of whole numbers, exact in float64: Σ_j |i - j| and the count over the visible keys
    mean = (keys @ dist.T) / (keys @ seen.T).clamp(min=1)  # (B, L)
    return torch.where(query, mean, 0.0).sum(), query.sum().to(torch.float64)


def attention_means(weights: Tensor, attention_mask: Tensor, kinds: Optional[Mapping[str, Tensor]] = None,
                    options: Optional[StatOptions] = None) -> dict[str, Tensor]:
    """``{stat: mean (H,)}`` of one batch (NaN where no query counts); see :func:`attention_sums`."""
    return {k: s / c for k, (s, c) in attention_sums(weights, attention_mask, kinds, options).items()}

