"""The statistics of a faithfulness evaluation: Spearman's ρ, ERASER's deletion measures, the bootstrap.

* :func:`spearman` — Spearman's rank correlation of two score vectors: Pearson's correlation of
  their ranks, tied values sharing their average rank (as ``scipy.stats.spearmanr``); ``nan`` when
  either vector is constant (no ranking to compare).
* :func:`removal_counts` — how many of ``n`` tokens a bin of ``k`` % takes: ``ceil(k·n/100)``,
  at least 1 and at most ``n − 1`` (a deletion never leaves nothing, an insertion never puts
  everything back).
* :func:`eraser` — comprehensiveness and sufficiency per bin and their AOPC (DeYoung et al. 2020,
  "ERASER: A Benchmark to Evaluate Rationalized NLP Models", ACL): with ``f`` the target,
  ``comprehensiveness_k = f(x) − f(x without the top-k % tokens)`` (larger: the tokens the method
  ranks first carry more of the output), ``sufficiency_k = f(x) − f(only the top-k % tokens)``
  (smaller: they suffice), AOPC = their mean over the bins.
* :func:`bootstrap` — the mean of per-text values and its percentile 95 % interval from resampling
  the texts with replacement (``resamples`` draws of a seeded NumPy generator: the same seed gives
  the same interval); :func:`resample_indices` makes the draws once so that every method of a run
  is resampled with the same texts (paired: a difference between two methods has its own interval).

Everything here is float64 NumPy on per-text numbers (the model's outputs are read elsewhere).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

#: ERASER's bins: the top 1, 5, 10, 20 and 50 % of the tokens (DeYoung et al. 2020, section 4)
ERASER_BINS = (1, 5, 10, 20, 50)
#: bootstrap resamples of the texts
RESAMPLES = 1000
#: the interval's coverage
LEVEL = 0.95


def ranks(x: ArrayLike) -> np.ndarray:
    """Ranks 1..n of ``x (n,)``, tied values sharing the mean of their ranks, float64 ``(n,)``."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x), dtype=np.float64)
    r[order] = np.arange(1, len(x) + 1, dtype=np.float64)
    values, inverse = np.unique(x, return_inverse=True)
    if len(values) < len(x):  # ties: each group gets the mean of the ranks it spans
        sums = np.bincount(inverse, weights=r)
        counts = np.bincount(inverse)
        r = (sums / counts)[inverse]
    return r


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's ρ of two vectors of the same length (≥ 2); ``nan`` when either is constant."""
    ra, rb = ranks(np.asarray(a)), ranks(np.asarray(b))
    if len(ra) != len(rb):
        raise ValueError(f"spearman: vectors of lengths {len(ra)} and {len(rb)}")
    da, db = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / den if den > 0 else float("nan")


def removal_counts(n: int, bins: Sequence[float] = ERASER_BINS) -> list[int]:
    """Tokens taken by each bin of ``bins`` % of ``n`` tokens: ``ceil(k·n/100)`` within [1, n − 1]."""
    if n < 2:
        raise ValueError(f"removal_counts: a text needs at least 2 tokens to remove some, got {n}")
    # the small tolerance keeps 10 % of 30 tokens at 3, not 4 (0.1·30 is 3.0000000000000004)
    return [min(n - 1, max(1, math.ceil(k * n / 100 - 1e-9))) for k in bins]


def eraser(full: float, deleted: Sequence[float], kept: Sequence[float]) -> dict:
    """ERASER's measures of one text from its target ``full`` = f(x), ``deleted[b]`` = f(x without the
    top tokens of bin b) and ``kept[b]`` = f(only those tokens): ``comprehensiveness`` and
    ``sufficiency`` per bin (lists), ``aopc_comprehensiveness`` and ``aopc_sufficiency`` their means."""
    comp = [full - float(d) for d in deleted]
    suff = [full - float(k) for k in kept]
    return {"comprehensiveness": comp, "sufficiency": suff,
            "aopc_comprehensiveness": float(np.mean(comp)), "aopc_sufficiency": float(np.mean(suff))}


def resample_indices(n: int, seed: int, resamples: int = RESAMPLES) -> np.ndarray:
    """``(resamples, n)`` indices into ``n`` texts, drawn with replacement by ``default_rng(seed)``."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap(values: ArrayLike, seed: int = 0, resamples: int = RESAMPLES, level: float = LEVEL,
              indices: Optional[np.ndarray] = None) -> dict:
    """``{"mean", "low", "high", "n"}``: the mean of ``values`` (nan ones left out) and its percentile
    interval at ``level`` over ``resamples`` resamples (``indices (resamples, n)`` if given, else drawn
    from ``seed``). Fewer than two values: no interval (``low`` and ``high`` nan), as one text has no
    spread to resample and a zero-width "95 % interval" would read as certainty."""
    v = np.asarray(values, dtype=np.float64)
    if indices is not None and indices.shape[1] != len(v):
        raise ValueError(f"bootstrap: indices for {indices.shape[1]} values, got {len(v)}")
    ok = ~np.isnan(v)
    v = v[ok]
    if len(v) == 0:
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0}
    mean = float(v.mean())
    if len(v) < 2:
        return {"mean": mean, "low": float("nan"), "high": float("nan"), "n": 1}
    if indices is None or not ok.all():
        idx = resample_indices(len(v), seed, resamples) if indices is None else \
            np.random.default_rng(seed).integers(0, len(v), size=(indices.shape[0], len(v)))
    else:
        idx = indices
    means = v[idx].mean(axis=1)  # (resamples,)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return {"mean": mean, "low": float(low), "high": float(high), "n": int(len(v))}
