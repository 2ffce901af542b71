"""One attention row's numbers in float64, checked step by step (:func:`row_values`): what
``explain``'s row, ``check`` and the float32 error bound (:mod:`.row_error`) all start from."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import reference as R
from .places import INPUT, Where
from .toy import check_finite


def row_values(raw: np.ndarray, factor: float, allowed: Optional[np.ndarray] = None,
               V: Optional[np.ndarray] = None, source: Where = INPUT, bias: Optional[np.ndarray] = None) -> dict:
    """Every quantity of one row, float64 (:func:`attnscope.reference.row_steps`): scores,
    scaled, masked (with ``bias (S,)``, a position scheme's score term: scaled + bias), shift, exp,
    sum, weights, output.

    Raises InputError naming the step when a value there is ∞ or NaN (``source`` names the input)."""
    raw = np.asarray(raw, dtype=np.float64)  # (S,)
    allowed = np.ones(raw.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    check_finite("scores", raw, source, allowed)
    out = R.row_steps(raw, factor, allowed, bias=bias)
    check_finite("scaled", out["scaled"], source, allowed)
    if V is not None:
        V = np.asarray(V, dtype=np.float64)
        check_finite("V", V, source)
        with np.errstate(over="ignore", invalid="ignore"):
            out["output"] = R.weighted_sum(out["weights"], V)  # (d_v,)
        check_finite("output", out["output"], source)
    return out
