"""attnscope.reference, the float64 NumPy twin of every step, against torch float64 (torch's own
ops, not attnscope's kernels): the one test that lets every application trust it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope import reference as R
from attnscope.errors import NonFiniteError
from attnscope.positions import sinusoidal_positions, sinusoidal_table_np

g = torch.Generator().manual_seed(7)
q, k, v = (torch.randn(2, 3, 6, 8, generator=g, dtype=torch.float64) for _ in range(3))
k, v = k[..., :5, :], v[..., :5, :4]  # S = 5, d_v = 4
mask = torch.rand(2, 1, 6, 5, generator=g) > 0.3
mask[0, 0, 2] = False  # a query that sees nothing


def torch_steps(q, k, v, mask, causal, scoring, temperature=0.1):
    if scoring == "cosine":
        q, k, f = F.normalize(q, dim=-1, eps=1e-6), F.normalize(k, dim=-1, eps=1e-6), 1 / temperature
    elif scoring == "qknorm":
        q, k, f = F.layer_norm(q, (8,), eps=1e-6), F.layer_norm(k, (8,), eps=1e-6), 8 ** -0.5
    else:
        f = {"scaled": 8 ** -0.5, "unscaled": 1.0, "inv_d": 1 / 8}[scoring]
    scores = q @ k.transpose(-1, -2)
    scaled = scores * f
    allowed = mask if not causal else mask & torch.ones(6, 5, dtype=torch.bool).tril()
    masked = scaled.masked_fill(~allowed, float("-inf"))
    alive = allowed.any(-1, keepdim=True)
    weights = torch.softmax(masked.masked_fill(~alive, 0.0), -1) * alive
    lse = torch.logsumexp(masked, -1)
    return {"q": q, "k": k, "scores": scores, "scaled": scaled, "masked": masked, "weights": weights,
            "out": weights @ v, "lse": lse}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "cosine", "qknorm"])
def test_attention_steps(scoring, causal):
    got = R.attention_steps(q, k, v, mask.numpy(), causal=causal, scoring=scoring)
    want = torch_steps(q, k, v, mask, causal, scoring)
    for name, t in want.items():
        np.testing.assert_allclose(got[name], t.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_softmax_log_softmax_logsumexp():
    x = torch.randn(4, 7, generator=g, dtype=torch.float64) * 30
    x[1] = float("-inf")
    x[2, :3] = float("-inf")
    w = R.softmax(x)
    np.testing.assert_allclose(w[[0, 2, 3]], torch.softmax(x[[0, 2, 3]], -1).numpy(), rtol=1e-13, atol=0)
    assert np.array_equal(w[1], np.zeros(7))
    np.testing.assert_allclose(R.log_softmax(x)[[0, 2, 3]], torch.log_softmax(x[[0, 2, 3]], -1).numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(R.logsumexp(x), torch.logsumexp(x, -1).numpy(), rtol=1e-13)
    np.testing.assert_allclose(R.softmax(np.array([1000.0, 1001.0])), [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-15)


def test_layer_norm_linear_gelu_relu():
    x = torch.randn(3, 8, generator=g, dtype=torch.float64)
    w, b = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)
    np.testing.assert_allclose(R.layer_norm(x, w, b, eps=1e-12), F.layer_norm(x, (8,), w, b, eps=1e-12).numpy(), rtol=1e-12, atol=1e-13)
    W, c = torch.randn(5, 8, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    np.testing.assert_allclose(R.linear(x, W, c), F.linear(x, W, c).numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(R.gelu(x), F.gelu(x).numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(R.gelu(x, "tanh"), F.gelu(x, approximate="tanh").numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(R.relu(x), F.relu(x).numpy())


def test_heads_and_positions():
    x = torch.randn(2, 6, 12, generator=g, dtype=torch.float64)
    heads = x.view(2, 6, 3, 4).transpose(1, 2)  # (B, H, L, d_head), as MultiHeadAttention.split_heads
    np.testing.assert_array_equal(R.split_heads(x, 3), heads.numpy())
    np.testing.assert_array_equal(R.merge_heads(heads), x.numpy())
    np.testing.assert_allclose(sinusoidal_table_np(50, 16), sinusoidal_positions(50, 16, dtype=torch.float64).numpy(),
                               rtol=0, atol=1e-15)


def test_factor_and_check_finite():
    assert R.score_factor("scaled", 64) == 0.125 and R.score_factor("cosine", 64, temperature=0.5) == 2.0
    assert R.score_factor("inv_d", 64, scale=0.3) == 0.3
    np.testing.assert_allclose(R.score_factor("cosine", 8, temperature=np.array([0.5, 0.25])), [2.0, 4.0])
    R.check_finite("masked", np.array([0.0, -np.inf]), allow_neg_inf=True)
    with pytest.raises(NonFiniteError, match=r"^scaled has non-finite values \(\+inf ×1\) in shape \(2\), first at index \(1,\)"):
        R.check_finite("scaled", [1.0, np.inf])
