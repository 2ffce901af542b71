"""Batched runs of a prompt set for path patching, mean ablation and the circuit metrics.

A prompt set comes in :class:`PromptGroup` s: prompts of one group have the same number of tokens
(one template, names of one token each), so a group runs as one batch without padding and every
position means the same thing in every row (the mean ablation averages over rows at each position).
The metric is the logit difference ``logit[answer_r] − logit[wrong_r]`` of each row r at the last
position, its tokens given per row (IOI: the indirect object's name − the subject's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ..trace import attached_hooks

Tensor = torch.Tensor


@dataclass
class PromptGroup:
    """``n`` prompts of ``L`` tokens: ``clean``, ``corrupted`` ids ``(n, L)``, the metric's tokens
    ``answer``, ``wrong`` ``(n,)`` (ids), and the group's name (the template)."""

    clean: Tensor
    corrupted: Tensor
    answer: Tensor
    wrong: Tensor
    name: str = ""

    @property
    def size(self) -> int:
        return int(self.clean.shape[0])


def forward(model, ids: Tensor, hooks: Optional[dict] = None, *, start: int = 0, x_in: Optional[Tensor] = None,
            stop: Optional[int] = None) -> Tensor:
    """The final hidden states ``(n, L, d)`` (after the final norm) of ``ids (n, L)`` with the forward
    ``hooks`` ``{name: fn}`` attached. With ``start`` > 0 the stack runs from layer ``start`` on
    ``x_in (n, L, d)`` (what enters that layer, recorded before): the layers below would give it
    again. With ``stop`` it ends after layer ``stop`` (what comes out is then not a prediction; the
    caller wants what its hooks recorded)."""
    ids = ids.to(model.device)
    layers = model.layers
    end = len(layers) if stop is None else stop + 1
    handle = None
    if start > 0:
        if x_in is None:
            raise ValueError("x_in is needed when start > 0")

        def enter(module, args, kwargs):
            return (x_in.to(args[0].dtype), *args[1:]), kwargs
        handle = layers[start].register_forward_pre_hook(enter, with_kwargs=True)
    try:
        # the hooks are attached (and named) before the stack is cut, so their names stay the model's
        with attached_hooks(model, hooks or {}), model.lock:
            model.layers = layers[start:end]
            try:
                return model(ids, torch.ones_like(ids), torch.zeros_like(ids))  # (n, L, d)
            finally:
                model.layers = layers
    finally:
        if handle is not None:
            handle.remove()


def storing(sink: dict, name: str):
    """A hook that keeps what it sees in ``sink[name]`` (detached) and changes nothing."""
    def fn(t: Tensor, _name: str) -> None:
        sink[name] = t.detach()
    return fn


def record(model, ids: Tensor, names: list[str], hooks: Optional[dict] = None, **kw) -> tuple[dict, Tensor]:
    """``({name: tensor}, final hidden (n, L, d))`` of a run of ``ids`` recording ``names`` (whole
    hook points, no ``[h]``), with other ``hooks`` attached as well (they run first)."""
    sink: dict = {}
    both = dict(hooks or {})
    for n in names:
        if n in both:
            raise ValueError(f"{n} is both hooked and recorded")
        both[n] = storing(sink, n)
    return sink, forward(model, ids, both, **kw)


def logit_diffs(model, hidden: Tensor, group: PromptGroup) -> Tensor:
    """Each row's ``logit[answer] − logit[wrong]`` at the last position, float64 ``(n,)``."""
    logits = model.lm_logits(hidden[:, -1])  # (n, V)
    rows = torch.arange(logits.shape[0], device=logits.device)
    a, w = group.answer.to(logits.device), group.wrong.to(logits.device)
    return (logits[rows, a].double() - logits[rows, w].double()).cpu()  # (n,)

