"""Gradients of the explicit path, checked numerically in float64."""

import pytest
import torch
from torch.autograd import gradcheck

from attnscope import attention, softmax


@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "cosine", "qknorm"])
@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_weights_path(scoring, causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, dtype=torch.float64, generator=g).requires_grad_() for _ in range(3))
    mask = torch.tensor([True, True, False, True])

    def f(q, k, v):
        out, w = attention(q, k, v, mask, causal=causal, scoring=scoring, return_weights=True)
        return out, w

    assert gradcheck(f, (q, k, v), eps=1e-6, atol=1e-7)


def test_gradcheck_softmax_with_masked_entries():
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    mask = torch.zeros(3, 6, dtype=torch.float64)
    mask[0, 2:] = float("-inf")
    assert gradcheck(lambda x: softmax(x + mask), (x,), eps=1e-6, atol=1e-8)


def test_fast_and_explicit_gradients_agree():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 6, 8, dtype=torch.float64, generator=g) for _ in range(3))
    grads = []
    for return_weights in (False, True):
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        out = attention(qq, kk, vv, causal=True, return_weights=return_weights)
        out = out[0] if return_weights else out
        (out * torch.linspace(-1, 1, 8, dtype=torch.float64)).sum().backward()
        grads.append([t.grad for t in (qq, kk, vv)])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
