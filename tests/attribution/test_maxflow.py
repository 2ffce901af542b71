"""Attention flow's compiled maximum flows (attnscope.attribution.maxflow): SciPy's Dinic on
capacities floored to multiples of 2⁻ᵏ, reported as the float64 capacity of a minimum cut, against
two independent algorithms on the same capacities — networkx's preflow-push (the reference) and a
hand-written Edmonds–Karp (tests/attribution/flow_ref.py) — on random dense, causal and windowed
matrices and on MiniLM's own; the stated bounds hold (lower ≤ true ≤ upper, width ≤ 1e-7); bad
capacities are one clear error."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from attnscope.attribution import maxflow as MF
from attnscope.errors import InputError
from attnscope.reference import attribution as RA
from tests.attribution.flow_ref import flow_values as edmonds_karp_values

# Within the width of the bounds, which these cases keep below 1e-7 (the value is a cut's capacity:
# measured equal to preflow-push to ~1e-15); the issue asks ≤ 1e-6.
CLOSE = 1e-7


def capacities(L: int, K: int, causal: bool, seed: int, window: int = 0) -> np.ndarray:
    """(K, L, L) Ã of random softmax weights: dense, causal, or causal within ``window`` tokens."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(K, L, L)) * 3
    if causal:
        keep = np.tril(np.ones((L, L)))
        if window:
            keep = keep * np.triu(np.ones((L, L)), -window + 1)
        s = np.where(keep[None] > 0, s, -np.inf)
    A = np.exp(s - s.max(-1, keepdims=True))
    return RA.residual_attention(A / A.sum(-1, keepdims=True))  # (K, L, L)


@pytest.mark.parametrize("L, K, causal, window", [(8, 4, False, 0), (10, 4, True, 0), (10, 3, True, 3)])
def test_values_equal_preflow_push_and_edmonds_karp_and_the_bounds_hold(L, K, causal, window):
    A = capacities(L, K, causal, seed=L + K, window=window)
    for layer in (0, K - 1):
        lower, upper = MF.flow_bounds(A, layer)
        ref, _ = RA.attention_flow(A, layer)  # networkx's preflow-push, float64
        assert np.abs(upper - ref).max() <= CLOSE
        assert np.abs(upper - np.array(edmonds_karp_values(A, layer))).max() <= CLOSE
        assert (lower <= ref + 1e-12).all() and (ref <= upper + 1e-12).all()  # the true value lies between
        assert 0.0 <= (upper - lower).min() and (upper - lower).max() <= 1e-7
        if causal:  # a row never reaches a later token: exactly 0 in both bounds
            later = np.triu(np.ones((L, L), dtype=bool), 1)
            assert (upper[later] == 0).all() and (lower[later] == 0).all()


def test_rows_are_the_full_rows_and_the_rest_nan():
    A = capacities(8, 3, False, seed=1)
    full = MF.flow_bounds(A, 2)
    part = MF.flow_bounds(A, 2, rows=[-1, 2, 2])
    for a, b in zip(full, part):
        assert np.array_equal(a[[2, 7]], b[[2, 7]])
        assert np.isnan(np.delete(b, [2, 7], axis=0)).all()


def test_the_scale_follows_the_capacities():
    """Flow is linear in the capacities: capacities ×1000 or ×1e-6 (k chosen so that the biggest
    stays inside int32) give the same flows scaled, and the bound scales with them."""
    A = capacities(7, 3, False, seed=2)
    base = MF.flow_bounds(A, 2)[1]
    assert MF.scale_bits(A, 2) == 30
    for c in (1e3, 1e-6):
        lower, upper = MF.flow_bounds(A * c, 2)
        assert np.abs(upper / c - base).max() <= 1e-12
        assert (upper - lower).max() <= 1e-7 * c


def test_minilm_text_equals_preflow_push_and_the_bound_is_narrow(minilm):
    """MiniLM's own Ã (a 7-token text, every layer's weights): every pair against the reference;
    and on a text of 45 tokens (the faithfulness evaluation's size) the first and last rows, with
    the bound ≤ 1e-7 and three pairs of each against the reference."""
    short = minilm.attribute("Flow follows every path.", "flow")
    A = short.per_layer.double().numpy()
    n = A.shape[0]
    ref, scores = RA.attention_flow(A, n - 1)
    assert np.abs(short.details["values"].double().numpy() - ref).max() <= 1e-6  # float32 only in the output
    assert np.abs(MF.flow_bounds(A, n - 1)[1] - ref).max() <= CLOSE
    assert np.abs(short.scores.double().numpy() - scores).max() <= 1e-6
    assert 0.0 <= short.details["bound"] <= 1e-7
    text = ("The museum opened a new wing last spring, and since then the number of visitors has grown every "
            "month, mostly families who come for the dinosaur skeletons and stay for the café; many return the "
            "following week with friends.")
    long = minilm.attribute(text, "flow", rows=[0, -1])
    L = len(long.tokens)
    assert 40 <= L <= 56
    A = long.per_layer.double().numpy()
    lower, upper = MF.flow_bounds(A, n - 1, rows=[0, L - 1])
    cols = [0, L // 2, L - 1]  # the reference takes ~0.1 s a pair here: these pairs only
    for i in (0, L - 1):
        ref = reference_pairs(A, n - 1, i, cols)  # (3,)
        assert np.abs(upper[i, cols] - ref).max() <= CLOSE
        assert (lower[i, cols] <= ref + 1e-12).all() and (ref <= upper[i, cols] + 1e-12).all()
    assert (upper - lower)[[0, L - 1]].max() <= 1e-7 and long.details["bound"] <= 1e-7


def reference_pairs(A: np.ndarray, layer: int, i: int, cols: list[int]) -> np.ndarray:
    """The reference's values of row i at input tokens ``cols``: networkx's preflow-push on the
    reference's own graph (:func:`attnscope.reference.attribution.flow_graph`)."""
    from networkx.algorithms.flow import build_residual_network, maximum_flow_value, preflow_push

    g = RA.flow_graph(A, layer)
    residual = build_residual_network(g, "capacity")
    return np.array([maximum_flow_value(g, (layer + 1, i), (0, j), flow_func=preflow_push, residual=residual)
                     for j in cols])


@pytest.mark.parametrize("A, layer, words", [
    (np.ones((2, 3)), 0, r"shape \(layers, L, L\).*got shape \(2, 3\)"),
    (np.ones((2, 3, 4)), 0, "got shape"),
    (np.zeros((2, 0, 0)), 0, "L at least 1"),
    (np.full((2, 3, 3), np.nan), 0, "finite capacities that are not negative"),
    (-np.ones((2, 3, 3)), 1, "finite capacities that are not negative"),
    (np.ones((2, 3, 3)), 2, "layer 2 is out of range for 2 layers"),
    (np.ones((2, 3, 3)), True, "layer True is out of range"),
])
def test_bad_capacities_are_one_clear_error(A, layer, words):
    with pytest.raises(InputError, match=words) as e:
        MF.flow_bounds(A, layer)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="rows must be a list of positions"):
        MF.flow_bounds(np.ones((1, 3, 3)) / 3, 0, rows=[3])


def test_the_reference_without_networkx_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)  # import networkx now raises ImportError
    with pytest.raises(InputError, match="pip install networkx"):
        RA.attention_flow(capacities(3, 1, False, seed=0), 0)
