"""Streaming sums: any split of the queries into batches, and any merge order, gives the same means."""

import numpy as np
import pytest
import torch

from attnscope.analysis.accumulate import StatsAccumulator
from attnscope.analysis.stats import STAT_NAMES, attention_sums
from attnscope.errors import ShapeError

from .patterns import reference
from .test_stats_reference import random_weights


def test_batches_merge_to_the_whole():
    lengths = [5, 9, 3, 7, 6, 4]
    w, am, kinds = random_weights(lengths, H=2, causal=False, seed=3)
    whole = reference(w, am, kinds)
    # two layers fed the same batches: layer 0 in one accumulator, split over two for layer 1
    a, b = StatsAccumulator(2, 2, STAT_NAMES), StatsAccumulator(2, 2, STAT_NAMES)
    for part, acc in ((slice(0, 2), a), (slice(2, 4), b), (slice(4, 6), a)):
        # each part re-padded to its own longest text, as the bucketing does
        L = max(lengths[part])
        sums = attention_sums(w[part, :, :L, :L], am[part, :L], {k: v[part, :L] for k, v in kinds.items()})
        acc.add(0, sums)
        acc.add(1, sums)
    merged = a.merge(b)
    m = merged.means()
    for name in STAT_NAMES:
        assert m[name].shape == (2, 2)
        np.testing.assert_allclose(m[name][0], whole[name], rtol=1e-10, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(m[name][1], whole[name], rtol=1e-10, atol=1e-12, err_msg=name)


def test_counters_state_dict_and_nan_for_empty():
    acc = StatsAccumulator(1, 3, ("x",))
    acc.add(0, {"x": (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 0.0, 1.0]))})
    acc.count(texts=2, tokens=7)
    m = acc.means()["x"][0]
    assert m[0] == 0.5 and np.isnan(m[1]) and m[2] == 3.0
    back = StatsAccumulator.from_state_dict(acc.state_dict())
    assert back.counters["texts"] == 2 and back.counters["tokens"] == 7
    np.testing.assert_array_equal(back.sums.numpy(), acc.sums.numpy())


def test_mismatched_merge_and_layer_out_of_range():
    with pytest.raises(ShapeError, match="cannot merge"):
        StatsAccumulator(2, 3, ("x",)).merge(StatsAccumulator(2, 4, ("x",)))
    with pytest.raises(ShapeError, match="layer 5 out of range 0..1"):
        StatsAccumulator(2, 3, ("x",)).add(5, {})
