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

:class:`TextStore` keeps held texts by a hash of the text, least recently used first out, within
a byte budget.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np
import torch

from .. import reference as R
from ..errors import InputError
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
        self.q = [trace.step(i, qs, text=0).detach().float().cpu().contiguous() for i in range(self.n_layers)]
        self.k = [trace.step(i, ks, text=0).detach().float().cpu().contiguous() for i in range(self.n_layers)]
        self.v = [trace.step(i, "v", text=0).detach().float().cpu().contiguous() for i in range(self.n_layers)]
        self.factor = R.trace_factor(trace)
        self.causal = bool(cfg.causal)
        self.windows = [trace.window(i) for i in range(self.n_layers)]
        self.rope = rope_tables(cfg, self.n)
        self._ops: OrderedDict = OrderedDict()
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
        key = (layer, head)
        with self._lock:
            hit = self._ops.get(key)
            if hit is not None:
                self._ops.move_to_end(key)
                return hit
        q, k = R.as_f64(self.q[layer][head]), R.as_f64(self.k[layer][head // self.group])
        if self.rope is not None:
            rope, pos = self.rope[layer], np.arange(self.n)
            q, k = (R.rotate(x, pos, rope["inv_freq"], rope["pairing"]) for x in (q, k))
        with self._lock:
            self._ops[key] = (q, k)
            while len(self._ops) > 2 * self.n_heads:
                self._ops.popitem(last=False)
        return q, k

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

    def _block(self, layer: int, head: int, q0: int, q1: int, dtype=torch.float64) -> torch.Tensor:
        """Weights of queries q0 … q1 − 1, (q1 − q0, n) in ``dtype``: softmax(factor · q′·k′ᵀ) over
        the keys each query may see (the arithmetic of :func:`attnscope.reference.attention_weights`).
        A block of rows fits in memory at once, so this is one matrix product, not the tiled
        kernel (whose per-tile work is for rows too long to hold; it agrees, see the tests)."""
        q, k = self.operands(layer, head)
        qt = torch.from_numpy(q[q0:q1]).to(dtype)  # (l, d)
        kt = torch.from_numpy(k).to(dtype)  # (n, d)
        s = (qt @ kt.T) * self.factor  # (l, n)
        if self.causal:
            s.masked_fill_(~torch.from_numpy(self.allowed(layer, q0, q1)), float("-inf"))
        return torch.softmax(s, dim=-1)

    def _check_rows(self, q0: int, q1: int) -> None:
        if not 0 <= q0 < q1 <= self.n:
            raise InputError(f"query rows {q0}..{q1 - 1} are out of range: the text has {self.n} tokens (0..{self.n - 1})")

    # ------------------------------------------------------------------------------------------
    def rows(self, layer: int, heads: Sequence[int], q0: int, q1: int) -> np.ndarray:
        """Weights of queries q0 … q1 − 1 of each of ``heads``: (len(heads), q1 − q0, n) float64."""
        self._check_rows(q0, q1)
        for h in heads:
            self.check(layer, h)
        size = len(heads) * (q1 - q0) * self.n
        if size > MAX_ROW_VALUES:
            raise InputError(f"{len(heads)} heads × {q1 - q0} rows × {self.n} keys = {size:,} weights; "
                             f"ask for at most {MAX_ROW_VALUES:,} at once")
        return np.stack([self._block(layer, h, q0, q1).numpy() for h in heads]) if heads else \
            np.zeros((0, q1 - q0, self.n))

    def steps(self, layer: int, head: int, query: int) -> dict:
        """One row's walk-through, float64 (:func:`attnscope.reference.row_steps`), plus the
        query's q before and after the rotation (``q_pre``, ``q_rot``)."""
        self.check(layer, head)
        query = check_index("query token", query, self.n, "token")
        q, k = self.operands(layer, head)
        allowed = self.allowed(layer, query, query + 1)[0] if self.causal else None
        v = R.as_f64(self.v[layer][head // self.group])
        s = R.row_steps(R.raw_scores(q[query], k), self.factor, allowed, v)
        return {"raw": s["scores"], "scaled": s["masked"], "shift": s["shift"], "exp": s["exp"], "sum": s["sum"],
                "weights": s["weights"], "out": s["output"], "q_pre": R.as_f64(self.q[layer][head][query]),
                "q_rot": q[query]}

    def vectors(self, layer: int, head: int, positions: Sequence[int]) -> dict:
        """q of query head ``head`` and k of its k/v head at ``positions``, before (``*_pre``, the
        stored float32 values) and after the rotation (``*_rot``, float64): (len(positions), d) each."""
        self.check(layer, head)
        pos = [check_index("position", p, self.n, "token") for p in positions]
        q, k = self.operands(layer, head)
        return {"q_pre": R.as_f64(self.q[layer][head][pos]), "k_pre": R.as_f64(self.k[layer][head // self.group][pos]),
                "q_rot": q[pos], "k_rot": k[pos]}

    def _row_blocks(self, q0: int, q1: int, edges: np.ndarray):
        """Runs of whole bins (bin b = rows edges[b] … edges[b + 1] − 1) of about :meth:`block_rows`
        rows: yields (first bin, last bin + 1, first row, last row + 1)."""
        b, nb, most = 0, len(edges) - 1, self.block_rows
        while b < nb:
            e = b + 1
            while e < nb and edges[e + 1] - edges[b] <= most:
                e += 1
            yield b, e, int(edges[b]), int(edges[e])
            b = e

    def heatmap(self, layer: int, head: int, q0: int, q1: int, k0: int, k1: int, rows: int, cols: int) -> dict:
        """Queries q0 … q1 − 1 × keys k0 … k1 − 1 of one head, each cell the largest weight of the
        block it covers: ``{"grid": (R, C) float32, "row_edges": R + 1, "col_edges": C + 1}`` with
        R = min(rows, q1 − q0), C = min(cols, k1 − k0) and cell (r, c) covering queries
        row_edges[r] … row_edges[r + 1] − 1 (edge r = q0 + ⌊r·(q1 − q0)/R⌋), keys likewise."""
        self.check(layer, head)
        self._check_rows(q0, q1)
        if not 0 <= k0 < k1 <= self.n:
            raise InputError(f"keys {k0}..{k1 - 1} are out of range: the text has {self.n} tokens (0..{self.n - 1})")
        for what, x in (("rows", rows), ("cols", cols)):
            if not 1 <= x <= MAX_CELLS:
                raise InputError(f"{what} must be in 1..{MAX_CELLS}, got {x}")
        R_, C_ = min(rows, q1 - q0), min(cols, k1 - k0)
        redges = q0 + (np.arange(R_ + 1) * (q1 - q0)) // R_
        cedges = k0 + (np.arange(C_ + 1) * (k1 - k0)) // C_
        grid = np.empty((R_, C_), dtype=np.float32)
        for b0, b1, r0, r1 in self._row_blocks(q0, q1, redges):
            w = self._block(layer, head, r0, r1, torch.float32).numpy()[:, k0:k1]  # (rows, keys)
            w = np.maximum.reduceat(w, cedges[:-1] - k0, axis=1)  # (rows, C)
            grid[b0:b1] = np.maximum.reduceat(w, redges[b0:b1] - r0, axis=0)
        return {"grid": grid, "row_edges": redges.tolist(), "col_edges": cedges.tolist()}

    def lines(self, layer: int, heads: Sequence[int], budget: int = LINE_BUDGET) -> dict:
        """The head view's lines of ``heads``: the page's rule (weights binned by 0.001; the
        smallest bin edge that leaves at most ``budget`` pairs) gives ``minw``; returned are every
        pair with weight ≥ minw: ``head``, ``query``, ``key`` (int32) and ``weight`` (float32)."""
        for h in heads:
            self.check(layer, h)
        bins = np.zeros(1001, dtype=np.int64)
        cand: list = []  # (head, first row, values, flat indices) of pairs ≥ the threshold so far
        minw = 0.0
        for h in heads:
            for r0 in range(0, self.n, self.block_rows):
                r1 = min(self.n, r0 + self.block_rows)
                w = self._block(layer, h, r0, r1, torch.float32).reshape(-1)  # (rows · n,)
                hist = torch.histc(w, bins=1000, min=0.0, max=1.0).numpy().astype(np.int64)  # [b/1000, (b+1)/1000)
                ones, zeros = int((w >= 1).sum()), int((w <= 0).sum())  # histc puts 1.0 in bin 999
                hist[999] -= ones
                hist[0] -= zeros  # the page counts only weights > 0
                bins[:1000] += hist
                bins[1000] += ones
                # the threshold only rises as pairs are added, so a pair below it now never returns
                minw = _threshold(bins, budget)
                idx = torch.nonzero((w >= minw) & (w > 0)).squeeze(1)
                cand.append((h, r0, w[idx].numpy(), idx.numpy()))
                if len(cand) % 16 == 0:
                    cand = [(c[0], c[1], c[2][c[2] >= minw], c[3][c[2] >= minw]) for c in cand]
        hs, qs, ks, ws = [], [], [], []
        for h, r0, vals, idx in cand:
            sel = vals >= minw
            hs.append(np.full(int(sel.sum()), h, dtype=np.int32))
            qs.append((r0 + idx[sel] // self.n).astype(np.int32))
            ks.append((idx[sel] % self.n).astype(np.int32))
            ws.append(vals[sel].astype(np.float32))
        cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt))
        return {"minw": minw, "head": cat(hs, np.int32), "query": cat(qs, np.int32), "key": cat(ks, np.int32),
                "weight": cat(ws, np.float32)}

    def thumbnails(self, layer: int, size: int = THUMB) -> np.ndarray:
        """(H, T, T) uint8 thumbnails of ``layer`` (T = min(n, size)): cell means scaled to each
        head's largest cell, as :func:`attnscope.viewer.data.thumbnails`, a block of rows at a time."""
        self.check(layer)
        n, T = self.n, min(self.n, size)
        edges = np.linspace(0, n, T + 1).round().astype(int)  # the same cells as data.thumbnails
        counts = np.diff(edges).astype(np.float64)  # (T,)
        out = np.empty((self.n_heads, T, T), dtype=np.uint8)
        for h in range(self.n_heads):
            pooled = np.zeros((T, T))
            for b0, b1, r0, r1 in self._row_blocks(0, n, edges):
                w = self._block(layer, h, r0, r1, torch.float32).numpy().astype(np.float64)  # (rows, n)
                w = np.add.reduceat(w, edges[:-1], axis=1)  # (rows, T)
                pooled[b0:b1] = np.add.reduceat(w, edges[b0:b1] - r0, axis=0)
            pooled /= counts[:, None] * counts[None, :]
            top = pooled.max()
            out[h] = np.rint(255.0 * pooled / (top if top > 0 else 1.0)).astype(np.uint8)
        return out


def _threshold(bins: np.ndarray, budget: int) -> float:
    """The page's rule: the smallest b/1000 such that at most ``budget`` weights (binned by 0.001,
    bin 1000 = weights of 1) are at or above it."""
    kept, b = int(bins.sum()), 0
    while kept > budget and b < 1000:
        kept -= int(bins[b])
        b += 1
    return b / 1000


def text_id(model_name: str, text: str) -> str:
    """The id of a held text: the same text (for the same model) is traced once."""
    return hashlib.sha256(f"{model_name}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()[:24]


class TextStore:
    """Held texts by id, least recently used dropped first once their bytes pass ``max_bytes``
    (the newest is always kept)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[HeldText]:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: str, held: HeldText) -> None:
        with self._lock:
            self._items[key] = held
            self._items.move_to_end(key)
            while len(self._items) > 1 and sum(h.nbytes for h in self._items.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def block_rows(self) -> int:
        """Query rows computed at once (:data:`BLOCK` weights)."""
        return max(64, BLOCK // self.n)

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(h.nbytes for h in self._items.values())
