"""Layers kept as their inputs and run again on read: :class:`LayerReplay` and :class:`Replayed`.

A full trace (``model.trace(text)``, every name) would hold some twenty (B, L, d) or (B, L, d_ff)
tensors per layer besides its L×S matrices: at 512 tokens SmolLM2's q, k, v, z, the FFN's gate and
hidden and the residual steps were 55 % of what the trace held, where ``transformers`` eager keeps
only the weights and one hidden state per layer. So a full trace records in its forward pass only
what a layer cannot give back cheaply — each attention block's ``scores`` (with ``scaled``,
``masked`` and ``weights`` kept as the call that made them: :mod:`attnscope.trace.derived`), the
layer's output (the residual stream) — and the arguments each layer was called with (its input
hidden states, which are the previous layer's ``out``, and the masks and position tables all layers
share). Reading any other step of layer i calls layer i again on those same arguments, with a
recorder on each of its steps: the same module on the same tensors under the same settings, so the
same bits as the first pass (tests/trace/test_replay.py compares every name of every family with
``torch.equal`` against a trace that kept all of them). The last layer replayed is kept, so reading
a layer's names one after another runs it once.

The first pass takes the explicit attention path (a hook on ``scores`` asks for it), the path the
replay takes and a trace of every name took before, so the hidden states it hands on are the same.
Only a trace of every name, with no hook of the user's and no gradient, is kept this way
(:func:`replayable`, and no hook attached to the model outside the call: ``model.hooks``, a torch
hook on a module inside a layer): a hook
could change what a layer computes, and gradients need the tensors in the graph.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Optional

import torch
from torch import nn

from ..errors import InputError
from ..hooks import HookPoint, Recorder
from ..i18n import error
from .derived import RECIPE_STEPS, Derived
from .names import key

Tensor = torch.Tensor

#: A name inside a layer: (the layer's module path, the step within it), e.g. ``decoder.layers.3``,
#: ``self_attn.q``.
_IN_LAYER = re.compile(r"^((?:\w+\.)*?layers\.\d+)\.(.+)$")


def layer_of(name: str) -> Optional[tuple[str, str]]:
    """``(layer path, step)`` of a hook point inside a layer, or None (embeddings, final norm)."""
    m = _IN_LAYER.match(name)
    return (m.group(1), m.group(2)) if m else None


def kept_in_pass(step: str) -> bool:
    """Is a layer's step recorded in the first pass? Its attention matrices (``scores``: it makes
    the pass take the explicit path; the rest are kept as calls on it) and the residual stream
    (``attn_resid``, ``ffn_resid``, ``out``: one (B, L, d) each, and often one tensor under two
    names, GPT-2's ``ffn_resid`` is its ``out``, which a replay would give as two)."""
    return step in ("out", "ffn_resid") or step.rsplit(".", 1)[-1] in RECIPE_STEPS


def replayable(names, hooks, bwd_hooks, grad: bool) -> bool:
    """A trace of every name (``names`` None) without hooks or gradients is kept as replays."""
    return names is None and not hooks and not bwd_hooks and not grad


class ReplayCache:
    """The values of the layer replayed last, shared by the layers of one trace."""

    def __init__(self) -> None:
        self.owner: Optional["LayerReplay"] = None
        self.values: dict[str, Tensor] = {}


class LayerReplay:
    """One layer's call, kept: the module, the arguments it was called with (captured by
    :meth:`capture`, a forward pre-hook) and the steps (``(name, head)``) to record when run —
    every step of the layer the trace names, those kept in the pass too, so that the replay has
    the hooks the first pass had and takes the same kernel paths."""

    def __init__(self, model: Any, path: str, wanted: list[tuple[str, Optional[int]]],
                 batch_size: int, cache: ReplayCache) -> None:
        self.model, self.path, self.wanted = model, path, wanted
        self.batch_size, self.cache = batch_size, cache
        self.args: tuple = ()
        self.kwargs: dict = {}
        self.steps: list[str] = []  # the trace keys of the steps kept as this replay
        self.weights: tuple = ()  # the layer's weights when it ran (see _fingerprint)

    def capture(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        """A ``register_forward_pre_hook(with_kwargs=True)`` hook: keep the call's arguments, and
        the layer's weights as they are (where they live and their in-place version counters)."""
        self.args = tuple(_detached(a) for a in args)
        self.kwargs = {k: _detached(v) for k, v in kwargs.items()}
        self.weights = _fingerprint(module)

    def roots(self) -> Iterator[Tensor]:
        """The tensors the replay is computed from (the input hidden states, masks, tables)."""
        for a in (*self.args, *self.kwargs.values()):
            if isinstance(a, Tensor):
                yield a

    def values(self) -> dict[str, Tensor]:
        """Every wanted step of the layer by trace key, the layer run again (once, while it is the
        last layer read)."""
        if self.cache.owner is self:
            return self.cache.values
        self.cache.owner, self.cache.values = None, {}  # the previous layer's values go first
        layer = self.model.get_submodule(self.path)
        if _fingerprint(layer) != self.weights:
            raise error(InputError, "errors.trace_replay_changed", layer=self.path)
        points = dict(_points(layer, self.path))
        sink: dict[str, Tensor] = {}
        with self.model.lock:
            # The pass ran without other hooks (a replayed trace has none): hooks attached since
            # (model.hooks, a patch) are set aside while the layer runs again.
            aside = {n: p.hooks for n, p in points.items()}
            try:
                for p in points.values():
                    p.hooks = []
                for n, h in self.wanted:
                    points[n].add_hook(Recorder(sink), head=h, read_only=True)
                with torch.no_grad():
                    layer(*self.args, **self.kwargs)
            finally:
                for n, p in points.items():
                    p.hooks = aside[n]
        values = {}
        for n, h in self.wanted:
            t = sink[key(n, h)]
            if t.shape[0] != self.batch_size:  # what every text shares, (1, …): a view per text
                t = t.expand(self.batch_size, *t.shape[1:])
            values[key(n, h)] = t
        self.cache.owner, self.cache.values = self, values
        return values


class Replayed(Derived):
    """A step of a layer kept as its :class:`LayerReplay`; :meth:`value` runs the layer again."""

    __slots__ = ("replay", "name")

    def __init__(self, replay: LayerReplay, name: str) -> None:
        self.replay, self.name, self.index = replay, name, None
        self.fn, self.args, self.kwargs = self.value, (), {}

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]  # known once the layer has run again
        return self.value().shape

    def value(self) -> Tensor:
        return self.replay.values()[self.name]

    def roots(self) -> Iterator[Tensor]:
        return self.replay.roots()

    def __repr__(self) -> str:
        return f"Replayed({self.replay.path}, {self.name!r})"


def _points(layer: nn.Module, path: str) -> Iterator[tuple[str, HookPoint]]:
    for sub, module in layer.named_modules():
        if isinstance(module, HookPoint):
            yield f"{path}.{sub}", module


def _fingerprint(layer: nn.Module) -> tuple:
    """Where each weight of ``layer`` lives and how often it was changed in place (every
    parameter of its module tree; a walk over ``_modules`` is a third of ``parameters()``'s time,
    and a trace takes one per layer)."""
    out = []
    stack = [layer]
    while stack:
        module = stack.pop()
        for p in module._parameters.values():
            if p is not None:
                out.append((p.device, p.data_ptr(), p._version))
        for m in module._modules.values():
            if m is not None:
                stack.append(m)
    return tuple(out)


def _detached(a: Any) -> Any:
    return a.detach() if isinstance(a, Tensor) else a
