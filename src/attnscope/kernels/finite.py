"""Opt-in checks for NaN and ±inf, naming the step where they appear.

attnscope's choice, as PyTorch's: by default non-finite values flow through as the kernel makes
them — NaN outputs on the explicit path, while PyTorch's fused CPU kernel silently gives a query
row with a NaN score output 0 — because looking for them costs a pass over every tensor and a
device sync. Asked for — ``check_finite=True`` on a call, or every call inside
``with checking_finite():`` — each step is checked as it is made and the first bad one raises
:class:`~attnscope.errors.NonFiniteError` naming it:

- inputs ``q``, ``k``, ``v`` and a float ``mask`` (−inf in a mask is allowed: it blocks a key;
  NaN or +inf is not), a tensor ``temperature``;
- ``scaled`` scores: ±inf there with finite inputs means ``q·k × factor`` overflowed the dtype;
- ``weights`` and the output.

``scale=nan`` is always an error (a ConfigError at the call, no opt-in needed).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

import torch

from ..errors import NonFiniteError, fmt_shape

Tensor = torch.Tensor

_STATE = threading.local()


def finite_checks_on(check_finite: Optional[bool] = None) -> bool:
    """The effective setting: the call's ``check_finite`` if given, else the context's."""
    if check_finite is not None:
        return bool(check_finite)
    return getattr(_STATE, "on", False)


@contextlib.contextmanager
def checking_finite(enabled: bool = True) -> Iterator[None]:
    """Within the block every attnscope attention call checks for NaN/±inf (this thread)."""
    before = getattr(_STATE, "on", False)
    _STATE.on = bool(enabled)
    try:
        yield
    finally:
        _STATE.on = before


def check_tensor(name: str, t: Optional[Tensor], *, allow_neg_inf: bool = False, hint: str = "") -> None:
    """Raise NonFiniteError if ``t`` holds NaN or ±inf (−inf allowed with ``allow_neg_inf``)."""
    if t is None or not isinstance(t, Tensor) or not t.is_floating_point() or t.numel() == 0:
        return
    bad = torch.isnan(t) | torch.isposinf(t) if allow_neg_inf else ~torch.isfinite(t)
    if not bool(bad.any()):
        return
    n_nan = int(torch.isnan(t).sum())
    n_pos = int(torch.isposinf(t).sum())
    n_neg = 0 if allow_neg_inf else int(torch.isneginf(t).sum())
    kinds = ", ".join(f"{label} ×{n}" for label, n in (("NaN", n_nan), ("+inf", n_pos), ("-inf", n_neg)) if n)
    first = tuple(int(i) for i in bad.nonzero()[0].tolist())
    msg = (f"{name} has non-finite values ({kinds}) in shape {fmt_shape(t.shape)}, "
           f"first at index {first}")
    raise NonFiniteError(msg + (f": {hint}" if hint else ""))


def check_inputs(q: Tensor, k: Tensor, v: Optional[Tensor], mask: Optional[Tensor], temperature=None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
    if mask is not None and mask.dtype != torch.bool:
        check_tensor("mask", mask, allow_neg_inf=True, hint="a float mask may hold -inf (blocked) but not NaN or +inf")
    if isinstance(temperature, Tensor):
        check_tensor("temperature", temperature)


def check_scaled(scaled: Tensor, dtype: torch.dtype) -> None:
    """The scaled scores before the mask: ±inf here with finite inputs is an overflow of q·k."""
    check_tensor("scaled scores (q·k × factor)", scaled,
                 hint=f"q·k overflowed {dtype} (its largest value is {torch.finfo(dtype).max:.3g}); "
                      f"scale q and k down or compute in float64")


def check_output(name: str, t: Optional[Tensor]) -> None:
    check_tensor(name, t, hint="the inputs are finite, so the scores overflowed in the kernel "
                              "(q·k × factor beyond the dtype's range)")
