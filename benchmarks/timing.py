"""Paired timing for the benchmarks: ratios of calls run side by side, robust to a shared machine.

This machine's 2 cores are shared (other sessions' test suites, a noisy host): the same call's
minimum over 300 runs moves by 30 % from one minute to the next. A ratio of two such minima,
taken seconds apart, inherits that drift. Here every round runs each call once, back to back in
a rotating order, and each round gives one ratio per call against the reference run in that
same round; the median of those per-round ratios is what the tables report. Load that lasts
longer than a round slows both sides alike and cancels; a burst inside a round moves one ratio,
which the median ignores.
"""

from __future__ import annotations

import statistics
import time
from math import comb
from typing import Callable, Mapping


def rounds(calls: Mapping[str, Callable[[], object]], *, budget_s: float = 1.0, min_rounds: int = 5,
           max_rounds: int = 200) -> dict[str, list[float]]:
    """name → its time in s in each round (aligned: entry r of every list is round r).

    ``budget_s`` of the first call's time sets the number of rounds (short calls get more rounds),
    between ``min_rounds`` and ``max_rounds``; every call is warmed up once first.
    """
    names = list(calls)
    for fn in calls.values():
        fn()
    t0 = time.perf_counter()
    calls[names[0]]()
    once = max(time.perf_counter() - t0, 1e-6)
    n_rounds = max(min_rounds, min(max_rounds, int(budget_s / once)))
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(n_rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:  # who runs first rotates
            t0 = time.perf_counter()
            calls[n]()
            times[n].append(time.perf_counter() - t0)
    return times


def median_time(times: list[float]) -> float:
    return statistics.median(times)


def per_round(times: Mapping[str, list[float]], a: str, b: str) -> list[float]:
    """a's time / b's time in each round."""
    return [x / y for x, y in zip(times[a], times[b])]


def ratio(times: Mapping[str, list[float]], a: str, b: str) -> float:
    """Median over rounds of a's time / b's time in the same round."""
    return statistics.median(per_round(times, a, b))


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """A distribution-free interval for the median of ``values``: the k-th smallest and the k-th
    largest, k the largest with P(k ≤ B ≤ n − k) ≥ ``level`` for B ~ Binomial(n, ½) (the order
    statistics' coverage, whatever the distribution). Returns (low, high, its coverage); with too
    few values for ``level`` (fewer than 6 at 95 %), the whole range and the coverage it has."""
    x = sorted(values)
    n = len(x)
    if n == 0:
        raise ValueError("no values")

    def coverage(k: int) -> float:
        return sum(comb(n, i) for i in range(k, n - k + 1)) / 2 ** n
    k = 1
    while k + 1 <= n - k and coverage(k + 1) >= level:
        k += 1
    return x[k - 1], x[n - k], coverage(k)
