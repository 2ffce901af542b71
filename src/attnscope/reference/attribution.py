"""Attention rollout and attention flow in float64 NumPy (Abnar & Zuidema 2020, "Quantifying
Attention Flow in Transformers"): the formulas :mod:`attnscope.attribution.weights` applies to a
model's traced weights, here on plain arrays — feed them the float64 weights of
:func:`attnscope.reference_model.forward` (:func:`mean_weights`) for the reference twin.

Row i = the output position, column j = the input token, as everywhere in attnscope.

Attention flow here is networkx's preflow-push on float64 capacities: an algorithm and a library
independent of :mod:`attnscope.attribution.maxflow` (SciPy's Dinic on integers), which the tests
compare it with. networkx is in attnscope's ``test`` extra only; without it :func:`flow_graph` and
:func:`attention_flow` raise one InputError saying so.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..i18n import error

Array = np.ndarray


def mean_weights(f: dict, n_layers: int, prefix: str = "") -> Array:
    """``(n_layers, L, L)`` float64: each layer's attention weights averaged over its (query) heads,
    from a float64 forward's dict ``f`` (names ``{prefix}layers.{i}.attn.weights``, each (H, L, L))."""
    return np.stack([np.asarray(f[f"{prefix}layers.{i}.attn.weights"], dtype=np.float64).mean(axis=0)
                     for i in range(n_layers)])  # (n_layers, L, L)


def residual_attention(A: Array) -> Array:
    """Ã = ½·A + ½·I with each row renormalised to sum 1 (the residual connection counted as
    attention to oneself): ``A`` (…, L, L) → (…, L, L)."""
    A = np.asarray(A, dtype=np.float64)
    t = 0.5 * A + 0.5 * np.eye(A.shape[-1])  # (…, L, L)
    return t / t.sum(axis=-1, keepdims=True)


def rollout(A_tilde: Array) -> Array:
    """``(n_layers, L, L)``: R_0 = Ã_0, R_l = Ã_l · R_{l−1} (row i of R_l: how much of output i at
    layer l comes from each input token). ``A_tilde`` (n_layers, L, L) from :func:`residual_attention`."""
    out = np.empty_like(np.asarray(A_tilde, dtype=np.float64))
    acc = np.eye(A_tilde.shape[-1])
    for i, a in enumerate(A_tilde):
        acc = a @ acc  # (L, L)
        out[i] = acc
    return out


def _networkx():
    """The networkx package, or one InputError saying how to install it."""
    try:
        import networkx  # type: ignore[import-untyped]  # no inline types; stubs are a separate package
    except ImportError:
        raise error(InputError, "errors.reference_flow_networkx") from None
    return networkx


def flow_graph(A_tilde: Array, layer: int):
    """The layer graph of attention flow as a ``networkx.DiGraph``: node ``(l, i)`` = token i
    entering layer l (``l = 0``: the input tokens), ``(l + 1, i)`` its output; edge
    ``(l + 1, i) → (l, j)`` with capacity Ã_l[i, j] for layers 0 … ``layer`` (zero capacities,
    e.g. a causal or windowed mask, have no edge)."""
    g = _networkx().DiGraph()
    n = A_tilde.shape[-1]
    for l in range(layer + 1):
        g.add_nodes_from((l, i) for i in range(n))
        for i in range(n):
            for j in range(n):
                c = float(A_tilde[l, i, j])
                if c > 0.0:
                    g.add_edge((l + 1, i), (l, j), capacity=c)
    g.add_nodes_from((layer + 1, i) for i in range(n))
    return g


def attention_flow(A_tilde: Array, layer: int) -> tuple[Array, Array]:
    """Attention flow up to ``layer``: ``(values, scores)``, both (L, L) float64. ``values[i, j]``
    = the maximum flow from output node i of ``layer`` to input token j in :func:`flow_graph`
    (networkx's ``maximum_flow_value`` with its preflow-push algorithm); ``scores`` = each row of
    ``values`` divided by its sum, as the authors' code does (samiraabnar/attention_flow,
    ``compute_flows``, with the same graph; a row of zeros stays zeros). The maximum flow is unique,
    so the algorithm (theirs: Edmonds–Karp) changes only the time, not the values."""
    nx = _networkx()
    from networkx.algorithms.flow import build_residual_network, maximum_flow_value, preflow_push  # type: ignore[import-untyped]

    A_tilde = np.asarray(A_tilde, dtype=np.float64)
    if not 0 <= layer < A_tilde.shape[0]:
        raise error(InputError, "errors.reference_flow_layer", layer=layer, n=A_tilde.shape[0])
    g = flow_graph(A_tilde, layer)
    n = A_tilde.shape[-1]
    values = np.zeros((n, n))
    for i in range(n):
        # Only the nodes output i reaches carry its flow (a causal or windowed mask leaves out the
        # later / farther tokens): the flow runs on that subgraph, whose residual network is built
        # once per row (preflow-push resets its flows each call); an input it never reaches gets 0.
        source = (layer + 1, i)
        sub = g.subgraph(nx.descendants(g, source) | {source})
        residual = build_residual_network(sub, "capacity")
        for j in range(n):
            if (0, j) in sub:
                values[i, j] = maximum_flow_value(sub, source, (0, j), flow_func=preflow_push, residual=residual)
    sums = values.sum(axis=-1, keepdims=True)  # (L, 1)
    scores = np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)
    return values, scores
