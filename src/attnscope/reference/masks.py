"""Masks as the reference applies them: bool (True = may attend) or additive float (0 attend,
−inf blocked), causal and sliding-window."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .arrays import Array


def causal_mask(L: int, S: int) -> Array:
    """Bool ``(L, S)``, True where query i may see key j (j ≤ i, top-left aligned)."""
    return np.arange(S)[None, :] <= np.arange(L)[:, None]


def additive_mask(mask) -> Array:
    """A bool mask as 0 / −inf; a float mask as it is."""
    m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
    return np.where(m, 0.0, -np.inf) if m.dtype == bool else m.astype(np.float64)


def combine_masks(mask, L: int, S: int, causal: bool = False) -> Optional[Array]:
    """One additive mask (0 attend, −inf blocked), or None if nothing is masked."""
    add = None if mask is None else additive_mask(mask)
    if causal:
        c = np.where(causal_mask(L, S), 0.0, -np.inf)
        add = c if add is None else add + c
    return add


def window_mask(n_q: int, n_k: int, window: Optional[int] = None, causal: bool = True) -> Array:
    """Bool ``(n_q, n_k)``, True = query i may see key j: ``j ≤ i`` (causal) and ``i − j < window``."""
    d = np.arange(n_q)[:, None] - np.arange(n_k)[None, :]
    ok = d >= 0 if causal else np.ones((n_q, n_k), dtype=bool)
    return ok & (d < window) if window is not None else ok
