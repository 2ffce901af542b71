"""Attention flow's algorithm and its rows= option (attnscope.attribution.weights.flow_values): the
compiled maximum flow (SciPy's Dinic, attnscope.attribution.maxflow) against the reference's
networkx preflow-push and a hand-written Edmonds–Karp on the same capacities, the rows asked for
equal to the full matrix's rows (the others NaN), and flow in the faithfulness evaluation reading
only the row it needs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnscope.attribution import weights as W
from attnscope.errors import InputError
from attnscope.faithfulness.evaluate import Scorer, evaluate_text
from attnscope.faithfulness.stats import spearman
from attnscope.reference import attribution as RA
from tests.attribution.flow_ref import flow_values as edmonds_karp_values

TEXT = "Flow follows every path through the layers."


def capacities(L: int, K: int, causal: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(K, L, L)) * 2
    if causal:
        s = np.where(np.tril(np.ones((L, L)))[None] > 0, s, -np.inf)
    A = np.exp(s - s.max(-1, keepdims=True))
    return RA.residual_attention(A / A.sum(-1, keepdims=True))  # (K, L, L)


@pytest.mark.parametrize("L, K, causal", [(7, 3, False), (8, 4, True)])
def test_the_algorithm_gives_the_reference_values(L, K, causal):
    A = capacities(L, K, causal, seed=L)
    got = W.flow_values(A, K - 1)
    ref, _ = RA.attention_flow(A, K - 1)  # networkx's preflow-push
    assert np.abs(got - ref).max() <= 1e-9  # a minimum cut's float64 capacity: measured ~1e-15
    assert np.abs(got - np.array(edmonds_karp_values(A, K - 1))).max() <= 1e-9


def test_rows_are_the_full_matrix_rows(tiny):
    model = tiny("gpt2")
    full = model.attribute(TEXT, "flow")
    part = model.attribute(TEXT, "flow", rows=[-1, 1])
    n = len(full.tokens)
    for i in (1, n - 1):
        assert torch.equal(part.scores[i], full.scores[i]) and torch.equal(part.details["values"][i], full.details["values"][i])
    others = [i for i in range(n) if i not in (1, n - 1)]
    assert bool(torch.isnan(part.scores[others]).all()) and part.details["rows"] == [1, n - 1]
    for bad in ([n], [-n - 1], "0", [True], [0.5]):
        with pytest.raises(InputError, match="rows must be a list of positions") as e:
            model.attribute(TEXT, "flow", rows=bad)
        assert "\n" not in str(e.value)


def test_flow_in_the_evaluation_reads_the_last_row(tiny):
    model = tiny("gpt2")
    r = evaluate_text(model, 0, "here", TEXT, ["flow"], {}, [0.1, 0.5], seed=0)
    full = model.attribute(TEXT, "flow").scores[-1].double().numpy()
    loo = model.attribute(TEXT, "leave_one_out").scores.double().numpy()
    content = Scorer(model, TEXT).content  # the text's own tokens (no special one is ranked)
    want = spearman(full[content], loo[content])
    assert math.isclose(r.rho["flow"], want, rel_tol=1e-12, abs_tol=1e-12)
