"""Trace texts with exactly what the viewer needs (shared by ``attnscope view`` and the server)."""

from __future__ import annotations

from typing import Optional, Sequence

from . import data as _data

#: q, k, v of every layer; the hidden states for the context view; head 0's weights of every
#: layer, against which the page's recomputation is checked. A single head's weights are computed
#: beside the fused kernel, so every layer's output, and thus every q, k, v, is bit for bit what
#: any other trace that records no full weight matrix gets (``attnscope explain`` included).
VIEW_NAMES = ("layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v", "embed.out", "layers.*.out",
              "layers.*.attn.weights[0]")


def trace_texts(model, texts: Sequence[str]):
    """``model.trace(texts)`` recording :data:`VIEW_NAMES` (one padded batch)."""
    return model.trace(list(texts), names=list(VIEW_NAMES))


def trace_each(model, texts: Sequence[str]) -> list:
    """One trace per text, so that every number equals what ``attnscope explain`` computes for
    that text (a padded batch rounds differently in float32)."""
    return [model.trace([t], names=list(VIEW_NAMES)) for t in texts]


def view_data(model, text: str, *, compare: Optional[str] = None, token: Optional[str] = None,
              decimals: int = 4) -> dict:
    """Page data for ``text`` (and the context comparison with ``compare``)."""
    traces = trace_each(model, [text] if compare is None else [text, compare])
    return _data.build(traces, compare=True if compare is not None else None, token=token, decimals=decimals)
