"""Spearman's ρ with ties and its permutation p-value against brute-force computations, and the
layer trend verdicts on synthetic heads."""

import itertools
import statistics

import numpy as np
import pytest

from attnscope.analysis.classify import classify_heads
from attnscope.analysis.stats import STAT_NAMES
from attnscope.analysis.summary import layer_summary, permutation_pvalue, rankdata, spearman


def brute_ranks(x):
    """rank_i = #(x_j < x_i) + (#(x_j == x_i) + 1) / 2: the mid-rank of i's tie group."""
    return [sum(y < v for y in x) + (sum(y == v for y in x) + 1) / 2 for v in x]


def brute_spearman(x, y):
    return statistics.correlation(brute_ranks(x), brute_ranks(y))


def test_ranks_with_ties():
    x = [3.0, 1.0, 3.0, 2.0, 3.0, 0.5]
    assert rankdata(x).tolist() == brute_ranks(x) == [5.0, 2.0, 5.0, 3.0, 5.0, 1.0]


@pytest.mark.parametrize("seed", range(3))
def test_spearman_matches_pearson_of_midranks(seed):
    rng = np.random.default_rng(seed)
    x = np.repeat(np.arange(4), 5).astype(float)             # layer indices: tied in groups
    y = np.round(rng.normal(size=20) + 0.3 * x, 1)           # rounded: ties in y too
    assert spearman(x, y) == pytest.approx(brute_spearman(list(x), list(y)), abs=1e-12)


def test_exact_pvalue_by_enumeration():
    x, y = [0, 0, 1, 1, 2, 2], [0.1, 0.3, 0.2, 0.5, 0.4, 0.9]
    rho = abs(brute_spearman(x, y))
    perms = list(itertools.permutations(y))
    want = sum(abs(brute_spearman(x, list(p))) >= rho - 1e-12 for p in perms) / len(perms)
    assert permutation_pvalue(x, y) == pytest.approx(want, abs=1e-12)


def test_monte_carlo_pvalue():
    x = np.arange(30.0)
    assert permutation_pvalue(x, x, n_perm=2000) == pytest.approx(1 / 2001)           # nothing beats perfect order
    rng = np.random.default_rng(0)
    p = permutation_pvalue(x, rng.normal(size=30), n_perm=4000)
    assert 0.05 < p <= 1.0  # unrelated data: no significance (this seed gives ρ ≈ 0)


def synthetic(distance_rows, content_rows=None, n_heads=4):
    n_layers = len(distance_rows)
    m = {s: np.full((n_layers, n_heads), 0.1) for s in STAT_NAMES}
    m["distance"] = np.array(distance_rows, dtype=float)
    m["distance_content"] = np.array(content_rows if content_rows is not None else distance_rows, dtype=float)
    m["entropy_norm"] = np.full((n_layers, n_heads), 0.5)
    return m


def test_claim_supported_when_distance_rises():
    rows = [[1, 2, 1.5, 2.5], [3, 2.8, 3.5, 4], [5, 4.5, 6, 5.5], [7, 8, 6.5, 7.5]]
    m = synthetic(rows)
    s = layer_summary(m, classify_heads(m))
    t = s["trends"]["distance"]
    assert t["rho_heads"] > 0.9 and t["p_heads"] < 0.001
    assert t["rho_layers"] == pytest.approx(1.0)
    assert s["claim"].startswith("supported")
    assert [r["distance"] for r in s["layers"]] == pytest.approx([1.75, 3.325, 5.25, 7.25])


def test_claim_partly_when_only_the_special_token_jumps_grow():
    rows = [[1, 2, 1.5, 2.5], [3, 2.8, 3.5, 4], [5, 4.5, 6, 5.5], [7, 8, 6.5, 7.5]]
    flat = [[2, 3, 1, 4], [3, 1, 4, 2], [4, 2, 3, 1], [1, 4, 2, 3]]
    m = synthetic(rows, flat)
    s = layer_summary(m, classify_heads(m))
    assert s["trends"]["distance_content"]["p_heads"] > 0.05
    assert s["claim"].startswith("partly supported: attention distance grows")


def test_claim_contradicted_when_distance_falls():
    rows = [[7, 8, 6.5, 7.5], [5, 4.5, 6, 5.5], [3, 2.8, 3.5, 4], [1, 2, 1.5, 2.5]]
    m = synthetic(rows)
    s = layer_summary(m, classify_heads(m))
    assert s["claim"].startswith("contradicted")
    assert "contradicts" in s["trends"]["distance"]["verdict"]


def test_claim_notes_when_the_first_layer_is_not_the_most_local():
    rows = [[5, 6, 5.5, 6.5], [1, 2, 1.5, 2.5], [5, 4.5, 6, 5.5], [7, 8, 6.5, 7.5], [9, 8.5, 9.5, 10]]
    m = synthetic(rows)
    s = layer_summary(m, classify_heads(m))
    assert s["claim"].startswith("supported")
    assert s["claim"].endswith("the most local layer is layer 1 (content distance 1.8 tokens against 5.8 in "
                               "layer 0, whose normalised entropy is 0.50)")


def test_one_layer_cannot_test_the_claim(capsys):
    """A one-layer model has no trend with depth: the verdict said "not supported: no significant
    trend" (a negative finding it never tested) and the CLI printed "ρ = +nan, p = nan"."""
    from types import SimpleNamespace

    from attnscope.cli.analyze import print_summary
    rng = np.random.default_rng(0)
    means = {s: rng.uniform(0.1, 0.9, size=(1, 4)) for s in STAT_NAMES}
    labels = classify_heads(means)
    s = layer_summary(means, labels, n_perm=100)
    assert s["claim"].startswith("cannot be tested") and "not supported" not in s["claim"]
    result = SimpleNamespace(counters={"texts": 2, "tokens": 20, "truncated": 0, "skipped_decode": 0, "empty": 0,
                                       "importance_texts": 0, "repeat_texts": 0},
                             timings={}, seconds=1.0, model_name="m", corpus="c", world_size=1, summary=s,
                             baseline_distance=1.5, importance=None, means=means, config=None)
    print_summary(result, "out", 5)
    said = capsys.readouterr().out
    assert "cannot be tested" in said and "nan" not in said
