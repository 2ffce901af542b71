"""No keys (S = 0), no queries (L = 0, also L = S = 0) and d_k = 0 give the same result with and
without weights, on every path: output 0 where no key is visible, weights of shape (..., L, S),
and for d_k = 0 the scores of an empty dot product (0): every key weighs the same, as SDPA."""

import pytest
import torch
import torch.nn.functional as F

from attnscope import attention, attention_steps, log_softmax, softmax
from attnscope.blockwise import attention_lse, attention_weights, blockwise_attention

SHAPES = {"S=0": (4, 0, 8), "L=0": (0, 6, 8), "L=S=0": (0, 0, 8), "d=0": (4, 6, 0)}


@pytest.mark.parametrize("scoring", ["scaled", "cosine", "qknorm", "inv_d"])
@pytest.mark.parametrize("case", list(SHAPES))
def test_same_result_with_and_without_weights(case, scoring):
    L, S, d = SHAPES[case]
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(2, 3, L, d, generator=g), torch.randn(2, 3, S, d, generator=g), torch.randn(2, 3, S, 5, generator=g)
    out = attention(q, k, v, scoring=scoring)
    out_w, w = attention(q, k, v, scoring=scoring, return_weights=True)
    steps = attention_steps(q, k, v, scoring=scoring)
    bw = blockwise_attention(q, k, v, scoring=scoring)
    assert out.shape == out_w.shape == steps["out"].shape == bw.shape == (2, 3, L, 5)
    assert w.shape == steps["weights"].shape == attention_weights(q, k, scoring=scoring).shape == (2, 3, L, S)
    for t in (out_w, steps["out"], bw):
        torch.testing.assert_close(t, out, rtol=0, atol=1e-6)
    expected = torch.zeros(2, 3, L, 5) if S == 0 else v.mean(-2, keepdim=True).expand(2, 3, L, 5)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)  # d = 0: uniform weights
    if S and L:
        torch.testing.assert_close(w, torch.full((2, 3, L, S), 1 / S))
    lse = attention_lse(q, k, scoring=scoring)
    assert lse.shape == (2, 3, L) and (S > 0 or torch.isneginf(lse).all())


def test_sdpa_agrees_on_d_zero():
    q, k, v = torch.randn(1, 4, 0), torch.randn(1, 6, 0), torch.randn(1, 6, 3)
    torch.testing.assert_close(attention(q, k, v, return_weights=True)[0], F.scaled_dot_product_attention(q, k, v))


def test_softmax_of_an_empty_dim():
    for f in (softmax, log_softmax):
        assert f(torch.randn(3, 0)).shape == (3, 0)
        assert f(torch.randn(0, 4)).shape == (0, 4)
