"""Float64 NumPy attention written from the formula (not from attnscope's code), with the
log-sum-exp per query: the reference every blockwise and ring result is compared with."""

import numpy as np
import torch

from attnscope.functional import DEFAULT_COSINE_TEMPERATURE


def np_prepare(q, k, scoring):
    """q, k as the scoring normalises them (cosine: unit length; qknorm: LayerNorm, no affine)."""
    if scoring == "cosine":
        return q / np.linalg.norm(q, axis=-1, keepdims=True), k / np.linalg.norm(k, axis=-1, keepdims=True)
    if scoring == "qknorm":
        def ln(x):
            return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)
        return ln(q), ln(k)
    return q, k


def np_factor(scoring, d, temperature=None):
    return {"scaled": 1 / np.sqrt(d), "unscaled": 1.0, "inv_d": 1.0 / d, "qknorm": 1 / np.sqrt(d),
            "cosine": 1 / (DEFAULT_COSINE_TEMPERATURE if temperature is None else np.asarray(temperature))}[scoring]


def np_attention(q, k, v, mask=None, *, causal=False, scoring="scaled", temperature=None):
    """→ out (..., L, d_v), weights (..., L, S), lse (..., L) in float64; rows that see no key:
    weights 0, out 0, lse −inf. ``mask``: bool (True = attend) or additive float; causal is
    top-left aligned (query i sees keys 0..i)."""
    def to_np(t):
        if isinstance(t, torch.Tensor):
            return t.detach().numpy() if t.dtype == torch.bool else t.detach().double().numpy()
        return None if t is None else np.asarray(t)
    q, k, v, mask, temperature = map(to_np, (q, k, v, mask, temperature))
    qn, kn = np_prepare(q, k, scoring)
    s = np.einsum("...ld,...sd->...ls", qn, kn) * np_factor(scoring, q.shape[-1], temperature)
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.arange(S)[None, :] > np.arange(L)[:, None], -np.inf, s)
    alive = np.isfinite(s).any(axis=-1)  # (..., L)
    m = np.where(alive, np.max(np.where(np.isfinite(s), s, -np.inf), axis=-1), 0.0)
    e = np.exp(s - m[..., None])
    total = e.sum(-1)
    w = np.where(alive[..., None], e / np.where(alive, total, 1.0)[..., None], 0.0)
    lse = np.where(alive, m + np.log(np.where(alive, total, 1.0)), -np.inf)
    return np.einsum("...ls,...sd->...ld", w, v), w, lse
