"""Ranks whose inputs do not fit together all raise the same clear ShapeError (none hangs, and
the group still works afterwards); a rank that never calls makes the others time out."""

import pytest

from attnscope import distributed as D
from tests.distributed import workers

pytestmark = pytest.mark.distributed


def test_mismatches_raise_on_every_rank():
    results = D.run_local(workers.error_battery, 2, timeout=120)
    for r in results:
        e = r["errors"]
        assert "q must have the same shape on every rank except the sequence length" in e["head_dim"]
        assert "rank 0 (1, 2, 6, 8), rank 1 (1, 2, 6, 4)" in e["head_dim"]
        assert "ranks disagree on dtype: rank 0 torch.float64, rank 1 torch.float32" in e["dtype"]
        assert "rank 0 (1, 2, 6, 8), rank 1 (1, 3, 6, 8)" in e["heads"]
        assert "ranks disagree on causal: rank 0 True, rank 1 False" in e["causal"]
        assert "ranks disagree on head_chunks: rank 0 1, rank 1 2" in e["head_chunks"]
        assert r["after"].shape == (1, 2, 6, 8)
    assert "q must be a floating-point tensor" in results[1]["errors"]["local"]  # its own error
    assert "rank(s) 1 rejected their inputs" in results[0]["errors"]["local"]
    assert results[1]["errors"]["kernel"].startswith("ConfigError: kernel must be one of")
    assert "rank(s) 1 rejected their inputs" in results[0]["errors"]["kernel"]


def test_missing_rank_times_out():
    r0 = D.run_local(workers.missing_rank, 2, timeout=60)[0]
    assert r0["error"] is not None and "did not complete within 1.5 s" in r0["error"]
    assert r0["seconds"] < 10
