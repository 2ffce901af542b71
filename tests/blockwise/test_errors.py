"""Bad arguments to the blockwise functions raise attnscope errors that name the problem."""

import numpy as np
import pytest
import torch

from attnscope import ConfigError, ShapeError
from attnscope.blockwise import attention_lse, attention_weights, blockwise_attention

q = k = v = torch.randn(1, 2, 10, 4)


@pytest.mark.parametrize("bad", [0, -4, (8,), (8, 0), 2.5, True, "256"])
def test_block_size(bad):
    with pytest.raises(ConfigError, match="block"):
        blockwise_attention(q, k, v, block_size=bad)


def test_shapes_and_options():
    with pytest.raises(ShapeError, match=r"q and k must have the same last dim d_k"):
        blockwise_attention(q, torch.randn(1, 2, 10, 5), v)
    with pytest.raises(ShapeError, match=r"k and v must have the same length S"):
        blockwise_attention(q, k, torch.randn(1, 2, 9, 4))
    with pytest.raises(ShapeError, match=r"mask of shape \(3, 10\) does not broadcast"):
        blockwise_attention(q, k, v, torch.ones(3, 10, dtype=torch.bool))
    with pytest.raises(ShapeError, match=r"temperature of shape \(1, 7\) does not broadcast"):
        blockwise_attention(q, k, v, scoring="cosine", temperature=torch.ones(7))
    with pytest.raises(ConfigError, match=r"unknown scoring 'flash'"):
        blockwise_attention(q, k, v, scoring="flash")
    with pytest.raises(ConfigError, match=r"dropout_p must be in \[0, 1\)"):
        blockwise_attention(q, k, v, dropout_p=1.0)
    with pytest.raises(ShapeError, match="floating-point"):
        attention_lse(q, torch.ones(1, 2, 10, 4, dtype=torch.long))
    with pytest.raises(ShapeError, match=r"heads= needs q with a head dim"):
        attention_weights(q[0, 0], k[0, 0], heads=0)


def test_causal_must_be_true_or_false():
    # taken for its truth value here, while attention() handed it to SDPA (a TypeError)
    for fn, args in ((blockwise_attention, (q, k, v)), (attention_lse, (q, k)), (attention_weights, (q, k))):
        with pytest.raises(ConfigError, match="causal must be True or False, got int 1"):
            fn(*args, causal=1)


def test_a_temperature_for_a_scoring_without_one_is_refused():
    for fn, args in ((blockwise_attention, (q, k, v)), (attention_lse, (q, k)), (attention_weights, (q, k))):
        with pytest.raises(ConfigError, match="temperature is τ of cosine scoring; scoring 'scaled' has none"):
            fn(*args, temperature=0.5)


@pytest.mark.parametrize("sel", [[True, False], (False, True, True), np.array([True, False, True])])
def test_a_list_of_booleans_is_not_a_list_of_indices(sel):
    # [True, False] selected rows 1 and 0 (True == 1), not the rows where it is True; a bool tensor
    # was already refused
    from attnscope.errors import InputError
    with pytest.raises(InputError, match="queries must be an int, a slice, a range, a list of ints"):
        attention_weights(q, k, queries=sel)
    with pytest.raises(InputError, match="heads must be an int"):
        attention_weights(q, k, heads=sel[:2])


def test_numpy_integers_select_like_ints():
    want = attention_weights(q, k, heads=1, queries=[2, 7])
    torch.testing.assert_close(attention_weights(q, k, heads=np.int64(1), queries=np.array([2, 7])), want,
                               rtol=0, atol=0)
    assert attention_weights(q, k, queries=np.int64(3)).shape == (1, 2, 10)  # an int: the dim is dropped
