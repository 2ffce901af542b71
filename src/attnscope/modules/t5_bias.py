"""T5's relative position bias (Raffel et al. 2020, §2.1): a learned number per head and per
*bucket* of relative distance, added to the raw scores — the position scheme ``t5_relative``
(``acts_on = "bias"``, a learned table: built per stack, not a fixed ``bias`` function).

For query position i and key position j, the distance ``δ = j − i`` goes into one of
``num_buckets`` buckets (T5: 32, ``max_distance`` 128)::

    bidirectional (encoder): half the buckets for keys after the query (δ > 0), half for the rest;
    unidirectional (decoder self-attention): only δ ≤ 0 counts, every bucket for the past;
    within a half: |δ| < n/2 (n = the half's buckets) → bucket |δ| (exact);
                   else n/2 + ⌊log(|δ| / (n/2)) / log(max_distance / (n/2)) · (n − n/2)⌋, at most n − 1

    bias[h, i, j] = W[bucket(j − i), h]          masked = q·kᵀ + bias (+ mask);  T5 does not scale

The scheme is a learned bias: ``build(config, causal=)`` gives a stack its table (the encoder's
bidirectional, the decoder's causal), which each stack computes once and every layer of the stack
adds (``layers.{i}.attn.bias`` is one tensor in every layer); cross-attention has none. The
module's :meth:`T5RelativeBias.bias_np` is its float64 twin, which the float64 forward,
``explain`` and the viewer's data read. :func:`t5_bucket_np` (= :func:`attnscope.reference.t5_bucket`)
is the buckets in NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..positions import PositionScheme, position_names, register_position
from ..reference.arrays import as_f64
from ..reference.relative import t5_bucket as t5_bucket_np  # noqa: F401  (public here too)
from ..reference.relative import t5_bucket_steps

Tensor = torch.Tensor


def t5_bucket(relative_position: Tensor, *, bidirectional: bool, num_buckets: int, max_distance: int) -> Tensor:
    """The bucket (int64, same shape) of each relative distance ``δ = key − query``, as T5 computes it."""
    buckets = torch.zeros_like(relative_position)
    n = num_buckets
    if bidirectional:
        n //= 2
        buckets = buckets + (relative_position > 0).to(torch.long) * n
        distance = torch.abs(relative_position)
    else:
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))
    exact = n // 2
    small = distance < exact
    large = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact) * (n - exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, n - 1))
    return buckets + torch.where(small, distance, large)


class T5RelativeBias(nn.Module):
    """``bias (1, H, L, S)`` for queries at ``past … past + L − 1`` over keys ``0 … S − 1``.

    ``embedding.weight`` (num_buckets, H) is T5's ``relative_attention_bias``.
    """

    def __init__(self, n_heads: int, num_buckets: int, max_distance: int, *, bidirectional: bool) -> None:
        super().__init__()
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional
        self.embedding = nn.Embedding(num_buckets, n_heads)

    def buckets(self, L: int, S: int, past: int = 0, device=None) -> Tensor:
        """int64 (L, S): the bucket of every query/key pair."""
        q_pos = torch.arange(past, past + L, device=device)[:, None]
        k_pos = torch.arange(S, device=device)[None, :]
        return t5_bucket(k_pos - q_pos, bidirectional=self.bidirectional, num_buckets=self.num_buckets,
                         max_distance=self.max_distance)

    def forward(self, L: int, S: int, past: int = 0) -> Tensor:
        b = self.buckets(L, S, past, self.embedding.weight.device)  # (L, S)
        return self.embedding(b).permute(2, 0, 1).unsqueeze(0)  # (1, H, L, S)

    def steps_np(self, delta) -> dict:
        """Every step of the buckets of distances ``delta = key − query`` (any shape), in NumPy
        (:func:`attnscope.reference.t5_bucket_steps`: float32 logs, as T5 computes them)."""
        return t5_bucket_steps(delta, bidirectional=self.bidirectional, num_buckets=self.num_buckets,
                               max_distance=self.max_distance)

    def bias_np(self, n_q: int, n_k: int) -> tuple[np.ndarray, dict]:
        """The float64 twin of ``forward(n_q, n_k)`` on the text's first positions: ``(bias (H, n_q,
        n_k), the bucket steps of every query/key pair)``, the table widened to float64."""
        steps = self.steps_np(np.arange(n_k)[None, :] - np.arange(n_q)[:, None])  # (n_q, n_k): key − query
        table = as_f64(self.embedding.weight)  # (buckets, H)
        return np.moveaxis(table[steps["bucket"]], -1, 0), steps  # (H, n_q, n_k)

    def extra_repr(self) -> str:
        return (f"buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"{'bidirectional' if self.bidirectional else 'causal'}")


def _build(config, *, causal: bool = False) -> T5RelativeBias:
    """A stack's table: the encoder's bidirectional, the decoder's self-attention ``causal``."""
    return T5RelativeBias(config.n_heads, config.relative_buckets, config.relative_max_distance,
                          bidirectional=not causal)


if "t5_relative" not in position_names():  # registered once, at the first import
    register_position(PositionScheme(
        name="t5_relative", acts_on="bias", build=_build,
        words={"en": "Positions: T5's relative bias; each head adds a learned number for the bucket of the distance "
                     "between query and key to the raw score (no absolute positions, no 1/√d scaling).",
               "zh": "位置：T5 的相对位置偏置；每个头按查询与键之间距离所在的桶，把一个可学习的数加到原始分数上"
                     "（没有绝对位置，也不除以 √d）。"}))
