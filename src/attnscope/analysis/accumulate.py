"""Streaming reduction of per-head statistics: sums and counts, mergeable across processes.

Nothing is kept per text: each batch adds its sums (float64) into fixed-size tensors
``(n_layers, n_heads)`` per statistic, so memory stays flat whatever the corpus size. Two
accumulators merge by adding; across processes, :meth:`StatsAccumulator.all_reduce` packs all
sums and counters into one tensor and sums it with ``torch.distributed.all_reduce``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import torch

from ..errors import ShapeError
from ..i18n import error

Tensor = torch.Tensor

#: Corpus counters every run reports (all integers, summed across processes).
COUNTERS = ("texts", "tokens", "batches", "truncated", "truncated_tokens",
            "skipped_decode", "empty", "importance_texts", "repeat_texts")


class StatsAccumulator:
    """Sums and counts of named per-head statistics over a corpus, plus integer counters.

    ``add(layer, {stat: (sum (H,), count (H,))})`` adds one batch of one layer;
    :meth:`means` returns ``{stat: ndarray (n_layers, n_heads)}`` (NaN where nothing counted).
    """

    def __init__(self, n_layers: int, n_heads: int, names: Iterable[str]) -> None:
        self.n_layers, self.n_heads = int(n_layers), int(n_heads)
        self.names = tuple(names)
        shape = (len(self.names), self.n_layers, self.n_heads)
        self.sums = torch.zeros(shape, dtype=torch.float64)
        self.counts = torch.zeros(shape, dtype=torch.float64)
        self.counters = {k: 0 for k in COUNTERS}
        self._index = {n: i for i, n in enumerate(self.names)}

    def add(self, layer: int, sums: Mapping[str, tuple[Tensor, Tensor]]) -> None:
        """Add one layer's ``{stat: (sum (H,), count (H,))}`` of one batch."""
        if not 0 <= layer < self.n_layers:
            raise error(ShapeError, "errors.analysis_layer_range", layer=layer, last=self.n_layers - 1)
        for name, (s, c) in sums.items():
            i = self._index[name]
            self.sums[i, layer] += s.detach().to("cpu", torch.float64)
            self.counts[i, layer] += c.detach().to("cpu", torch.float64)

    def count(self, **increments: int) -> None:
        """Add to the corpus counters, e.g. ``count(texts=32, tokens=4096)``."""
        for k, v in increments.items():
            self.counters[k] += int(v)

    def merge(self, other: "StatsAccumulator") -> "StatsAccumulator":
        """Add ``other`` into this one (same layers, heads and names); returns self."""
        if (other.n_layers, other.n_heads, other.names) != (self.n_layers, self.n_heads, self.names):
            raise error(ShapeError, "errors.analysis_merge", layers=other.n_layers, heads=other.n_heads,
                        into_layers=self.n_layers, into_heads=self.n_heads)
        self.sums += other.sums
        self.counts += other.counts
        for k, v in other.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        return self

    def all_reduce(self, group=None) -> "StatsAccumulator":
        """Sum this accumulator over all processes of ``group`` in place (one collective)."""
        import torch.distributed as dist

        keys = sorted(self.counters)
        flat = torch.cat([self.sums.flatten(), self.counts.flatten(),
                          torch.tensor([float(self.counters[k]) for k in keys], dtype=torch.float64)])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
        n = self.sums.numel()
        self.sums = flat[:n].view_as(self.sums).clone()
        self.counts = flat[n:2 * n].view_as(self.counts).clone()
        for k, v in zip(keys, flat[2 * n:].tolist()):
            self.counters[k] = int(round(v))  # float64 holds integers exactly below 2**53
        return self

    def means(self) -> dict[str, np.ndarray]:
        """``{stat: (n_layers, n_heads)}`` float64 means; NaN where the count is 0."""
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(self.counts.numpy() > 0, self.sums.numpy() / self.counts.numpy(), np.nan)
        return {n: m[i] for i, n in enumerate(self.names)}

    def state_dict(self) -> dict:
        return {"n_layers": self.n_layers, "n_heads": self.n_heads, "names": list(self.names),
                "sums": self.sums.tolist(), "counts": self.counts.tolist(), "counters": dict(self.counters)}

    @classmethod
    def from_state_dict(cls, d: Mapping) -> "StatsAccumulator":
        acc = cls(d["n_layers"], d["n_heads"], d["names"])
        acc.sums = torch.tensor(d["sums"], dtype=torch.float64)
        acc.counts = torch.tensor(d["counts"], dtype=torch.float64)
        acc.counters.update(d["counters"])
        return acc
