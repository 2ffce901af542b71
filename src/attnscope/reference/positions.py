"""Positions in float64: rotary (RoFormer; the pairs of features, their frequencies and angles,
the rotation), sinusoidal (Vaswani et al.) and ALiBi (Press et al.; a score term per head)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ..i18n import error
from .arrays import Array, as_f64

#: How rotary positions pair a head's features: "half" turns feature i with feature i + d/2
#: (Hugging Face's rotate_half: Llama, Qwen2, Mistral, Gemma checkpoints); "adjacent" turns
#: 2i with 2i + 1 (RoFormer's paper, GPT-J, llama.cpp's permuted rows). Pair i turns by angle
#: position · inv_freq[i] either way.
PAIRINGS = ("half", "adjacent")


def rope_pairs(d: int, pairing: str = "half") -> tuple[Array, Array]:
    """The feature indices ``(a, b)`` of the d/2 pairs, each (d/2,): pair i is (a[i], b[i])."""
    if pairing not in PAIRINGS:
        raise error(ConfigError, "errors.reference_pairing", pairing=repr(pairing), choices=", ".join(PAIRINGS))
    if d % 2:
        raise error(ConfigError, "errors.reference_rotary_odd", d=d)
    i = np.arange(d // 2)
    return (i, i + d // 2) if pairing == "half" else (2 * i, 2 * i + 1)


def rope_inv_freq(d: int, base: float) -> Array:
    """``inv_freq[i] = base^(−2i/d)`` for i = 0 … d/2 − 1, float64 (radians per position)."""
    return np.power(float(base), -np.arange(0, d, 2, dtype=np.float64) / d)


def rope_angles(positions, inv_freq) -> Array:
    """``positions (L,)`` × ``inv_freq (d/2,)`` → the angles ``(L, d/2)`` in radians."""
    return np.asarray(positions, dtype=np.float64)[:, None] * as_f64(inv_freq)[None, :]


def rotate(x, positions, inv_freq, pairing: str = "half") -> Array:
    """``x (…, L, d)`` with each pair (a, b) of row l turned by ``positions[l] · inv_freq[i]``:
    ``(a, b) → (a cos φ − b sin φ, a sin φ + b cos φ)``."""
    x = as_f64(x)
    a, b = rope_pairs(x.shape[-1], pairing)
    phi = rope_angles(positions, inv_freq)  # (L, d/2)
    c, s = np.cos(phi), np.sin(phi)
    out = np.empty_like(x)
    out[..., a] = x[..., a] * c - x[..., b] * s
    out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def rotation_matrix(angle) -> Array:
    """``[[cos φ, −sin φ], [sin φ, cos φ]]`` for each angle: ``(..., 2, 2)``."""
    a = np.asarray(angle, dtype=np.float64)
    c, s = np.cos(a), np.sin(a)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def sinusoidal_freq(d_model: int, base: float = 10000.0) -> Array:
    """``ω_i = base^(−2i/d_model)`` for i = 0 … d_model/2 − 1 (radians per position), computed as
    ``exp(−ln(base)·2i/d)`` (:func:`attnscope.positions.sinusoidal_table_np` is :func:`sinusoidal_pe` at 0 … P − 1)."""
    return np.exp(-math.log(float(base)) * np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def sinusoidal_pe(positions, d_model: int, base: float = 10000.0) -> Array:
    """``PE (P, d_model)``: ``PE[p, 2i] = sin(p·ω_i)``, ``PE[p, 2i + 1] = cos(p·ω_i)`` (Vaswani et al.)."""
    if d_model % 2:
        raise error(ConfigError, "errors.reference_sinusoidal_odd", d_model=d_model)
    ang = np.asarray(positions, dtype=np.float64).reshape(-1)[:, None] * sinusoidal_freq(d_model, base)[None, :]
    pe = np.empty((ang.shape[0], d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


def alibi_slopes(n_heads: int) -> Array:
    """ALiBi's slope of each head (Press et al. 2022), float64 (H,): with p the largest power of two
    ≤ H, heads 1 … p get ``2^(−8k/p)``, and when H is not a power of two the remaining H − p heads
    get every other slope of 2p heads, ``2^(−8k/(2p))`` for k = 1, 3, 5, … (transformers'
    ``_get_alibi_slopes``, BLOOM's rule)."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads <= 0:
        raise error(ConfigError, "errors.reference_alibi_heads", value=repr(n_heads))
    p = 2 ** int(math.floor(math.log2(int(n_heads))))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1, dtype=np.float64) / p)
    extra = min(p, int(n_heads) - p)
    if extra:
        slopes = np.concatenate([slopes, 2.0 ** (-8.0 * np.arange(1, 2 * extra, 2, dtype=np.float64) / (2 * p))])
    return slopes


def alibi_bias(n_heads: int, q_pos, k_pos) -> Array:
    """ALiBi's score term in float64, ``bias[h, i, j] = slope_h · k_pos[j]`` for every query i:
    ``(H, L, S)`` from ``q_pos (L,)`` and ``k_pos (S,)``. BLOOM (and transformers) add the slope
    times the *key's* position, not times k − q as the paper writes: the two differ by
    ``slope_h · q_pos[i]``, one number per row, which softmax ignores (same weights), while the
    masked scores differ by it (attnscope follows transformers, so that its masked scores are BLOOM's)."""
    q = np.asarray(q_pos, dtype=np.float64).reshape(-1)
    k = np.asarray(k_pos, dtype=np.float64).reshape(-1)
    row = alibi_slopes(n_heads)[:, None, None] * k[None, None, :]  # (H, 1, S)
    return np.broadcast_to(row, (row.shape[0], q.shape[0], k.shape[0])).copy()  # (H, L, S)


def causal_window(q_pos, k_pos, window=None) -> Array:
    """Bool ``(L, S)``, True = query i may see key j: ``k_pos[j] ≤ q_pos[i]`` and, with a window,
    ``q_pos[i] − k_pos[j] < window`` (sliding windows, as transformers and Mistral count them)."""
    d = np.asarray(q_pos).reshape(-1)[:, None] - np.asarray(k_pos).reshape(-1)[None, :]  # (L, S)
    return (d >= 0) & (d < window) if window is not None else d >= 0
