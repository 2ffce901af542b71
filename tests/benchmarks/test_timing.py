"""benchmarks/timing.py's interval of a median against its definition: the order statistics whose
coverage, from scipy's binomial distribution, is the largest k still at the level."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from timing import median_interval  # noqa: E402


@pytest.mark.parametrize("n", [1, 5, 6, 7, 9, 15, 21, 40])
def test_the_interval_is_the_widest_order_statistics_at_the_level(n):
    values = list(np.random.default_rng(n).permutation(np.arange(n, dtype=float) + 10.0))
    lo, hi, cover = median_interval(values)

    def coverage(k: int) -> float:  # P(k ≤ B ≤ n − k), B ~ Binomial(n, ½)
        return float(binom.cdf(n - k, n, 0.5) - binom.cdf(k - 1, n, 0.5))
    ks = [k for k in range(1, n // 2 + 1) if coverage(k) >= 0.95]
    k = max(ks) if ks else 1
    assert (lo, hi) == (10.0 + k - 1, 10.0 + n - k)  # the k-th smallest and the k-th largest of 10, 11, …
    assert cover == pytest.approx(coverage(k))
    assert (cover >= 0.95) == bool(ks)


def test_known_cases():
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0, 7.0, 6.0])[:2] == (1.0, 7.0)  # 7 rounds: the range (98.4 %)
    lo, hi, cover = median_interval([float(x) for x in range(15)])
    assert (lo, hi) == (3.0, 11.0) and cover == pytest.approx(1 - 2 * (1 + 15 + 105 + 455) / 2 ** 15)
    with pytest.raises(ValueError):
        median_interval([])
