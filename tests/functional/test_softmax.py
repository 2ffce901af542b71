import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope import softmax


def test_matches_definition_float64():
    x = torch.randn(5, 7, dtype=torch.float64)
    expected = np.exp(x.numpy()) / np.exp(x.numpy()).sum(-1, keepdims=True)
    np.testing.assert_allclose(softmax(x).numpy(), expected, rtol=1e-14, atol=0)


def test_large_inputs_do_not_overflow():
    # exp(1000) overflows float64; subtracting the max is what keeps this finite.
    x = torch.tensor([1000.0, 1001.0, 999.0], dtype=torch.float64)
    expected = softmax(x - 1000.0)
    assert torch.isfinite(softmax(x)).all()
    torch.testing.assert_close(softmax(x), expected, rtol=1e-15, atol=0)


def test_article_example_unscaled_vs_scaled():
    # 000 article: softmax([10, 11, 9]) ≈ [0.245, 0.665, 0.090]
    p = softmax(torch.tensor([10.0, 11.0, 9.0], dtype=torch.float64))
    e = [math.exp(10), math.exp(11), math.exp(9)]
    torch.testing.assert_close(p, torch.tensor(e, dtype=torch.float64) / sum(e))
    assert [round(float(t), 3) for t in p] == [0.245, 0.665, 0.090]


def test_fully_masked_row_is_zero_not_nan():
    x = torch.tensor([[0.5, -float("inf"), 1.0], [-float("inf")] * 3])
    p = softmax(x)
    assert not torch.isnan(p).any()
    assert torch.equal(p[1], torch.zeros(3))
    torch.testing.assert_close(p[0].sum(), torch.tensor(1.0))
    assert p[0, 1] == 0


def test_gradient_of_fully_masked_row_is_finite():
    x = torch.tensor([[-float("inf")] * 3, [1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    (softmax(x) * torch.arange(3.0, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(x.grad).all()
    assert torch.equal(x.grad[0], torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_dtypes_match_torch_softmax(dtype):
    x = (torch.randn(4, 33) * 8).to(dtype)
    p = softmax(x, dim=-1)
    assert p.dtype == dtype
    ref = torch.softmax(x.double(), dim=-1)
    tol = {torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float32: 1e-6, torch.float64: 1e-14}[dtype]
    torch.testing.assert_close(p.double(), ref, rtol=0, atol=tol)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_dim_argument(dim):
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(softmax(x, dim=dim), torch.softmax(x, dim=dim), rtol=1e-14, atol=1e-15)


def test_log_softmax_consistent():
    x = torch.randn(3, 6, dtype=torch.float64)
    torch.testing.assert_close(attnscope.log_softmax(x), torch.log_softmax(x, -1), rtol=1e-14, atol=1e-14)
    masked = torch.full((2,), -float("inf"))
    assert torch.isneginf(attnscope.log_softmax(masked)).all()


def test_rejects_integer_input():
    with pytest.raises(ValueError, match="floating-point"):
        softmax(torch.tensor([1, 2, 3]))
