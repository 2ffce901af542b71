"""A non-"scaled" module without weights runs the fused kernel on its prepared q, k (no L×S
matrix), short or long, and gives the dense path's output and gradients."""

import pytest
import torch

import attnscope.kernels.blockwise as blockwise
import attnscope.kernels.fused as fused
import attnscope.modules.attention as attention_module
from attnscope import MultiHeadAttention


@pytest.mark.parametrize("scoring", ["cosine", "inv_d", "unscaled"])
def test_long_input_matches_dense_path(scoring, monkeypatch):
    torch.manual_seed(0)
    m = MultiHeadAttention(16, 2, scoring=scoring).double()
    x = torch.randn(1, 1100, 16, dtype=torch.float64)  # L·S = 1.21M scores per head ≥ the threshold
    kpm = torch.zeros(1, 1100, dtype=torch.bool)
    kpm[0, -7:] = True

    calls = []
    real = fused.sdpa
    monkeypatch.setattr(fused, "sdpa", lambda *a, **k: calls.append(1) or real(*a, **k))

    xa = x.clone().requires_grad_()
    fast = m(xa, key_padding_mask=kpm, causal=True)
    assert calls, "the fused kernel was not used"
    (fast * torch.linspace(-1, 1, 16, dtype=torch.float64)).sum().backward()
    grads_fast = [xa.grad] + [p.grad.clone() for p in m.parameters()]

    m.zero_grad()
    xb = x.clone().requires_grad_()
    dense, _ = m(xb, key_padding_mask=kpm, causal=True, need_weights=True)
    (dense * torch.linspace(-1, 1, 16, dtype=torch.float64)).sum().backward()
    grads_dense = [xb.grad] + [p.grad for p in m.parameters()]

    torch.testing.assert_close(fast, dense, rtol=1e-10, atol=1e-12)
    for a, b in zip(grads_fast, grads_dense):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_short_inputs_take_the_fused_kernel_too(monkeypatch):
    calls, fused_calls = [], []
    real = fused.sdpa
    monkeypatch.setattr(blockwise, "run", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(fused, "sdpa", lambda *a, **k: fused_calls.append(1) or real(*a, **k))
    m = MultiHeadAttention(16, 2, scoring="cosine")
    m(torch.randn(2, 64, 16))
    assert not calls and fused_calls == [1]
    assert 64 * 64 < attention_module.BLOCKWISE_MIN_SCORES
