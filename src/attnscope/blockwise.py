"""Exact attention in O(L·d) memory — the public face of :mod:`attnscope.kernels.blockwise`.

The kernel (FlashAttention's online softmax in PyTorch, its backward, the tile thread pool)
lives in :mod:`attnscope.kernels.blockwise`; this module keeps the first release's import path::

    from attnscope.blockwise import blockwise_attention, attention_weights, attention_lse

A trace's weights on demand (from its recorded q and k) are :meth:`attnscope.Trace.weights`.
"""

from __future__ import annotations

from .kernels.blockwise import DEFAULT_BLOCK, LOG2E, attention_lse, attention_weights, blockwise_attention

__all__ = ["DEFAULT_BLOCK", "LOG2E", "attention_lse", "attention_weights", "blockwise_attention"]
