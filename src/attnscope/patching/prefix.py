"""Patched runs that start at the patched layer, from the corrupted run's residual stream.

A copy of the corrupted prompt that carries a patch at layer l is the corrupted run itself in
every layer below l, so its stream there need not be computed again: the corrupted run records
what enters each patched layer once (``embed.out``, ``layers.{l-1}.out``), and a batch of copies
runs the stack from its lowest patched layer only. The batch grows as it climbs: a copy
patched at layer l joins it at layer l (its row: the recorded input of layer l), so that each copy
goes through ``n_layers − l`` layers, not all of them. Patching all of SmolLM2's 30 × 9 heads
evaluates 4,185 (copy, layer) pairs instead of 8,100 (:attr:`PatchingResult.layer_evaluations`).

The rows that join a batch are copies of the recorded input, and a row's numbers do not depend on
the other rows of its batch (no padding, no interaction between texts), so each copy gets what a
full run of the patched prompt gets (tests/patching/test_prefix.py compares with ``torch.equal``).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Optional

import torch

from ..trace import attached_hooks

Tensor = torch.Tensor

#: ``enter(rows, local)``: writes patches into the rows that join at a layer, ``rows (k, L, d)``;
#: ``local`` their indices in the batch.
Enter = Callable[[Tensor, list[int]], Tensor]


def input_name(layer: int) -> str:
    """The trace name of what enters ``layer``: the embedding's output, or the layer below's."""
    return "embed.out" if layer == 0 else f"layers.{layer - 1}.out"


def run_from_layers(model, ids: Tensor, row_layers: list[int], inputs: dict[int, Tensor], hooks: dict,
                    enter: Optional[dict[int, Enter]] = None) -> tuple[Tensor, int]:
    """The final hidden states ``(K, L, d)`` of K copies of the prompt ``ids (1, L)``, copy r starting at
    layer ``row_layers[r]`` (sorted) from ``inputs[l] (1, L, d)`` (what enters layer l in the prompt's
    own run), with the forward ``hooks`` ``{name: fn}`` attached (batch rows are the copies). Also
    the number of (copy, layer) evaluations.

    ``enter[l]`` patches the rows that join at layer l before the layer runs (a patch of what
    enters the layer, which no hook point inside the stack sees for rows that join there).
    """
    if list(row_layers) != sorted(row_layers) or not row_layers:
        raise ValueError("row_layers must be a non-empty sorted list")
    joining = Counter(row_layers)
    start = row_layers[0]
    layers = model.layers
    evaluations = [0]
    enter = enter or {}

    def pre_hook(j: int):
        first = sum(n for l, n in joining.items() if l < j)  # rows already in the batch below layer j

        def grow(module, args, kwargs):
            x = args[0]  # (k, L, d)
            if joining[j]:
                new = inputs[j].expand(joining[j], *inputs[j].shape[1:]).contiguous()  # (n, L, d)
                if j in enter:
                    new = enter[j](new, list(range(first, first + joining[j])))
                x = new if j == start else torch.cat([x, new])  # (k + n, L, d)
            evaluations[0] += x.shape[0]
            return (x, *args[1:]), kwargs
        return grow

    handles = [layers[j].register_forward_pre_hook(pre_hook(j), with_kwargs=True)
               for j in range(start, len(layers))]
    try:
        with attached_hooks(model, hooks), model.lock:
            # the stack runs its layers from `start` only; the hook points keep their names
            model.layers = layers[start:]
            try:
                mask = torch.ones_like(ids)
                hidden = model(ids, mask, torch.zeros_like(ids))  # (K, L, d)
            finally:
                model.layers = layers
    finally:
        for h in handles:
            h.remove()
    return hidden, evaluations[0]
