"""Clear attnscope errors instead of raw torch ones (issue 11, item 20)."""

import pytest
import torch

import attnscope.modules
from attnscope import ConfigError, MultiHeadAttention, ShapeError, SingleHeadAttention, TransformerConfig, log_softmax, softmax


@pytest.mark.parametrize("kwargs, pattern", [
    ({"d_model": 7.5, "n_heads": 3}, r"d_model must be an integer, got float 7\.5"),
    ({"d_model": 8, "n_heads": 2.0}, r"n_heads must be an integer, got float 2\.0"),
    ({"d_model": "8", "n_heads": 2}, r"d_model must be an integer, got str '8'"),
    ({"d_model": 0, "n_heads": 2}, r"d_model must be positive, got 0"),
    ({"d_model": 8, "n_heads": -1}, r"n_heads must be positive, got -1"),
    ({"d_model": 8, "n_heads": 2, "dropout": 1.0}, r"dropout must be in \[0, 1\), got 1\.0"),
])
def test_module_sizes(kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        MultiHeadAttention(**kwargs)


def test_single_head_size():
    with pytest.raises(ConfigError, match=r"hidden_size must be an integer, got float 7\.5"):
        SingleHeadAttention(7.5)


@pytest.mark.parametrize("f", [softmax, log_softmax])
def test_softmax_dim(f):
    with pytest.raises(ShapeError, match=r"dim 3 is out of range for x of shape \(2, 3\) \(2 dims: dim must be in -2\.\.1\)"):
        f(torch.randn(2, 3), dim=3)
    with pytest.raises(ShapeError, match=r"dim must be an integer, got 'rows'"):
        f(torch.randn(2, 3), dim="rows")
    with pytest.raises(ShapeError, match=r"at least 1 dim"):
        f(torch.tensor(1.0))
    torch.testing.assert_close(f(torch.randn(2, 3), dim=-2).shape, torch.Size((2, 3)))


def test_transformer_config_is_in_modules_as_the_readme_says():
    assert attnscope.modules.TransformerConfig is TransformerConfig
