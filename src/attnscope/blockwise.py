"""Exact attention in O(L·d) memory — the public face of :mod:`attnscope.kernels.blockwise`.

The kernel (FlashAttention's online softmax in PyTorch, its backward, the tile thread pool)
lives in :mod:`attnscope.kernels.blockwise`; this module keeps the first release's import path::

    from attnscope.blockwise import blockwise_attention, attention_weights, attention_lse

:func:`trace_weights` reads a trace's q and k (it moves to the Trace read API).
"""

from __future__ import annotations

from typing import Union

import torch

from .errors import InputError
from .kernels.blockwise import DEFAULT_BLOCK, LOG2E, attention_lse, attention_weights, blockwise_attention
from .kernels.blockwise.prepare import Index

Tensor = torch.Tensor

__all__ = ["DEFAULT_BLOCK", "LOG2E", "attention_lse", "attention_weights", "blockwise_attention", "trace_weights"]


def trace_weights(trace, layer: int, *, heads: Index = None, queries: Index = None,
                  block_size: Union[None, int, tuple[int, int]] = None) -> Tensor:
    """Weights of one layer's selected heads and query range, from a trace's recorded q and k.

    A trace of a long text records ``layers.{i}.attn.q`` and ``.k`` cheaply (O(L·d) each, the
    fused kernel keeps running); this computes only the requested softmax rows from them with
    :func:`attention_weights`, with the padding mask and causality the model used::

        tr = model.trace(long_text, names=["layers.3.attn.q", "layers.3.attn.k"])
        w = trace_weights(tr, 3, heads=5, queries=slice(1000, 1100))   # (B, 100, L)

    Args:
        trace: an :class:`attnscope.trace.Trace` with ``layers.{layer}.attn.q`` and ``.k``
            (or, for ``heads=h``, ``.q[h]`` and ``.k[h]``).
        layer: the layer index.
        heads, queries: as in :func:`attention_weights` (an int drops that dim).
    Returns:
        ``(B, h, l, L)`` weights (dims of int selections dropped); keys at padding get 0.
    """
    names = [f"layers.{layer}.attn.{s}" for s in ("q", "k")]
    if all(n in trace for n in names):
        q, k = trace[names[0]], trace[names[1]]  # (B, H, L, d_head)
    elif isinstance(heads, int) and all(f"{n}[{heads}]" in trace for n in names):
        q, k = trace[f"{names[0]}[{heads}]"].unsqueeze(1), trace[f"{names[1]}[{heads}]"].unsqueeze(1)  # (B, 1, L, d)
        heads = 0
    else:
        raise InputError(f"the trace lacks {names[0]} and {names[1]}; trace with "
                         f"names=[{names[0]!r}, {names[1]!r}] to get weights on demand")
    scoring = trace.config.scoring
    if scoring == "cosine":
        raise InputError("cosine scoring uses the model's learned temperature, which a trace does not "
                         "record; trace the weights themselves (names='layers.{i}.attn.weights[h]')")
    if scoring == "qknorm":
        scoring = "scaled"  # the recorded q, k are after the LayerNorm; what remains is ÷√d_head
    am = trace.attention_mask.to(q.device).bool()  # (B, L), True = real token
    mask = None if bool(am.all()) else am[:, None, None, :]  # (B, 1, 1, S): keys at padding blocked
    return attention_weights(q, k, mask, heads=heads, queries=queries, causal=bool(trace.config.causal),
                             scoring=scoring, block_size=block_size)
