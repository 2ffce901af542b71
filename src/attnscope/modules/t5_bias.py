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

Each stack computes the bias once, in its first layer, and every layer of the stack adds the same
matrix (``layers.{i}.attn.bias`` is one tensor in every layer). Cross-attention has none.
:func:`t5_bucket_np` is the float64-side twin for ``explain``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..positions import PositionScheme, position_names, register_position

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


def t5_bucket_np(relative_position, *, bidirectional: bool, num_buckets: int, max_distance: int) -> np.ndarray:
    """:func:`t5_bucket` in NumPy, element by element in float64 (for explaining a row)."""
    rel = np.asarray(relative_position, dtype=np.int64)
    out = np.empty(rel.shape, dtype=np.int64)
    for idx, d in np.ndenumerate(rel):
        n, b = num_buckets, 0
        if bidirectional:
            n //= 2
            b = n if d > 0 else 0
            dist = abs(int(d))
        else:
            dist = max(-int(d), 0)
        exact = n // 2
        if dist < exact:
            out[idx] = b + dist
        else:
            # float32 logs, as T5 computes them, so that a distance on a bucket edge lands where T5 puts it
            ratio = np.float32(np.log(np.float32(dist) / np.float32(exact))) / np.float32(math.log(max_distance / exact))
            out[idx] = b + min(exact + int(np.float32(ratio) * np.float32(n - exact)), n - 1)
    return out


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

    def extra_repr(self) -> str:
        return (f"buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"{'bidirectional' if self.bidirectional else 'causal'}")


def _build(config) -> T5RelativeBias:
    return T5RelativeBias(config.n_heads, config.relative_buckets, config.relative_max_distance, bidirectional=True)


if "t5_relative" not in position_names():  # registered once, at the first import
    register_position(PositionScheme(
        name="t5_relative", acts_on="bias", build=_build,
        words={"en": "Positions: T5's relative bias; each head adds a learned number for the bucket of the distance "
                     "between query and key to the raw score (no absolute positions, no 1/√d scaling).",
               "zh": "位置：T5 的相对位置偏置；每个头按查询与键之间距离所在的桶，把一个可学习的数加到原始分数上"
                     "（没有绝对位置，也不除以 √d）。"}))
