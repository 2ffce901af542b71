"""attention_weights returns exactly the selected softmax rows (heads × queries) of the dense
weights, for every selection form, causal with the queries' true positions, and masks."""

import numpy as np
import pytest
import torch

from attnscope import InputError
from attnscope.blockwise import attention_weights
from tests.blockwise.reference import np_attention

g = torch.Generator().manual_seed(11)
B, H, L, S, D = 2, 4, 70, 90, 8
q = torch.randn(B, H, L, D, generator=g, dtype=torch.float64)
k = torch.randn(B, H, S, D, generator=g, dtype=torch.float64)
v = torch.randn(B, H, S, 1, dtype=torch.float64)
mask = torch.rand(B, H, L, S, generator=g) > 0.3
mask[1, 2, 40] = False


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scoring", ["scaled", "cosine", "unscaled"])
@pytest.mark.parametrize("heads,queries", [
    (None, None), (2, None), ([3, 1], slice(30, 61)), (slice(1, 3), [40, 5, 69]),
    (torch.tensor([0, 2]), range(0, 70, 7)), (-1, 40),
])
def test_selected_rows_equal_dense_rows(causal, scoring, heads, queries):
    _, ref, _ = np_attention(q, k, v, mask, causal=causal, scoring=scoring)  # (B, H, L, S)
    h = slice(None) if heads is None else (list(heads) if not isinstance(heads, (int, slice)) else heads)
    r = slice(None) if queries is None else (list(queries) if not isinstance(queries, (int, slice)) else queries)
    ref = ref[:, h]
    ref = ref[..., r, :] if not isinstance(r, int) else ref[..., r, :]
    got = attention_weights(q, k, mask, heads=heads, queries=queries, causal=causal, scoring=scoring, block_size=16)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-13, rtol=0)


def test_float32_and_broadcast_mask():
    qf, kf = q.float(), k.float()
    keep = torch.ones(B, 1, 1, S, dtype=torch.bool)
    keep[0, ..., 60:] = False  # padding of the first sample's keys
    _, ref, _ = np_attention(qf, kf, v, keep)
    got = attention_weights(qf, kf, keep, heads=[1], queries=slice(10, 20))
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), ref[:, [1], 10:20], atol=1e-6, rtol=0)
    assert got[0, ..., 60:].abs().max() == 0 and torch.allclose(got.sum(-1), torch.ones(()), atol=1e-6)


def test_selection_errors():
    with pytest.raises(InputError, match=r"heads index 4 out of range: there are 4 \(0\.\.3\)"):
        attention_weights(q, k, heads=4)
    with pytest.raises(InputError, match=r"queries index 70 out of range"):
        attention_weights(q, k, queries=[0, 70])
    with pytest.raises(InputError, match="selects nothing"):
        attention_weights(q, k, queries=slice(5, 5))
    with pytest.raises(InputError, match="heads must be an int, a slice"):
        attention_weights(q, k, heads=1.5)
