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


def test_bad_options_are_named_on_the_rank_that_gave_them():
    # temperature=0 was a ZeroDivisionError on that rank after the others had started the ring
    r0, r1 = D.run_local(workers.bad_options, 2, timeout=120)
    assert r1["tau0"] == "ConfigError: temperature must be finite and positive, got 0.0"
    assert r1["causal"] == "ConfigError: causal must be True or False, got int 1"
    assert r1["unused"].startswith("ConfigError: temperature is τ of cosine scoring; scoring 'scaled' has none")
    for name in ("tau0", "causal", "unused"):
        assert "rank(s) 1 rejected their inputs" in r0[name], (name, r0[name])
