"""A second set of modules over the same weights: :func:`replicate`."""

from __future__ import annotations

import copy

import torch


def replicate(model):
    """A copy of ``model`` that shares every parameter, buffer and tensor attribute with it (and
    its tokenizer, config and other root attributes) but has modules, hook points and a lock of
    its own: a forward pass can run on it beside one on ``model``, with other hooks, and its
    modules can be swapped (:class:`.importance.Ladder`) without touching ``model``. Costs no
    weight memory."""
    memo: dict = {}
    for m in model.modules():
        for t in (*m._parameters.values(), *m._buffers.values(), *vars(m).values()):
            if isinstance(t, torch.Tensor):
                memo[id(t)] = t
    for k, v in vars(model).items():
        if not k.startswith("_") and k not in ("lock", "training"):  # tokenizer, config, gguf metadata, …
            memo[id(v)] = v
    return copy.deepcopy(model, memo)
