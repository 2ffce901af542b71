"""Recorded steps kept as the call that made them: :class:`Derived`, and the rule that chooses.

A trace of every step would keep four L×S matrices per attention layer (``scores``, ``scaled``,
``masked``, ``weights``). The kernel marks the last three with their :class:`~attnscope.kernels.derived.Recipe`
(the function and the tensors it was given), so the trace keeps ``scores`` and serves the
others by calling the same function again on read: the same kernel on the same inputs, the same
bits as the forward used. Chains are kept as chains (``weights`` = row_softmax(add_mask(scale(scores)))),
so only their roots — tensors without a recipe — hold memory.

The rule (:meth:`Keeper.keep`): a tensor with a recipe is kept as :class:`Derived` when the
memory its roots add to what the trace already holds is at most half its own size (in a full
trace: ``scores`` is recorded, the rest are small masks and factors); otherwise (or
when a hook other than the trace's recorders is attached to a step of that attention block, which
might have changed the tensor in place) it is kept as the tensor.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Union

import torch

from ..kernels.derived import Recipe, recipe_of

Tensor = torch.Tensor

#: The steps of an attention block whose values a recipe may depend on: a hook on one of them
#: (other than a recorder) makes the block's steps recorded as tensors.
RECIPE_STEPS = ("scores", "scaled", "masked", "weights", "bias", "mask", "scores_c2c")

#: The attribute under which a recorded tensor carries the :class:`Derived` kept for it.
KEPT = "attnscope_kept"

#: A derived value may add roots (to what the trace holds) up to this fraction of its own size:
#: the small masks and factors; not the scores of a step whose scores are not recorded.
SHARE = 0.5


class Derived:
    """A recorded step kept as ``fn(*args, **kwargs)`` (args may be :class:`Derived` themselves),
    optionally head ``index`` of it (dim 1). :meth:`value` computes it."""

    __slots__ = ("fn", "args", "kwargs", "shape", "index")

    def __init__(self, recipe: Recipe, shape: torch.Size, index: Optional[int] = None) -> None:
        self.fn = recipe.fn
        self.args = tuple(_keep_arg(a) for a in recipe.args)
        self.kwargs = {k: _keep_arg(v) for k, v in recipe.kwargs.items()}
        self.shape = torch.Size(shape)
        self.index = index

    def value(self) -> Tensor:
        """The tensor, computed again (a fresh tensor each call)."""
        full = self.fn(*(_value(a) for a in self.args), **{k: _value(v) for k, v in self.kwargs.items()})
        assert full is not None  # a recipe is only noted on a tensor its function returned
        return full if self.index is None else full[:, self.index].clone()

    def roots(self) -> Iterator[Tensor]:
        """The tensors this value is computed from (those without a recipe)."""
        for a in (*self.args, *self.kwargs.values()):
            if isinstance(a, Derived):
                yield from a.roots()
            elif isinstance(a, Tensor):
                yield a

    def __repr__(self) -> str:
        return f"Derived({getattr(self.fn, '__name__', self.fn)}, shape={tuple(self.shape)})"


Stored = Union[Tensor, Derived]


def _keep_arg(a: Any) -> Any:
    if isinstance(a, Tensor):
        r = recipe_of(a)
        return Derived(r, a.shape) if r is not None else a.detach()
    return a


def _value(a: Any) -> Any:
    return a.value() if isinstance(a, Derived) else a


def storage_key(t: Tensor) -> tuple:
    st = t.untyped_storage()
    return (st.device.type, st.data_ptr())


def value_of(x: Stored) -> Tensor:
    """The tensor of a stored entry."""
    return x.value() if isinstance(x, Derived) else x


def _head_of(t: Tensor) -> Optional[tuple[Recipe, Tensor, int]]:
    """``(recipe, base, j)`` when ``t`` is ``base[:, j]`` of a tensor with a recipe (a head hook's slice)."""
    base = t._base
    if base is None or base.dim() < 2 or t.shape != base.shape[:1] + base.shape[2:]:
        return None
    r = recipe_of(base)
    if r is None or base.stride(1) == 0:
        return None
    j, rest = divmod(int(t.storage_offset()) - int(base.storage_offset()), int(base.stride(1)))
    if rest or not 0 <= j < base.shape[1] or t.stride() != base.stride()[:1] + base.stride()[2:]:
        return None
    return r, base, j


class Keeper:
    """Decides, tensor by tensor as a trace records them, what is kept as :class:`Derived`.

    ``untrusted``: attention blocks (name prefixes, ``layers.3.attn``) with a foreign hook on a
    step of :data:`RECIPE_STEPS`; their steps are kept as tensors.
    """

    def __init__(self, untrusted: frozenset = frozenset()) -> None:
        self.untrusted = untrusted
        self.held: set = set()  # storages the trace already holds

    def hold(self, t: Tensor) -> None:
        self.held.add(storage_key(t))

    def keep(self, name: str, t: Tensor) -> Optional[Derived]:
        """A :class:`Derived` for ``t`` (and its roots held from now on), or None: keep the tensor."""
        if name.split("[")[0].rsplit(".", 1)[0] in self.untrusted:
            return None
        kept = t.__dict__.get(KEPT)
        if isinstance(kept, Derived):  # one tensor under two names (masked is scaled): one entry
            return kept
        r = recipe_of(t)
        d: Optional[Derived] = None
        if r is not None:
            d = Derived(r, t.shape)
        elif (head := _head_of(t)) is not None:
            r, _, j = head
            d = Derived(r, t.shape, index=j)
        if d is None:
            return None
        extra: dict = {}
        for root in d.roots():
            key = storage_key(root)
            if key not in self.held:
                extra[key] = root.untyped_storage().nbytes()
        if sum(extra.values()) > SHARE * t.numel() * t.element_size():
            return None  # its roots would cost about what it does: keep the tensor
        self.held.update(extra)
        setattr(t, KEPT, d)
        return d
