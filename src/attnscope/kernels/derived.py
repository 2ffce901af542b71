"""Steps that are a cheap, exact function of an earlier step, told to whoever records them.

The explicit path forms ``scaled = scores · factor``, ``masked = scaled + add`` and
``weights = softmax(masked)``: each is one elementwise or row-wise pass over the step before.
A trace that records all four need only keep ``scores`` (one L×S matrix per layer, as
``transformers`` eager keeps one) and call the same functions again on read. While
:func:`keeping` is on (a trace's pass, in this thread), :func:`note` attaches to each such
tensor the call that made it — the function and the very tensors and values it was given —
as a :class:`Recipe`; :func:`recipe_of` reads it back. Calling ``recipe.fn(*args, **kwargs)``
again runs the same kernel on the same inputs, so the result is the same bits (CPU kernels of
elementwise and row-wise operations are deterministic; tests/trace/test_derived.py compares
them with ``torch.equal`` for every scoring and family).

Outside a trace nothing is attached (the forward pays one thread-local read per step).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, TypeVar

import torch

Tensor = torch.Tensor

#: The attribute under which a tensor carries its recipe (a plain Python attribute of the tensor object).
ATTRIBUTE = "attnscope_recipe"

_state = threading.local()
_T = TypeVar("_T")


@dataclass(frozen=True)
class Recipe:
    """``fn(*args, **kwargs)`` made the tensor that carries it."""

    fn: Callable[..., Optional[Tensor]]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@contextlib.contextmanager
def keeping() -> Iterator[None]:
    """Attach recipes to the steps computed in this thread while the block runs (and let the
    layers of that pass share what :func:`shared` makes)."""
    before, memo = getattr(_state, "on", False), getattr(_state, "memo", None)
    _state.on, _state.memo = True, {}
    try:
        yield
    finally:
        _state.on, _state.memo = before, memo


def shared(key: tuple, pinned: Any, make: Callable[[], _T]) -> _T:
    """``make()``, made once per ``key`` while :func:`keeping` is on in this thread (one trace's
    pass), else every call. The layers of a pass that each build the same mask from the same
    inputs share one tensor (read only): a decoder's 30 layers made 30 (L, S) masks, four passes
    each. ``pinned`` (the inputs the key names by ``id``) is held with the result, so that no
    other object takes their ids while the pass runs."""
    memo = getattr(_state, "memo", None) if getattr(_state, "on", False) else None
    if memo is None:
        return make()
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (pinned, make())
    return hit[1]


def on() -> bool:
    """Is :func:`keeping` active in this thread?"""
    return getattr(_state, "on", False)


def note(t: Tensor, fn: Callable[..., Optional[Tensor]], *args: Any, **kwargs: Any) -> Tensor:
    """``t``, marked as ``fn(*args, **kwargs)`` when recipes are being kept (and ``t`` is outside
    autograd: a recorded tensor in the graph must stay the tensor itself)."""
    if getattr(_state, "on", False) and not t.requires_grad:
        setattr(t, ATTRIBUTE, Recipe(fn, args, kwargs))
    return t


def recipe_of(t: Tensor) -> Optional[Recipe]:
    """The recipe attached to ``t`` by :func:`note`, or None."""
    r = t.__dict__.get(ATTRIBUTE) if hasattr(t, "__dict__") else None
    return r if isinstance(r, Recipe) else None
