"""Streaming reduction of per-head statistics: sums and counts, mergeable across processes.

Nothing is kept per text: each batch adds its sums into fixed-size arrays ``(n_layers, n_heads)``
per statistic, so memory stays flat whatever the corpus size. The sums are exact
(:mod:`.exact`: every float64 addend kept as an integer, rounded once when read), so the batches
may be added in any order and accumulators merged in any grouping (lanes, shards, processes) and
the means are the same bits. Across processes, :meth:`StatsAccumulator.all_reduce` gathers every
process's exact sums and adds them.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import torch

from ..errors import ShapeError
from ..i18n import error
from .exact import ExactArray

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
        self.shape = (len(self.names), self.n_layers, self.n_heads)
        size = len(self.names) * self.n_layers * self.n_heads
        self.exact_sums, self.exact_counts = ExactArray(size), ExactArray(size)  # flat, in ``shape``'s order
        self.counters = {k: 0 for k in COUNTERS}
        self._index = {n: i for i, n in enumerate(self.names)}

    @property
    def sums(self) -> Tensor:
        """``(n_names, n_layers, n_heads)`` float64: each sum rounded once."""
        return torch.from_numpy(self.exact_sums.values().reshape(self.shape))

    @property
    def counts(self) -> Tensor:
        """``(n_names, n_layers, n_heads)`` float64: each count rounded once."""
        return torch.from_numpy(self.exact_counts.values().reshape(self.shape))

    def add(self, layer: int, sums: Mapping[str, tuple[Tensor, Tensor]]) -> None:
        """Add one layer's ``{stat: (sum (H,), count (H,))}`` of one batch."""
        if not 0 <= layer < self.n_layers:
            raise error(ShapeError, "errors.analysis_layer_range", layer=layer, last=self.n_layers - 1)
        H = self.n_heads
        for name, (s, c) in sums.items():
            start = (self._index[name] * self.n_layers + layer) * H
            self.exact_sums.add(start, torch.broadcast_to(s.detach().to("cpu", torch.float64), (H,)).tolist())
            self.exact_counts.add(start, torch.broadcast_to(c.detach().to("cpu", torch.float64), (H,)).tolist())

    def count(self, **increments: int) -> None:
        """Add to the corpus counters, e.g. ``count(texts=32, tokens=4096)``."""
        for k, v in increments.items():
            self.counters[k] += int(v)

    def merge(self, other: "StatsAccumulator") -> "StatsAccumulator":
        """Add ``other`` into this one (same layers, heads and names); returns self."""
        if (other.n_layers, other.n_heads, other.names) != (self.n_layers, self.n_heads, self.names):
            raise error(ShapeError, "errors.analysis_merge", layers=other.n_layers, heads=other.n_heads,
                        into_layers=self.n_layers, into_heads=self.n_heads)
        self.exact_sums.merge(other.exact_sums)
        self.exact_counts.merge(other.exact_counts)
        for k, v in other.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        return self

    def all_reduce(self, group=None) -> "StatsAccumulator":
        """Sum this accumulator over all processes of ``group`` in place: every process's exact
        sums are gathered (one collective) and added, so the result is the single process's bits."""
        import torch.distributed as dist

        states: list = [None] * dist.get_world_size(group)
        dist.all_gather_object(states, self.state_dict(), group=group)
        total = StatsAccumulator(self.n_layers, self.n_heads, self.names)
        for state in states:
            total.merge(StatsAccumulator.from_state_dict(state))
        self.exact_sums, self.exact_counts, self.counters = total.exact_sums, total.exact_counts, total.counters
        return self

    def means(self) -> dict[str, np.ndarray]:
        """``{stat: (n_layers, n_heads)}`` float64 means; NaN where the count is 0."""
        sums, counts = self.sums.numpy(), self.counts.numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(counts > 0, sums / counts, np.nan)
        return {n: m[i] for i, n in enumerate(self.names)}

    def state_dict(self) -> dict:
        """JSON-ready and exact: the sums and counts as :meth:`.exact.ExactArray.to_list` strings."""
        return {"n_layers": self.n_layers, "n_heads": self.n_heads, "names": list(self.names),
                "sums": self.exact_sums.to_list(), "counts": self.exact_counts.to_list(),
                "counters": dict(self.counters)}

    @classmethod
    def from_state_dict(cls, d: Mapping) -> "StatsAccumulator":
        acc = cls(d["n_layers"], d["n_heads"], d["names"])
        acc.exact_sums = ExactArray.from_list(d["sums"])
        acc.exact_counts = ExactArray.from_list(d["counts"])
        acc.counters.update(d["counters"])
        return acc
