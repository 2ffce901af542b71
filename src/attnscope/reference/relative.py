"""The float64 side of relative position schemes, step by step: T5's bias buckets and DeBERTa's
disentangled score terms. Re-exported by :mod:`attnscope.reference` (``R.t5_bucket_steps`` …),
which stays the one reference every tool reads.

Both models compute their *bucket indices* in float32 (a log, a division, a floor or a ceiling);
the steps here do the same in float32, so that a distance on a bucket edge lands where the model
puts it, and return the intermediate values widened to float64 for display. Everything after the
index (the bias looked up, the dot products) is float64.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

Array = np.ndarray

__all__ = ["t5_bucket_steps", "t5_bucket", "deberta_bucket_steps", "deberta_bucket", "deberta_terms"]


def t5_bucket_steps(relative_position, *, bidirectional: bool, num_buckets: int, max_distance: int) -> dict:
    """T5's bucket of each relative distance ``δ = key − query`` (any shape), with every step.

    Returns arrays of δ's shape: ``half`` (buckets this side has: n), ``offset`` (n/… added for
    keys after the query in the bidirectional encoder, else 0), ``distance`` (|δ|, or max(−δ, 0)
    in the causal decoder), ``exact`` (n/2: distances below it get their own bucket), ``small``
    (bool), ``log_ratio`` = ln(distance / exact), ``log_span`` = ln(max_distance / exact),
    ``scaled`` = log_ratio / log_span · (n − exact), ``large`` = min(exact + ⌊scaled⌋, n − 1)
    and ``bucket`` = offset + (distance if small else large). NaN in the log columns where small.
    """
    rel = np.asarray(relative_position, dtype=np.int64)
    n = num_buckets // 2 if bidirectional else num_buckets
    offset = np.where(rel > 0, n, 0) if bidirectional else np.zeros_like(rel)
    distance = np.abs(rel) if bidirectional else np.maximum(-rel, 0)
    exact = n // 2
    small = distance < exact
    with np.errstate(divide="ignore"):  # distance 0 is small: its log is never used
        log_ratio = np.log(distance.astype(np.float32) / np.float32(exact)).astype(np.float32)
    log_span = np.float32(math.log(max_distance / exact))
    scaled = (log_ratio / log_span * np.float32(n - exact)).astype(np.float32)
    large = np.minimum(exact + np.where(small, 0, scaled).astype(np.int64), n - 1)
    bucket = offset + np.where(small, distance, large)
    nan = np.full(rel.shape, np.nan)
    return {"delta": rel, "half": np.full(rel.shape, n), "offset": offset, "distance": distance,
            "exact": np.full(rel.shape, exact), "small": small,
            "log_ratio": np.where(small, nan, log_ratio.astype(np.float64)),
            "log_span": np.full(rel.shape, float(log_span)), "scaled": np.where(small, nan, scaled.astype(np.float64)),
            "large": np.where(small, -1, large), "bucket": bucket.astype(np.int64)}


def t5_bucket(relative_position, *, bidirectional: bool, num_buckets: int, max_distance: int) -> Array:
    """int64 buckets of :func:`t5_bucket_steps`."""
    return t5_bucket_steps(relative_position, bidirectional=bidirectional, num_buckets=num_buckets,
                           max_distance=max_distance)["bucket"]


def deberta_bucket_steps(relative_position, bucket_size: int, max_position: int) -> dict:
    """DeBERTa's log bucket of each relative position ``r = i − j`` (``make_log_bucket_position``).

    ``mid`` = bucket_size / 2; |r| ≤ mid keeps r; farther, ``log_pos`` = ⌈ln(|r| / mid) /
    ln((max_position − 1) / mid) · (mid − 1)⌉ + mid with r's sign. Returns ``r``, ``mid``,
    ``inside`` (bool), ``log_ratio`` = ln(|r| / mid), ``log_span``, ``scaled`` (before the ceiling;
    NaN inside) and ``bucket``. ``bucket_size`` ≤ 0: no buckets (the bucket is r).
    """
    r = np.asarray(relative_position, dtype=np.int64)
    if bucket_size <= 0:
        nan = np.full(r.shape, np.nan)
        return {"r": r, "mid": np.zeros(r.shape, dtype=np.int64), "inside": np.ones(r.shape, dtype=bool),
                "log_ratio": nan, "log_span": nan, "scaled": nan, "bucket": r.copy()}
    mid = bucket_size // 2
    a = np.abs(r)
    abs_pos = np.where((r < mid) & (r > -mid), mid - 1, a).astype(np.float32)
    log_ratio = np.log(abs_pos / np.float32(mid)).astype(np.float32)
    log_span = np.float32(np.log(np.float32((max_position - 1) / mid)))
    scaled = (log_ratio / log_span * np.float32(mid - 1)).astype(np.float32)
    log_pos = np.ceil(scaled).astype(np.int64) + mid
    inside = a <= mid
    bucket = np.where(inside, r, log_pos * np.sign(r))
    nan = np.full(r.shape, np.nan)
    return {"r": r, "mid": np.full(r.shape, mid), "inside": inside,
            "log_ratio": np.where(inside, nan, log_ratio.astype(np.float64)),
            "log_span": np.full(r.shape, float(log_span)), "scaled": np.where(inside, nan, scaled.astype(np.float64)),
            "bucket": bucket.astype(np.int64)}


def deberta_bucket(relative_position, bucket_size: int, max_position: int) -> Array:
    """int64 buckets of :func:`deberta_bucket_steps`."""
    return deberta_bucket_steps(relative_position, bucket_size, max_position)["bucket"]


def deberta_terms(q, k, pos_q, pos_k, rel_pos, span: int, types: Sequence[str] = ("c2p", "p2c")) -> dict:
    """DeBERTa's three score terms of one head, float64.

    ``q, k (n, d)``, ``pos_q, pos_k (2·span, d)`` (the relative embeddings projected by W_Q', W_K';
    None when the term is absent), ``rel_pos (n, n)`` = bucket(i − j). Returns ``c2c`` = q_i·k_j,
    ``c2p`` = q_i · pos_k[c2p_index], ``c2p_index`` = clip(rel_pos[i, j] + span, 0, 2span − 1),
    ``p2c`` = k_j · pos_q[p2c_index], ``p2c_index`` = clip(−rel_pos[j, i] + span, 0, 2span − 1),
    each (n, n); absent terms are zeros (their index −1).
    """
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    rel = np.asarray(rel_pos, dtype=np.int64)
    n = q.shape[0]
    out = {"c2c": q @ k.T}
    zero, none = np.zeros((n, n)), np.full((n, n), -1, dtype=np.int64)
    if "c2p" in types:
        idx = np.clip(rel + span, 0, 2 * span - 1)  # (n, n)
        pk = np.asarray(pos_k, dtype=np.float64)
        out["c2p"], out["c2p_index"] = np.einsum("id,ijd->ij", q, pk[idx]), idx
    else:
        out["c2p"], out["c2p_index"] = zero, none
    if "p2c" in types:
        idx = np.clip(-rel.T + span, 0, 2 * span - 1)  # (n, n): [i, j] from rel_pos[j, i]
        pq = np.asarray(pos_q, dtype=np.float64)
        out["p2c"], out["p2c_index"] = np.einsum("jd,ijd->ij", k, pq[idx]), idx
    else:
        out["p2c"], out["p2c_index"] = zero, none
    return out
