"""Texts that ``attnscope serve`` holds and reads on demand: long texts without shipping q, k, v.

A page of a short text carries q, k, v of every layer and computes everything itself (see
:mod:`attnscope.viewer.data`). A long text would make that page heavy (SmolLM2 at 8 192 tokens:
30 layers × (9 + 3 + 3) heads × 8192 × 64 float32 = 0.9 GB) and its arithmetic slow, so the
server traces it once, keeps exactly what such a page would carry (:class:`HeldText`), and answers
for one layer and head at a time what a view shows:

* :meth:`HeldText.rows` — weights of some query rows, float64, from the page's operands: q and k
  before the rotation (for rotary models), turned in float64 pair by pair as the page and
  ``attnscope explain`` turn them, ``softmax(factor · q′·k′)`` with the layer's mask, through the
  only the rows asked for exist;
* :meth:`HeldText.steps` — one row's walk-through (raw, scaled, exp, Σ, weights, Σ weight·v) with
  :func:`attnscope.reference.row_steps`, the function ``explain`` uses;
* :meth:`HeldText.heatmap` — a region of one head's matrix max-pooled to at most rows × cols
  cells, computed a block of query rows at a time;
* :meth:`HeldText.lines` — the head view's lines: the smallest drawn weight by the page's own rule
  (at most :data:`LINE_BUDGET` pairs over the selected heads) and those pairs;
* :meth:`HeldText.thumbnails` — one layer's model-view thumbnails, as
  :func:`attnscope.viewer.data.thumbnails` makes them, a block of rows at a time.

Colours (heatmap cells, lines, thumbnails) are computed in float32 from the float64 operands (a
difference of ~1e-7 no colour shows); every number shown comes from :meth:`rows` or
:meth:`steps` in float64. Peak memory beyond what is held: one block of about :data:`BLOCK`
weights, never a whole layer's (or head's) n × n weights.

:class:`attnscope.viewer.held_store.TextStore` keeps held texts by a hash of the text, least
recently used first out, within a byte budget.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np
import torch

from .. import reference as R
from ..errors import InputError
from ..i18n import error, word
from ..positions import get_position
from ..threads import torch_threads
from ..trace.read import check_index
from .data import THUMB, operand_steps, rope_tables

#: Weights computed at once for the heatmap, lines and thumbnails: a block of max(64, this // n)
#: query rows × n keys (16 MB of float64, 8 MB of float32).
BLOCK = 1 << 21
#: The head view draws at most this many lines (as the page's own LINE_BUDGET).
LINE_BUDGET = 8000
#: Most weights one rows() answer may carry (heads × rows × n): 8 MB of float64.
MAX_ROW_VALUES = 1 << 20
#: Largest heatmap side in cells (a 4K screen at device resolution).
MAX_CELLS = 4096


def one_thread(fn):
    """Run ``fn`` with one intra-op thread: a view's blocks are small, and on a loaded machine the
    thread pool's hand-offs made them several times slower (1.2 s against 7.2 s for 9 heads ×
    2048² at load 16 on 2 cores); the model's own forward keeps every thread."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with torch_threads(1):
            return fn(*args, **kwargs)
    return run


class HeldText:
    """One text's q, k (before the rotation for rotary models), v of every layer, float32, as the
    page of a short text stores them, and the views' numbers computed from them on demand.

    Args:
        trace: a Trace of this one text recording the operands (:func:`attnscope.viewer.data.operand_steps`)
            and v of every layer.
        tokens: the tokens as shown (``display_tokens``).
    """

    def __init__(self, trace, tokens: Sequence[str]):
        cfg = trace.config
        self.config = cfg
        self.n = trace.length(0)
        self.tokens = list(tokens)
        self.n_layers, self.n_heads = trace.n_layers, trace.n_heads
        self.n_kv = int(getattr(cfg, "kv_heads", cfg.n_heads))
        self.group = self.n_heads // self.n_kv
        qs, ks = operand_steps(cfg)
        # (H | H_kv, n, d_head) float32 per layer, on the CPU
        self.q, self.k, self.v = ([trace.step(i, s, text=0).detach().float().cpu().contiguous() for i in range(self.n_layers)]
                                  for s in (qs, ks, "v"))
        self.factor = R.trace_factor(trace)
        self.causal = bool(cfg.causal)
        self.windows = [trace.window(i) for i in range(self.n_layers)]
        self.rope = rope_tables(cfg, self.n)
        self.bias_np = get_position(cfg.position).bias_np  # a position scheme's score term (ALiBi), or None
        self._ops: OrderedDict = OrderedDict()
        self._f32: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @property
    def block_rows(self) -> int:
        """Query rows computed at once (:data:`BLOCK` weights)."""
        return max(64, BLOCK // self.n)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for ts in (self.q, self.k, self.v) for t in ts)

    # ------------------------------------------------------------------------------------------
    def check(self, layer: int, head: Optional[int] = None) -> None:
        check_index("layer", layer, self.n_layers, "layer")
        if head is not None:
            check_index("head", head, self.n_heads, "head")

    def operands(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """q′ of query head ``head`` and k′ of the k/v head it reads, (n, d_head) float64 each:
        as stored, turned at positions 0 … n − 1 on rotary layers (kept for the last few heads)."""
        self.check(layer, head)

        def make():
            q, k = R.as_f64(self.q[layer][head]), R.as_f64(self.k[layer][head // self.group])
            if self.rope is not None:
                rope, pos = self.rope[layer], np.arange(self.n)
                q, k = (R.rotate(x, pos, rope["inv_freq"], rope["pairing"]) for x in (q, k))
            return q, k
        return self._cached(self._ops, (layer, head), 2 * self.n_heads, make)

    def _cached(self, cache: OrderedDict, key, most: int, make):
        """``cache[key]``, made by ``make()`` when missing; the ``most`` last used are kept."""
        with self._lock:
            hit = cache.get(key)
            if hit is not None:
                cache.move_to_end(key)
                return hit
        hit = make()
        with self._lock:
            cache[key] = hit
            while len(cache) > most:
                cache.popitem(last=False)
        return hit

    def allowed(self, layer: int, q0: int, q1: int) -> np.ndarray:
        """(q1 − q0, n) bool: True where query i may see key j (causal, sliding window)."""
        i = np.arange(q0, q1)[:, None]
        j = np.arange(self.n)[None, :]
        ok = np.ones((q1 - q0, self.n), dtype=bool)
        if self.causal:
            ok &= j <= i
            w = self.windows[layer]
            if w is not None:
                ok &= i - j < w
        return ok

    def _layer_f32(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """q′ (H, n, d) and k′ (H_kv, n, d) of every head of ``layer`` in float32 (colours): turned
        in float64 as :meth:`operands` turns them, all heads at once; kept for the last two layers."""
        def make():
            q, k = self.q[layer], self.k[layer]  # (H, n, d), (H_kv, n, d) float32
            if self.rope is not None:
                q, k = (_turn(x, self.rope[layer]).float() for x in (q, k))
            return q, k
        return self._cached(self._f32, layer, 2, make)

    def _stacked(self, layer: int, heads: Sequence[int], dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """q′ (h, n, d) of ``heads`` and k′ (h, n, d) of the k/v head each reads, in ``dtype``."""
        if dtype == torch.float64:
            ops = [self.operands(layer, h) for h in heads]
            return (torch.from_numpy(np.stack([o[0] for o in ops])), torch.from_numpy(np.stack([o[1] for o in ops])))
        q, k = self._layer_f32(layer)
        heads = list(heads)
        if heads == list(range(self.n_heads)) and self.group == 1:
            return q, k
        idx = torch.as_tensor(heads, dtype=torch.long)
        return q.index_select(0, idx), k.index_select(0, idx // self.group)

    def key_range(self, layer: int, q0: int, q1: int) -> tuple[int, int]:
        """Keys k0 … k1 − 1 outside which no query q0 … q1 − 1 sees anything (causal: k1 = q1;
        a window w: k0 = q0 − w + 1)."""
        if not self.causal:
            return 0, self.n
        w = self.windows[layer]
        return (0 if w is None else max(0, q0 - w + 1)), q1

    def bias(self, heads: Sequence[int], q0: int, q1: int, k0: int, k1: int) -> Optional[np.ndarray]:
        """The position scheme's score term of queries q0 … q1 − 1 over keys k0 … k1 − 1 for
        ``heads`` (ALiBi: slope_h · key position): (h, q1 − q0, k1 − k0) float64, or None."""
        if self.bias_np is None:
            return None
        return self.bias_np(self.n_heads, np.arange(q0, q1), np.arange(k0, k1))[list(heads)]

    def _weights_part(self, layer: int, heads: Sequence[int], q0: int, q1: int, dtype,
                      stacked: Optional[tuple] = None) -> tuple[torch.Tensor, int]:
        """Weights of queries q0 … q1 − 1 of ``heads`` over the keys k0 … k1 − 1 of
        :meth:`key_range` (every other key has weight 0): ((h, q1 − q0, k1 − k0), k0) in ``dtype``,
        softmax(factor · q′·k′ᵀ) over the keys each query may see (the arithmetic of
        :func:`attnscope.reference.attention_weights`). A block of rows fits in memory at once, so
        this is one batched matrix product, not the tiled kernel (whose per-tile work is for rows
        too long to hold; the tests check both agree). ``stacked``: :meth:`_stacked`'s answer, when
        the caller reads many blocks of the same heads."""
        q, k = stacked if stacked is not None else self._stacked(layer, heads, dtype)
        k0, k1 = self.key_range(layer, q0, q1)
        s = torch.matmul(q[:, q0:q1], k[:, k0:k1].transpose(1, 2))  # (h, l, k1 − k0)
        s.mul_(self.factor)
        b = self.bias(heads, q0, q1, k0, k1)
        if b is not None:
            s.add_(torch.from_numpy(b).to(s.dtype))  # added after the scaling, as the model does
        if self.causal and self.windows[layer] is None:  # only the last l keys hold later ones
            later = torch.ones((q1 - q0, q1 - q0), dtype=torch.bool).triu_(1)
            s[..., q0 - k0:].masked_fill_(later, float("-inf"))
        elif self.causal:
            s.masked_fill_(~torch.from_numpy(self.allowed(layer, q0, q1)[:, k0:k1]), float("-inf"))
        return torch.softmax(s, dim=-1), k0

    def _weights(self, layer: int, heads: Sequence[int], q0: int, q1: int, dtype=torch.float64,
                 stacked: Optional[tuple] = None) -> torch.Tensor:
        """:meth:`_weights_part` with every key: (h, q1 − q0, n)."""
        part, k0 = self._weights_part(layer, heads, q0, q1, dtype, stacked)
        out = torch.zeros((len(heads), q1 - q0, self.n), dtype=dtype)  # (h, l, n)
        out[..., k0:k0 + part.shape[-1]] = part
        return out

    def _check_rows(self, q0: int, q1: int) -> None:
        if q1 <= q0:  # no row at all: "rows 3..2 are out of range" named no problem
            raise error(InputError, "errors.viewer_span_empty", what=word("query rows"), first="q0", last="q1", a=q0, b=q1)
        if not 0 <= q0 < q1 <= self.n:
            raise error(InputError, "errors.viewer_rows_range", first=q0, last=q1 - 1, n=self.n, top=self.n - 1)

    # ------------------------------------------------------------------------------------------
    @one_thread
    def rows(self, layer: int, heads: Sequence[int], q0: int, q1: int) -> np.ndarray:
        """Weights of queries q0 … q1 − 1 of each of ``heads``: (len(heads), q1 − q0, n) float64."""
        self._check_rows(q0, q1)
        for h in heads:
            self.check(layer, h)
        size = len(heads) * (q1 - q0) * self.n
        if size > MAX_ROW_VALUES:
            raise error(InputError, "errors.viewer_too_many_weights", heads=len(heads), rows=q1 - q0, keys=self.n,
                        size=f"{size:,}", most=f"{MAX_ROW_VALUES:,}")
        return self._weights(layer, heads, q0, q1).numpy() if heads else np.zeros((0, q1 - q0, self.n))

    @one_thread
    def steps(self, layer: int, head: int, query: int) -> dict:
        """One row's walk-through, float64 (:func:`attnscope.reference.row_steps`), plus the
        query's q before and after the rotation (``q_pre``, ``q_rot``)."""
        self.check(layer, head)
        query = check_index("query token", query, self.n, "token")
        q, k = self.operands(layer, head)
        allowed = self.allowed(layer, query, query + 1)[0] if self.causal else None
        v = R.as_f64(self.v[layer][head // self.group])
        b = self.bias([head], query, query + 1, 0, self.n)
        s = R.row_steps(R.raw_scores(q[query], k), self.factor, allowed, v, bias=None if b is None else b[0, 0])
        return {"raw": s["scores"], "scaled": s["masked"], "shift": s["shift"], "exp": s["exp"], "sum": s["sum"],
                "weights": s["weights"], "out": s["output"], "q_pre": R.as_f64(self.q[layer][head][query]),
                "q_rot": q[query]}

    @one_thread
    def vectors(self, layer: int, head: int, positions: Sequence[int]) -> dict:
        """q of query head ``head`` and k of its k/v head at ``positions``, before (``*_pre``, the
        stored float32 values) and after the rotation (``*_rot``, float64): (len(positions), d) each."""
        self.check(layer, head)
        pos = [check_index("position", p, self.n, "token") for p in positions]
        q, k = self.operands(layer, head)
        return {"q_pre": R.as_f64(self.q[layer][head][pos]), "k_pre": R.as_f64(self.k[layer][head // self.group][pos]),
                "q_rot": q[pos], "k_rot": k[pos]}

    @staticmethod
    def _row_blocks(edges: np.ndarray, most: int):
        """Runs of whole bins (bin b = rows edges[b] … edges[b + 1] − 1) of about ``most`` rows:
        yields (first bin, last bin + 1, first row, last row + 1)."""
        b, nb = 0, len(edges) - 1
        while b < nb:
            e = b + 1
            while e < nb and edges[e + 1] - edges[b] <= most:
                e += 1
            yield b, e, int(edges[b]), int(edges[e])
            b = e

    @one_thread
    def heatmap(self, layer: int, head: int, q0: int, q1: int, k0: int, k1: int, rows: int, cols: int) -> dict:
        """Queries q0 … q1 − 1 × keys k0 … k1 − 1 of one head, each cell the largest weight of the
        block it covers: ``{"grid": (R, C) float32, "row_edges": R + 1, "col_edges": C + 1}`` with
        R = min(rows, q1 − q0), C = min(cols, k1 − k0) and cell (r, c) covering queries
        row_edges[r] … row_edges[r + 1] − 1 (edge r = q0 + ⌊r·(q1 − q0)/R⌋), keys likewise."""
        self.check(layer, head)
        self._check_rows(q0, q1)
        if k1 <= k0:
            raise error(InputError, "errors.viewer_span_empty", what=word("keys"), first="k0", last="k1", a=k0, b=k1)
        if not 0 <= k0 < k1 <= self.n:
            raise error(InputError, "errors.viewer_keys_range", first=k0, last=k1 - 1, n=self.n, top=self.n - 1)
        for what, x in (("rows", rows), ("cols", cols)):
            if not 1 <= x <= MAX_CELLS:
                raise error(InputError, "errors.viewer_cells", what=what, most=MAX_CELLS, value=x)
        R_, C_ = min(rows, q1 - q0), min(cols, k1 - k0)
        redges = q0 + (np.arange(R_ + 1) * (q1 - q0)) // R_
        cedges = k0 + (np.arange(C_ + 1) * (k1 - k0)) // C_
        grid = np.empty((R_, C_), dtype=np.float32)
        for b0, b1, r0, r1 in self._row_blocks(redges, self.block_rows):
            w = self._weights(layer, [head], r0, r1, torch.float32)[0].numpy()[:, k0:k1]  # (rows, keys)
            w = np.maximum.reduceat(w, cedges[:-1] - k0, axis=1)  # (rows, C)
            grid[b0:b1] = np.maximum.reduceat(w, redges[b0:b1] - r0, axis=0)
        return {"grid": grid, "row_edges": redges.tolist(), "col_edges": cedges.tolist()}

    @one_thread
    def lines(self, layer: int, heads: Sequence[int], budget: int = LINE_BUDGET) -> dict:
        """The head view's lines of ``heads``: the page's rule (weights binned by 0.001; the
        smallest bin edge that leaves at most ``budget`` pairs) gives ``minw``; returned are every
        pair with weight ≥ minw: ``head``, ``query``, ``key`` (int32) and ``weight`` (float32)."""
        for h in heads:
            self.check(layer, h)
        heads = list(heads)
        rows = max(16, BLOCK // (self.n * max(1, len(heads))))
        stacked = self._stacked(layer, heads, torch.float32)
        minw = 0.0
        kept = [np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32)]
        for r0 in range(0, self.n, rows):
            r1 = min(self.n, r0 + rows)
            w, k0 = self._weights_part(layer, heads, r0, r1, torch.float32, stacked)  # (h, l, kw)
            kw = w.shape[-1]
            flat = w.reshape(-1).numpy()
            # pairs below the threshold so far never count again: it only rises as pairs are added
            # (NumPy's flatnonzero: 8× torch.nonzero's speed here)
            idx = np.flatnonzero(flat >= minw if minw > 0 else flat > 0)
            vals = flat[idx]
            new = [vals, np.asarray(heads, dtype=np.int32)[idx // ((r1 - r0) * kw)],
                   (r0 + (idx // kw) % (r1 - r0)).astype(np.int32), (k0 + idx % kw).astype(np.int32)]
            kept = [np.concatenate([a, b]) for a, b in zip(kept, new)]
            bins = np.bincount(np.minimum(np.floor(kept[0].astype(np.float64) * 1000).astype(np.int64), 1000),
                               minlength=1001)
            minw = max(minw, _threshold(bins, budget))  # counts at and above minw are exact
            keep = kept[0] >= minw
            kept = [a[keep] for a in kept]
        ws, hs, qs, ks = kept
        return {"minw": minw, "head": hs, "query": qs, "key": ks, "weight": ws}

    @one_thread
    def thumbnails(self, layer: int, size: int = THUMB) -> np.ndarray:
        """(H, T, T) uint8 thumbnails of ``layer`` (T = min(n, size)): cell means scaled to each
        head's largest cell, as :func:`attnscope.viewer.data.thumbnails`, a block of rows at a time."""
        self.check(layer)
        n, T = self.n, min(self.n, size)
        edges = np.linspace(0, n, T + 1).round().astype(int)  # the same cells as data.thumbnails
        counts = np.diff(edges).astype(np.float64)  # (T,)
        pooled = np.zeros((self.n_heads, T, T))
        heads = list(range(self.n_heads))
        stacked = self._stacked(layer, heads, torch.float32)
        for b, e, r0, r1 in self._row_blocks(edges, max(16, BLOCK // (n * self.n_heads))):
            w = self._weights(layer, heads, r0, r1, torch.float32, stacked).numpy()  # (H, rows, n)
            w = np.add.reduceat(w, edges[:-1], axis=2, dtype=np.float64)  # (H, rows, T)
            pooled[:, b:e] = np.add.reduceat(w, edges[b:e] - r0, axis=1)
        pooled /= counts[None, :, None] * counts[None, None, :]
        top = pooled.reshape(self.n_heads, -1).max(-1)[:, None, None]
        return np.rint(255.0 * pooled / np.where(top > 0, top, 1.0)).astype(np.uint8)


def _turn(x: torch.Tensor, rope: dict) -> torch.Tensor:
    """``x (H, n, d)`` turned at positions 0 … n − 1 in float64: the arithmetic of
    :func:`attnscope.reference.rotate` (same angles, cos, sin and products), on strided halves
    instead of index arrays (10× faster for a layer's heads)."""
    n, d = x.shape[-2:]
    phi = R.rope_angles(np.arange(n), rope["inv_freq"])  # (n, d/2)
    c, s = torch.from_numpy(np.cos(phi)), torch.from_numpy(np.sin(phi))
    x = x.double()
    a, b = (x[..., : d // 2], x[..., d // 2:]) if rope["pairing"] == "half" else (x[..., 0::2], x[..., 1::2])
    out = torch.empty_like(x)
    oa, ob = (out[..., : d // 2], out[..., d // 2:]) if rope["pairing"] == "half" else (out[..., 0::2], out[..., 1::2])
    oa.copy_(a * c - b * s)
    ob.copy_(a * s + b * c)
    return out


def _threshold(bins: np.ndarray, budget: int) -> float:
    """The page's rule: the smallest b/1000 such that at most ``budget`` weights (binned by 0.001,
    bin 1000 = weights of 1) are at or above it."""
    kept, b = int(bins.sum()), 0
    while kept > budget and b < 1000:
        kept -= int(bins[b])
        b += 1
    return b / 1000
