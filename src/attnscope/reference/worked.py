"""One query row as a learner works it by hand: exp of the (possibly shifted) scores, their sum,
the division. explain, check, the viewer's step view and the server show these numbers."""

from __future__ import annotations

import numpy as np

from .arrays import Array, as_f64
from .steps import softmax, weighted_sum

#: A worked calculation shows exp(s) as the learner computes it while a row's largest score is at
#: most this; above it the row maximum m is subtracted first (exp(s − m)), which leaves the weights
#: unchanged (explain, check, the viewer's step view and the server all show the same numbers).
EXP_SHOW_LIMIT = 50.0


def exp_shift(masked, axis: int = -1) -> Array:
    """What a worked calculation subtracts before exp, with ``axis`` kept (size 1): 0 while the
    row's largest finite score m is within ±:data:`EXP_SHOW_LIMIT` (exp(s) shown as is), else m.
    A row with no finite score gets 0."""
    x = as_f64(masked)
    if x.shape[axis] == 0:
        return np.zeros(x.shape[:axis % x.ndim] + (1,) + x.shape[axis % x.ndim + 1:])
    m = np.where(np.isfinite(x), x, -np.inf).max(axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.where(np.abs(m) > EXP_SHOW_LIMIT, m, 0.0)  # e^s' past ±limit: huge, or shown as 0 (Σ = 0 too)


def softmax_parts(masked, axis: int = -1) -> dict[str, Array]:
    """The softmax as a learner writes it: ``shift`` (:func:`exp_shift`, axis kept), ``exp`` =
    exp(masked − shift) (0 where masked is −inf), ``sum`` of those along ``axis`` and ``weights``
    (:func:`softmax`, computed stably, so equal to exp / sum)."""
    x = as_f64(masked)
    shift = exp_shift(x, axis)
    e = shifted_exp(x, shift)
    return {"shift": shift, "exp": e, "sum": e.sum(axis), "weights": softmax(x, axis)}


def shifted_exp(masked, shift) -> Array:
    """``exp(masked − shift)`` (0 where masked is −inf), overflow to inf without a warning."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(as_f64(masked) - as_f64(shift))


def divide_by_sum(e, total) -> Array:
    """``e / total``: the weights from the exponentials and their (broadcast) sum; 0 where the
    sum is 0 (a row that sees no key)."""
    e, total = as_f64(e), as_f64(total)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0.0, e / np.where(total == 0, 1.0, total))


def row_steps(raw, factor, allowed=None, v=None, bias=None) -> dict:
    """One query row, every step of the first article's walk-through, float64.

    ``raw (S,)`` q·k against every key, ``factor`` on it, ``allowed (S,)`` bool (None: every key),
    ``v (S, d_v)``, ``bias (S,)`` a position scheme's score term (ALiBi) added after the scaling.
    Returns ``scores``, ``scaled`` (S,), ``masked`` (scaled + bias, −inf where not allowed),
    ``shift`` (a float: 0 or the row maximum, see :data:`EXP_SHOW_LIMIT`), ``exp``, ``sum``
    (a float), ``weights`` (S,; 0 everywhere when no key is allowed), with ``v`` ``output`` and
    with ``bias`` ``bias``. Overflow is not checked here (see :func:`check_finite`).
    """
    raw = as_f64(raw)  # (S,)
    allowed = np.ones(raw.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = raw * factor  # (S,)
        masked = np.where(allowed, scaled if bias is None else scaled + as_f64(bias), -np.inf)  # (S,)
        parts = softmax_parts(masked)
        out = {"scores": raw, "scaled": scaled, "masked": masked, "shift": float(parts["shift"][0]) if raw.size else 0.0,
               "exp": parts["exp"], "sum": float(parts["sum"]), "weights": parts["weights"]}
        if bias is not None:
            out["bias"] = as_f64(bias)
        if v is not None:
            out["output"] = weighted_sum(out["weights"], v)  # (d_v,)
    return out
