"""Attention flow's maximum flows, compiled: SciPy's Dinic (:func:`scipy.sparse.csgraph.maximum_flow`)
on integer capacities, with a stated bound on what the integers cost.

The layer graph (Abnar & Zuidema 2020) has node ``(l, i)`` = token i entering layer l (``l = 0``:
the input tokens) and an edge ``(l + 1, i) → (l, j)`` of capacity Ã_l[i, j]. ``values[i, j]`` is
the maximum flow from output node ``(layer + 1, i)`` to input token ``(0, j)``: one problem per pair,
as the authors define it (a super-sink would give only a row's total).

**Integers and the bound.** SciPy's maximum flow takes int32 capacities only (an int64 graph is cast
down silently: a capacity of 2⁴⁰ flows 0), so each capacity c becomes ⌊c·2ᵏ⌋ with one power of two
for the whole text, the largest that keeps every capacity and every source's total inside int32
(k = 30 for Ã, whose rows sum to 1). For each problem:

* the maximum flow F_int of the floored graph, divided by 2ᵏ, is a **lower bound** of the true
  maximum flow F (every capacity was only lowered);
* the nodes the source still reaches in the floored graph's residual network form a minimum cut of
  the floored graph; the same cut's **float64** capacity Σ c is an **upper bound** of F (every cut's
  capacity is), and exceeds F_int/2ᵏ by Σ frac(c·2ᵏ)/2ᵏ < (edges in the cut)·2⁻ᵏ.

The value reported is that upper bound, the float64 capacity of a cut; it equals F whenever the cut
is a minimum cut of the float graph too (the usual case: the tests find it equal to networkx's
preflow-push to ~1e-15), and F lies in [lower, upper] always. The width upper − lower is returned
with it: on MiniLM's own Ã (one text each) median ~1e-8, at most 1.5e-7 at 45–64 tokens and
2.8e-7 at 127 (a cut of more edges) — inside the 1e-6 the issue asks for.

**Structure used.** Per output row i the graph keeps only the nodes row i reaches (a causal or
windowed mask leaves out the later / farther tokens; an input token never reached gets 0); the
input layer is reduced to the one sink j (the other input tokens are dead ends of no flow), so one
CSR graph is built per row with numpy and only the L sink capacities change between its L problems.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import InputError
from ..i18n import error

#: SciPy's capacities are int32: the largest total a source may send once scaled
INT_MAX = 2**31 - 1
#: SciPy's maximum-flow algorithm used (its Edmonds–Karp is slower on these graphs: see the module's tests)
METHOD = "dinic"


def scale_bits(A_tilde: np.ndarray, layer: int) -> int:
    """k of the scaling ⌊c·2ᵏ⌋: the largest that keeps the biggest capacity and the biggest out-total
    of an output node of ``layer`` (what one problem can send) at most 2³¹ − 1; 30 for rows summing to 1."""
    top = max(float(A_tilde[: layer + 1].max(initial=0.0)), float(A_tilde[layer].sum(axis=-1).max(initial=0.0)))
    if top <= 0.0:
        return 0  # no edge at all: every flow is 0
    return int(np.floor(np.log2(INT_MAX / top)))


def _check(A_tilde: np.ndarray, layer: int) -> np.ndarray:
    A = np.asarray(A_tilde, dtype=np.float64)
    if A.ndim != 3 or A.shape[-1] != A.shape[-2] or A.shape[-1] == 0:
        raise error(InputError, "errors.flow_capacity_shape", shape=tuple(A.shape))
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < A.shape[0]:
        raise error(InputError, "errors.reference_flow_layer", layer=layer, n=A.shape[0])
    if not np.isfinite(A[: layer + 1]).all() or (A[: layer + 1] < 0).any():
        raise error(InputError, "errors.flow_capacity_values")
    return A


class _RowGraph:
    """The layer graph of one output row: node 0 = the source, then the nodes the row reaches, level
    by level (layer, layer − 1, …, 1), the sink last; its edges sorted by (tail, head), the ``n_feed``
    edges into the sink last (their capacities depend on the sink, the rest do not)."""

    def __init__(self, A: np.ndarray, layer: int, row: int, k: int):
        levels = [np.array([row])]  # level t holds nodes of layer (layer + 1 − t); t = 0 the source
        for t in range(layer):
            reach = (A[layer - t][levels[-1]] > 0).any(axis=0)  # (L,): reached one layer down
            levels.append(np.flatnonzero(reach))
        self.feed = levels[-1]  # the nodes with an edge into the sink (layer 1, or the source if layer = 0)
        self.reach = np.flatnonzero((A[0][self.feed] > 0).any(axis=0))  # the input tokens the row reaches
        starts = np.cumsum([0] + [len(v) for v in levels])  # first node id of each level
        src, dst, cap = [], [], []
        for t in range(layer):
            sub = A[layer - t][np.ix_(levels[t], levels[t + 1])]  # (|level t|, |level t+1|)
            a, b = np.nonzero(sub > 0)  # row-major: sorted by (tail, head)
            src.append(starts[t] + a)
            dst.append(starts[t + 1] + b)
            cap.append(sub[a, b])
        self.n = int(starts[-1]) + 1  # nodes
        n_feed = len(self.feed)
        src.append(starts[layer] + np.arange(n_feed))
        dst.append(np.full(n_feed, self.n - 1))
        cap.append(np.zeros(n_feed))
        self.src, self.dst = np.concatenate(src), np.concatenate(dst)  # (E,), (E,) int
        self.cap = np.concatenate(cap)  # (E,) float64; the last n_feed set per sink
        self.icap = np.floor(self.cap * 2.0**k).astype(np.int32)  # (E,): the floored integers
        self.out = np.flatnonzero(self.src == 0)  # the source's edges
        # SciPy returns the flow on every edge and its reverse, sorted by (tail, head): that order
        # here, ``fwd`` = where each edge lands in it, ``rev`` = where its reverse lands.
        rows = np.concatenate([self.src, self.dst])
        cols = np.concatenate([self.dst, self.src])
        order = np.lexsort((cols, rows))
        where = np.argsort(order)
        self.sym_cols = cols[order]  # (2E,)
        self.sym_ptr = np.searchsorted(rows[order], np.arange(self.n + 1))  # (n + 1,)
        self.fwd, self.rev = where[: len(self.src)], where[len(self.src):]  # (E,), (E,)


class _Union:
    """G copies of a row graph joined for one SciPy call: the index arrays, which depend only on the
    row graph's edges and G (every row of an encoder shares them), built once."""

    def __init__(self, g: _RowGraph, G: int):
        n, E = g.n, len(g.src)
        self.src, self.dst, self.G = g.src, g.dst, G
        self.off = 1 + n * np.arange(G)  # (G,): node id of each copy's source; s* = 0, t* = G·n + 1
        self.t_star = G * n + 1
        # The union for SciPy, sorted by (tail, head): s*'s G edges, then each copy's edges (its
        # sink's one edge to t* last), t* none.
        counts = np.diff(np.searchsorted(g.src, np.arange(n + 1)))  # (n,): edges per node of a copy
        counts[-1] = 1  # the sink's edge to t*
        self.indptr = np.concatenate([[0], np.cumsum(np.concatenate([[G], np.tile(counts, G), [0]]))]
                                     ).astype(np.int32)  # (G·n + 3,)
        heads = np.empty((G, E + 1), dtype=np.int32)  # (G, E + 1)
        heads[:, :E] = g.dst + self.off[:, None]
        heads[:, E] = self.t_star
        self.indices = np.concatenate([self.off, heads.ravel()]).astype(np.int32)
        # The residual network's arcs, in SciPy's flow order (see _solve): each copy's 2E arcs.
        self.arc_heads = (g.sym_cols + self.off[:, None]).astype(np.int32)  # (G, 2E)
        self.node_first = (2 * E * np.arange(G)[:, None] + g.sym_ptr[:-1]).ravel()  # (G·n,): a node's first arc

    def fits(self, g: _RowGraph, G: int) -> bool:
        return G == self.G and np.array_equal(g.src, self.src) and np.array_equal(g.dst, self.dst)


def _solve(g: _RowGraph, u: _Union, A0: np.ndarray, sinks: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper), each (G,): bounds of the maximum flow from ``g``'s source to each input token
    of ``sinks`` (G,), all G problems in one SciPy call on the union ``u``.

    The G copies of the row graph (each with its own sink's capacities) are joined by a super-source
    s* with an edge to each copy's source and a super-sink t* with one from each copy's sink, both of
    capacity the source's total (no copy can carry more): a maximum flow of the union is a maximum
    flow of every copy (they share no node but s* and t*), read on each copy's own edges. One call
    pays SciPy's fixed cost (~0.5 ms) once for G problems. SciPy keeps no sum of flows in int32
    (each edge's flow only), so the union's total may pass 2³¹."""
    # SciPy is imported when flow runs, not with the package: scipy.sparse.csgraph takes ~0.4 s to
    # import, which the viewer and every command that imports attnscope.attribution would pay.
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    G, E, nf = len(sinks), len(g.src), len(g.feed)
    scale = 2.0**k
    sink_cap = A0[np.ix_(g.feed, sinks)].T  # (G, n_feed) float64: the edges into each copy's sink
    data = np.empty(G + G * (E + 1), dtype=np.int32)  # the union's capacities, in u.indices' order
    copies = data[G:].reshape(G, E + 1)  # (G, E + 1)
    copies[:, :E] = g.icap
    copies[:, E - nf:E] = np.floor(sink_cap * scale).astype(np.int32)
    total = copies[:, g.out].sum(axis=1, dtype=np.int64)  # (G,): what each source can send, ≤ 2³¹ − 1
    data[:G] = total
    copies[:, E] = total
    graph = csr_array((data, u.indices, u.indptr), shape=(u.t_star + 1, u.t_star + 1))
    flow = maximum_flow(graph, 0, u.t_star, method=METHOD).flow
    # SciPy's flow, in (tail, head) order: s*'s G edges, then per copy [its source → s*, its own
    # 2E edges and reverses, its sink → t*], then t*'s G reverses.
    S = 2 * E
    if len(flow.data) != 2 * G + G * (S + 2):
        raise RuntimeError("scipy's maximum_flow returned its flow in a layout this code does not read")
    lower = flow.data[:G] / scale  # (G,): each copy's flow, the integers' maximum / 2ᵏ
    own = flow.data[G: G + G * (S + 2)].reshape(G, S + 2)[:, 1:-1]  # (G, 2E): each copy's arcs
    # The residual network: an edge is open while its flow is below its capacity, its reverse while
    # its flow is above 0; the nodes each copy's source reaches in it are its side of a minimum cut.
    f = own[:, g.fwd]  # (G, E): flow on each edge
    open_ = np.empty((G, S), dtype=bool)
    open_[:, g.fwd] = f < copies[:, :E]
    open_[:, g.rev] = f > 0
    # One breadth-first search for all copies: a start node 0 with an edge to each copy's source.
    heads = u.arc_heads[open_]  # (open arcs,)
    cum = np.empty(G * S + 1, dtype=np.int32)
    cum[0] = 0
    np.cumsum(open_.ravel(), out=cum[1:])
    indptr = np.empty(G * g.n + 2, dtype=np.int32)
    indptr[0], indptr[1:-1], indptr[-1] = 0, G + cum[u.node_first], G + len(heads)
    residual = csr_array((np.ones(G + len(heads)), np.concatenate([u.off.astype(np.int32), heads]), indptr),
                         shape=(G * g.n + 1, G * g.n + 1))
    side = np.zeros(G * g.n + 1, dtype=bool)
    side[breadth_first_order(residual, 0, directed=True, return_predecessors=False)] = True
    side_c = side[1:].reshape(G, g.n)  # (G, n): each copy's source side
    cut = side_c[:, g.src] & ~side_c[:, g.dst]  # (G, E): the edges leaving the source's side
    upper = cut[:, : E - nf].astype(np.float64) @ g.cap[: E - nf] + (cut[:, E - nf:] * sink_cap).sum(axis=1)  # (G,)
    return lower, upper


#: the most edges of one union of copies given to SciPy at once. Measured on MiniLM's Ã of three texts
#: of 45–50 tokens (one CPU thread, seconds a text): 4–8 sinks a union 3.1–5.4 s, all 48 at once
#: 3.0–6.2 s (Dinic then runs as many phases on every copy as the slowest needs), one a call 5.0–21.8 s
#: (SciPy's ~0.5 ms a call and the residual's arrays each time); 80 000 edges is 8 sinks at 48 tokens.
UNION_EDGES = 80_000


def normalise_rows(rows: Optional[Sequence[int]], n: int) -> Optional[list[int]]:
    """The output rows asked for as sorted positions 0 … n − 1 (negative ones count from the end);
    None stays None (every row). One clear InputError for anything else."""
    if rows is None:
        return None
    if isinstance(rows, (str, bytes)) or not all(
            isinstance(r, (int, np.integer)) and not isinstance(r, bool) and -n <= r < n for r in rows):
        raise error(InputError, "errors.attribution_flow_rows", rows=repr(rows), n=n, last=n - 1)
    return sorted({int(r) % n for r in rows})


def flow_bounds(A_tilde: np.ndarray, layer: int, rows: Optional[Sequence[int]] = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, both (L, L) float64: bounds of the maximum flow from output node i of
    ``layer`` to input token j through the layer graph of capacities ``A_tilde (n_layers, L, L)``
    (see the module: lower = the floored integers' flow / 2ᵏ, upper = the float capacity of their
    minimum cut; the true value lies between, upper − lower < (edges in the cut)·2⁻ᵏ). Only the
    output rows ``rows`` (default all; negative ones count from the end), the others NaN; an input
    token the row never reaches gets 0 in both."""
    A = _check(A_tilde, layer)
    n = A.shape[-1]
    rows = normalise_rows(rows, n)
    k = scale_bits(A, layer)
    lower, upper = np.full((n, n), np.nan), np.full((n, n), np.nan)
    unions: dict[int, _Union] = {}
    for i in (range(n) if rows is None else rows):
        lower[i], upper[i] = 0.0, 0.0
        g = _RowGraph(A, layer, i, k)
        step = max(1, UNION_EDGES // len(g.src))  # sinks a union
        for s in range(0, len(g.reach), step):
            sinks = g.reach[s: s + step]
            u = unions.get(len(sinks))
            if u is None or not u.fits(g, len(sinks)):
                u = unions[len(sinks)] = _Union(g, len(sinks))
            lower[i, sinks], upper[i, sinks] = _solve(g, u, A[0], sinks, k)
    return lower, upper
