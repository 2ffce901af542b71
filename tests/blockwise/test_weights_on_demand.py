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


@pytest.mark.parametrize("big", [1e9, 1e12])
def test_a_row_masked_by_a_large_finite_value_sums_to_one(big, monkeypatch):
    # weights were exp(score − lse): with every score of a row near −1e9, lse = max + log Σ lost
    # its log Σ to float32 rounding, and the row's 90 weights were 1 each (the row summed to 90);
    # attention(return_weights=True) on an input too long for the steps wrote the same weights
    # and an output off by up to 2.4. Reference: the masked float32 scores, softmax in float64.
    import attnscope.kernels.memory as memory
    from attnscope import attention
    qf, kf, vf = q.float(), k.float(), torch.randn(B, H, S, 3, generator=g, dtype=torch.float64).float()
    add = torch.zeros(L, S)
    add[5] = -big  # row 5 blocked everywhere by a finite value (every key alike)
    add[7, :10] = -big
    s32 = (qf @ kf.transpose(-1, -2)) * D ** -0.5 + add  # the masked scores as float32 holds them
    ref = torch.softmax(s32.double(), dim=-1)  # (B, H, L, S)
    got = attention_weights(qf, kf, add, block_size=16)
    np.testing.assert_allclose(got.double().numpy(), ref.numpy(), atol=1e-6, rtol=0)
    monkeypatch.setattr(memory, "dense_fits", lambda n_bytes, device: False)  # the weights on demand
    out, w = attention(qf, kf, vf, add, return_weights=True)
    np.testing.assert_allclose(w.double().numpy(), ref.numpy(), atol=1e-6, rtol=0)
    np.testing.assert_allclose(out.double().numpy(), (ref @ vf.double()).numpy(), atol=1e-5, rtol=0)
