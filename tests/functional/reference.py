"""Independent float64 NumPy re-computation of attention, written from the formula, not the code."""

import numpy as np


def np_attention(q, k, v, add_mask=None, factor=None):
    """softmax(q kᵀ · factor + add_mask) v over the last two dims, float64; fully masked rows → 0."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    if factor is None:
        factor = 1.0 / np.sqrt(q.shape[-1])
    s = np.einsum("...ld,...sd->...ls", q, k) * factor
    if add_mask is not None:
        s = s + add_mask
    w = np.zeros_like(s)
    finite_rows = np.isfinite(s).any(axis=-1)
    m = np.where(finite_rows, np.max(np.where(np.isfinite(s), s, -np.inf), axis=-1), 0.0)
    e = np.exp(s - m[..., None])
    w = e / np.where(finite_rows, e.sum(-1), 1.0)[..., None]
    w = np.where(finite_rows[..., None], w, 0.0)
    return np.einsum("...ls,...sd->...ld", w, v), w


def bool_to_additive(mask):
    mask = np.asarray(mask, dtype=bool)
    return np.where(mask, 0.0, -np.inf)
