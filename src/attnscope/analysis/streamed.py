"""``analyze`` on a model loaded with ``stream_layers=True`` (:mod:`attnscope.models.streaming`).

A streamed model reads every layer from its file once per forward pass, so the corpus statistics
run one forward pass per window of ``chunk_size`` texts (the window's texts padded into one batch,
on one lane): each layer is read once per window, and the memory a pass needs is one layer's
weights and the window's activations. The statistics are reduced per layer inside the forward pass
as in memory, so they are the in-memory run's with ``batch_size = chunk_size`` bit for bit.

The induction sequences (causal models) are forward passes too. The copying scores of the
induction heads read each head's layer with :meth:`~attnscope.models.streaming.LayerStream.resident`,
one layer at a time. Head importance (every head ablated, one pass per head) and the norm shares
(which read W_O outside the pass) are not run in stream mode: asking for them is refused in one
sentence.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from ..circuits import copying_score, embed_unembed
from ..errors import ConfigError, InputError
from ..i18n import error
from ..models.streaming import layer_stream
from .decoder_copying import induction_copying, induction_heads, skipped


def is_streamed(model) -> bool:
    """True for a model loaded with ``stream_layers=True``."""
    return layer_stream(model) is not None


def check_streamed(model, cfg: Any) -> None:
    """ConfigError (one sentence) when ``cfg`` asks a streamed model for head importance or the norm shares."""
    if is_streamed(model) and (cfg.importance_texts > 0 or cfg.norm_texts > 0):
        raise error(ConfigError, "errors.stream_analysis")


def statistics_batching(model, cfg: Any) -> tuple[int, Optional[int]]:
    """``(texts per forward pass, lanes)`` of the statistics pass: ``(chunk_size, 1)`` for a streamed
    model (one pass per window), else ``(batch_size, lanes)`` as configured."""
    return (cfg.chunk_size, 1) if is_streamed(model) else (cfg.batch_size, cfg.lanes)


def copying_of(model, means: Mapping[str, np.ndarray], thresholds) -> dict:
    """:func:`.decoder_copying.induction_copying`, also for a streamed model (its induction heads'
    layers read one at a time, ``W_U W_E`` computed once from the resident embedding)."""
    stream = layer_stream(model)
    if stream is None:
        return induction_copying(model, means, thresholds)
    heads = induction_heads(means, thresholds)
    scores: dict[str, float] = {}
    try:
        UE = embed_unembed(model) if heads else None  # (d, d), float64
        for layer in sorted({l for l, _ in heads}):
            with stream.resident(layer):
                for l, h in heads:
                    if l == layer:
                        scores[f"{l}.{h}"] = float(copying_score(model, l, h, UE=UE))
    except InputError as e:
        return skipped(e)
    return {"scores": scores, "skipped": None}
