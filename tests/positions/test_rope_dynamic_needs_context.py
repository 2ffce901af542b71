"""Dynamic NTK scaling grows the base past the context length, so it needs that length: without
it rope_inv_freq raised a TypeError from int(None); now a ConfigError that says what is missing."""

import pytest
import torch

from attnscope.errors import ConfigError
from attnscope.positions import Rotary, rope_inv_freq

DYNAMIC = {"rope_type": "dynamic", "factor": 2.0}


def test_dynamic_scaling_without_max_positions_is_a_config_error():
    with pytest.raises(ConfigError, match=r"dynamic RoPE scaling needs max_positions"):
        rope_inv_freq(64, 10000.0, DYNAMIC)
    with pytest.raises(ConfigError, match=r"dynamic RoPE scaling needs max_positions"):
        Rotary(64, 10000.0, DYNAMIC)


def test_dynamic_scaling_with_max_positions_keeps_the_base_within_the_context():
    # within the context the base is θ itself: the unscaled frequencies θ^(−2i/d), in float64
    d, theta = 64, 10000.0
    got = rope_inv_freq(d, theta, DYNAMIC, seq_len=100, max_positions=128, dtype=torch.float64)
    want = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert torch.allclose(got, want, rtol=0, atol=1e-15)
