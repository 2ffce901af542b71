"""The statistics of evaluate-attribution against independent references: Spearman's ρ against a
float64 rank formula written here (scipy is not installed), the bins' token counts by hand, the
bootstrap interval's properties (it holds the mean, a seed gives it back, it narrows with more texts)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscope.faithfulness import stats


def rank_loop(x):
    """Rank of each value: 1 + the number of smaller values + (the number of equal others) / 2."""
    return [1 + sum(y < v for y in x) + (sum(y == v for y in x) - 1) / 2 for v in x]


def spearman_loop(a, b):
    ra, rb = rank_loop(list(a)), rank_loop(list(b))
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    num = sum((p - ma) * (q - mb) for p, q in zip(ra, rb))
    return num / math.sqrt(sum((p - ma) ** 2 for p in ra) * sum((q - mb) ** 2 for q in rb))


@pytest.mark.parametrize("seed", range(6))
def test_spearman_equals_the_rank_formula(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    a = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.normal(size=n)  # ties on odd seeds
    b = a * 0.5 + rng.normal(size=n)
    assert stats.spearman(a, b) == pytest.approx(spearman_loop(a, b), abs=1e-12)


def test_spearman_without_ties_is_the_textbook_formula():
    a = [0.3, 2.0, -1.0, 5.0, 4.0]
    b = [1.0, 3.0, 2.0, 5.0, 0.0]
    d2 = sum((p - q) ** 2 for p, q in zip(rank_loop(a), rank_loop(b)))
    assert stats.spearman(a, b) == pytest.approx(1 - 6 * d2 / (5 * (25 - 1)), abs=1e-12)


def test_spearman_of_a_constant_vector_is_nan():
    assert math.isnan(stats.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_removal_counts_by_hand():
    assert stats.removal_counts(30) == [1, 2, 3, 6, 15]   # ceil(0.3), ceil(1.5), 3, 6, 15
    assert stats.removal_counts(46) == [1, 3, 5, 10, 23]
    assert stats.removal_counts(2) == [1, 1, 1, 1, 1]     # never all of them
    assert stats.removal_counts(4, (90,)) == [3]


def test_eraser_by_hand():
    e = stats.eraser(2.0, [1.5, 1.0], [0.0, 2.5])
    assert e["comprehensiveness"] == [0.5, 1.0] and e["sufficiency"] == [2.0, -0.5]
    assert e["aopc_comprehensiveness"] == 0.75 and e["aopc_sufficiency"] == 0.75


def test_bootstrap_holds_the_mean_and_is_reproducible():
    v = np.random.default_rng(1).normal(0.3, 1.0, 200)
    a, b = stats.bootstrap(v, seed=7), stats.bootstrap(v, seed=7)
    assert a == b
    assert a["low"] < a["mean"] < a["high"] and a["mean"] == pytest.approx(float(v.mean()), abs=1e-15)
    assert stats.bootstrap(v, seed=8) != a
    # the percentile interval of a mean is about ± 1.96 standard errors
    se = v.std(ddof=1) / math.sqrt(len(v))
    assert a["high"] - a["low"] == pytest.approx(2 * 1.96 * se, rel=0.15)
    wide = stats.bootstrap(v[:50], seed=7)
    assert wide["high"] - wide["low"] > a["high"] - a["low"]


def test_bootstrap_percentiles_by_a_loop():
    v = np.arange(10, dtype=float) ** 2
    got = stats.bootstrap(v, seed=3, resamples=400)
    rng = np.random.default_rng(3)
    draws = rng.integers(0, 10, size=(400, 10))
    means = sorted(sum(v[i] for i in row) / 10 for row in draws)
    # numpy's default percentile: linear between the order statistics at (n − 1)·q
    pos = 399 * 0.025
    low = means[int(pos)] + (means[int(pos) + 1] - means[int(pos)]) * (pos - int(pos))
    assert got["low"] == pytest.approx(low, abs=1e-12)


def test_bootstrap_leaves_nan_out():
    got = stats.bootstrap([1.0, float("nan"), 3.0], seed=0)
    assert got["n"] == 2 and got["mean"] == 2.0
