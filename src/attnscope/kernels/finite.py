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
import math
import threading
from typing import Iterator, Optional, Union

import torch

from ..errors import NonFiniteError, fmt_shape
from ..i18n import Msg, error

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


#: What the checks name besides q, k, v, the mask and the temperature, and their hints: Msgs made
#: once here, so that a check that passes builds nothing.
SCALED = Msg("errors.kernel_name_scaled")
ATTENTION_OUTPUT = Msg("errors.kernel_name_output")
WEIGHTS = Msg("errors.kernel_name_weights")
MASK_HINT = Msg("errors.kernel_hint_mask")
OUTPUT_HINT = Msg("errors.kernel_hint_output")


def check_tensor(name: Union[str, Msg], t: Optional[Tensor], *, allow_neg_inf: bool = False,
                 hint: Optional[Msg] = None) -> None:
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
    where = dict(name=name, kinds=kinds, shape=fmt_shape(t.shape), first=first)
    raise error(NonFiniteError, "errors.kernel_nonfinite_hint", hint=hint, **where) if hint \
        else error(NonFiniteError, "errors.kernel_nonfinite", **where)


def check_inputs(q: Tensor, k: Tensor, v: Optional[Tensor], mask: Optional[Tensor], temperature=None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
    if mask is not None and mask.dtype != torch.bool:
        check_tensor("mask", mask, allow_neg_inf=True, hint=MASK_HINT)
    if isinstance(temperature, Tensor):
        check_tensor("temperature", temperature)


def check_scaled(scaled: Tensor, dtype: torch.dtype) -> None:
    """The scaled scores before the mask: ±inf here with finite inputs is an overflow of q·k."""
    check_tensor(SCALED, scaled, hint=Msg("errors.kernel_hint_overflow", dtype=dtype, largest=torch.finfo(dtype).max))


def check_overflow(scores: Tensor, name: Union[str, Msg] = "q·k") -> None:
    """float16/bfloat16 ``q·k`` as computed, before any hook: ±inf or NaN here is an overflow of the
    dtype (checked always in half precision: the explicit steps would turn it into NaN weights).
    Two reductions, no L×S temporary, unless something is wrong (NaN propagates through both).
    ``name``: what ``scores`` is (:data:`SCALED` where the factor is already on them)."""
    if scores.numel() == 0 or all(map(math.isfinite, (float(x) for x in torch.aminmax(scores.detach())))):
        return
    check_tensor(name, scores, hint=Msg("errors.kernel_hint_overflow", dtype=scores.dtype,
                                          largest=torch.finfo(scores.dtype).max))


def check_output(name: Msg, t: Optional[Tensor]) -> None:
    """``name``: ATTENTION_OUTPUT or WEIGHTS."""
    check_tensor(name, t, hint=OUTPUT_HINT)
