"""The float64 arrays every step of the reference works on, and the check that names a step whose
values are not finite."""

from __future__ import annotations

import numpy as np

from ..errors import NonFiniteError, fmt_shape
from ..i18n import error

#: What every function of :mod:`attnscope.reference` returns: a float64 ndarray.
Array = np.ndarray


def as_f64(x) -> Array:
    """Any array-like (a torch tensor included, detached, on the CPU) as a float64 ndarray."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def check_finite(step: str, x, *, allow_neg_inf: bool = False) -> Array:
    """``x`` as float64, or NonFiniteError naming ``step`` when it holds NaN or ±inf (−inf
    allowed with ``allow_neg_inf``: a masked score)."""
    a = as_f64(x)
    bad = np.isnan(a) | (np.isposinf(a) if allow_neg_inf else np.isinf(a))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        kinds = [f"{name} ×{int(n)}" for name, n in (("NaN", np.isnan(a).sum()), ("+inf", np.isposinf(a).sum()),
                                                    ("-inf", 0 if allow_neg_inf else np.isneginf(a).sum())) if n]
        raise error(NonFiniteError, "errors.reference_non_finite", name=step, kinds=", ".join(kinds),
                    shape=fmt_shape(a.shape), first=first)
    return a
