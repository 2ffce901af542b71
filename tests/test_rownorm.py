"""The fast row normalisations equal the textbook forms: values and gradients against F.normalize /
F.layer_norm and plain float64 arithmetic, first and second derivatives by finite differences,
clamped (zero) rows, empty rows, batched (vmap) use and every float dtype."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope.rownorm import layer_norm_rows, unit_rows

EPS = 1e-6


def _rows(*shape, dtype=torch.float64, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _unit_by_hand(x: np.ndarray, eps: float) -> np.ndarray:
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx]
        out[idx] = row / max(math.sqrt(sum(float(v) * float(v) for v in row)), eps)
    return out


def _layer_norm_by_hand(x: np.ndarray, eps: float) -> np.ndarray:
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        row = [float(v) for v in x[idx]]
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        out[idx] = [(v - mean) / math.sqrt(var + eps) for v in row]
    return out


def test_unit_rows_values_equal_plain_arithmetic_and_f_normalize():
    x = _rows(2, 3, 5, 7)
    x[0, 1, 2] = 0.0  # a zero row: clamped at ε, stays 0
    x[1, 0, 4] *= 1e-9  # a row shorter than ε: divided by ε
    got = unit_rows(x, EPS)
    np.testing.assert_allclose(got.numpy(), _unit_by_hand(x.numpy(), EPS), rtol=1e-14, atol=1e-300)
    assert torch.equal(got, F.normalize(x, dim=-1, eps=EPS))  # the same bits
    assert torch.equal(got[0, 1, 2], torch.zeros(7, dtype=torch.float64))


def test_layer_norm_rows_values_equal_plain_arithmetic_and_f_layer_norm():
    x = _rows(2, 3, 5, 8) * 3 + 1
    got = layer_norm_rows(x, EPS)
    np.testing.assert_allclose(got.numpy(), _layer_norm_by_hand(x.numpy(), EPS), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got, F.layer_norm(x, (8,), eps=EPS), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_rows_match_torch_to_their_rounding(dtype):
    x = _rows(3, 16, 64, dtype=torch.float32).to(dtype)
    for ours, theirs in ((unit_rows(x, EPS), F.normalize(x, dim=-1, eps=EPS)),
                         (layer_norm_rows(x, EPS), F.layer_norm(x, (64,), eps=EPS))):
        assert ours.dtype == dtype and ours.shape == x.shape
        exact = theirs.double()
        tol = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype] * 4
        assert (ours.double() - exact).abs().max().item() <= tol


def test_unit_rows_gradient_equals_f_normalize_gradient_including_clamped_rows():
    x = _rows(4, 6, 5)
    x[1, 2] = 0.0
    x[2, 3] *= 1e-8
    g = _rows(4, 6, 5, seed=1)
    a = x.clone().requires_grad_()
    unit_rows(a, EPS).backward(g)
    b = x.clone().requires_grad_()
    F.normalize(b, dim=-1, eps=EPS).backward(g)
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)
    # a clamped row: the denominator is the constant ε
    torch.testing.assert_close(a.grad[1, 2], g[1, 2] / EPS, rtol=1e-15, atol=0)


def test_unit_rows_first_and_second_derivatives_by_finite_differences():
    x = _rows(2, 3, 4).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: unit_rows(t, EPS), (x,))
    assert torch.autograd.gradgradcheck(lambda t: unit_rows(t, EPS), (x,))


def test_layer_norm_rows_derivatives_by_finite_differences():
    x = _rows(2, 3, 4).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: layer_norm_rows(t, EPS), (x,))


def test_unit_rows_under_torch_func_and_without_grad_equal_the_plain_call():
    x, g = _rows(5, 3, 4), _rows(5, 3, 4, seed=2)

    def vjp_of(f):
        return torch.func.vmap(torch.func.grad(lambda t, gg: (f(t) * gg).sum()))(x, g)

    torch.testing.assert_close(vjp_of(lambda t: unit_rows(t, EPS)), vjp_of(lambda t: F.normalize(t, dim=-1, eps=EPS)),
                               rtol=1e-12, atol=1e-12)
    with torch.no_grad():
        torch.testing.assert_close(unit_rows(x.clone().requires_grad_(), EPS), F.normalize(x, dim=-1, eps=EPS),
                                   rtol=1e-15, atol=0)


def test_empty_rows_and_empty_batches_keep_their_shape():
    for shape in [(2, 3, 0), (0, 4), (2, 0, 5)]:
        x = torch.zeros(shape)
        assert unit_rows(x, EPS).shape == x.shape
        assert layer_norm_rows(x, EPS).shape == x.shape
    x = torch.zeros(2, 0, 5, requires_grad=True)
    unit_rows(x, EPS).sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
