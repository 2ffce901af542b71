"""Errors that attnscope raises on bad input.

Every public entry point validates its arguments up front and raises one of these with a message
that names the argument and what it got, so that a user never has to read a traceback from inside
torch. They subclass the builtin exceptions that callers already catch.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence


class AttnscopeError(Exception):
    """Base class of every error attnscope raises on purpose.

    ``key`` and ``values`` (set by :func:`attnscope.i18n.error`; None and empty otherwise): the
    string-table key the message was written from and its placeholders' values, so that the
    command line can say the same error in another language."""

    key: Optional[str] = None
    values: Mapping[str, object] = {}


class ShapeError(AttnscopeError, ValueError):
    """A tensor has the wrong rank, size or dtype for the argument it was passed as."""


class ConfigError(AttnscopeError, ValueError):
    """A configuration value is impossible (e.g. ``d_model % n_heads != 0``) or unknown."""


class ModelLoadError(AttnscopeError, ValueError):
    """A checkpoint folder is missing, unreadable, or does not match the model it claims to be."""


class InputError(AttnscopeError, ValueError):
    """User input (text, file, token, index) is invalid for the requested operation."""


class NonFiniteError(InputError):
    """A NaN or ±inf where a finite number is needed, with the step where it appeared.

    Raised only where finite checks were asked for (``check_finite=True`` or
    :func:`attnscope.kernels.finite.checking_finite`), because looking costs a pass over the data
    — and for float16/bfloat16 q·k in the explicit steps, where it may overflow the dtype.
    """


def fmt_shape(shape: Sequence[int]) -> str:
    """``(2, 3, 4)`` for a torch.Size or tuple, so messages read the same everywhere."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def shape_or_type(x: object) -> str:
    """A wrong argument as an error message shows it: a tensor's shape (:func:`fmt_shape`), or the
    name of anything else's type."""
    import torch  # here, so that the error classes load without torch
    return fmt_shape(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__


def first_line(e: BaseException) -> str:
    """The first non-blank line of an exception's message (torch's run on for pages), else its class name."""
    return next((x.strip() for x in str(e).splitlines() if x.strip()), type(e).__name__)
