"""The softmax Jacobian diag(p) − ppᵀ and its closed-form norm, against autograd and exact decimals."""

import math
from decimal import Decimal, getcontext

import pytest
import torch

from attnscope.experiments.saturation import entropy, jacobian_frobenius, softmax_jacobian, uniform_limits
from attnscope.functional import softmax


@pytest.mark.parametrize("S,scale", [(2, 1.0), (5, 0.3), (16, 1.0), (16, 8.0), (33, 30.0)])
def test_jacobian_equals_autograd_of_attnscope_softmax(S, scale):
    g = torch.Generator().manual_seed(S)
    for _ in range(3):
        s = torch.randn(S, generator=g, dtype=torch.float64) * scale
        J_ref = torch.autograd.functional.jacobian(lambda x: softmax(x, dim=-1), s)  # (S, S)
        p = softmax(s, dim=-1)
        torch.testing.assert_close(softmax_jacobian(p), J_ref, rtol=1e-12, atol=1e-15)
        fro = torch.linalg.matrix_norm(J_ref, ord="fro")
        torch.testing.assert_close(jacobian_frobenius(p), fro, rtol=1e-9, atol=1e-15)


def _exact_norm(scores):
    """‖diag(p) − ppᵀ‖_F from the scores in 60-digit decimal arithmetic (no torch)."""
    getcontext().prec = 60
    s = [Decimal(repr(float(x))) for x in scores]
    top = max(s)
    e = [(x - top).exp() for x in s]
    z = sum(e)
    p = [x / z for x in e]
    total = sum((p[i] * ((1 if i == j else 0) - p[j])) ** 2 for i in range(len(p)) for j in range(len(p)))
    return float(total.sqrt())


@pytest.mark.parametrize("scale", [0.5, 3.0, 10.0, 30.0, 100.0])
def test_frobenius_norm_is_accurate_even_for_saturated_rows(scale):
    # The naive Σp² − 2Σp³ + (Σp²)² cancels to noise here; norms down to ~1e-40 must stay exact.
    g = torch.Generator().manual_seed(int(scale * 10))
    for _ in range(3):
        s = torch.randn(12, generator=g, dtype=torch.float64) * scale
        got = float(jacobian_frobenius(softmax(s, dim=-1)))
        assert got == pytest.approx(_exact_norm(s.tolist()), rel=1e-12)


def test_batched_shapes():
    p = softmax(torch.randn(4, 3, 7, dtype=torch.float64), dim=-1)
    assert softmax_jacobian(p).shape == (4, 3, 7, 7)
    assert jacobian_frobenius(p).shape == (4, 3)
    assert entropy(p).shape == (4, 3)


def test_uniform_and_one_hot_limits():
    S = 16
    p = softmax(torch.zeros(S, dtype=torch.float64), dim=-1)
    u = uniform_limits(S)
    assert float(p.max()) == pytest.approx(u["max_weight"], rel=1e-15)
    assert float(entropy(p)) == pytest.approx(u["entropy"], rel=1e-14)
    assert float(jacobian_frobenius(p)) == pytest.approx(u["jacobian"], rel=1e-12)
    assert float(torch.linalg.matrix_norm(softmax_jacobian(p))) == pytest.approx(math.sqrt(S - 1) / S, rel=1e-12)
    one_hot = torch.zeros(S, dtype=torch.float64)
    one_hot[3] = 1.0
    assert float(entropy(one_hot)) == 0.0
    assert float(jacobian_frobenius(one_hot)) == 0.0


def test_two_way_softmax_norm_is_twice_p_times_one_minus_p():
    # For p = (a, 1 − a): J = a(1−a)·[[1, −1], [−1, 1]], ‖J‖_F = 2a(1 − a).
    for a in (0.5, 0.9, 1e-3):
        p = torch.tensor([a, 1 - a], dtype=torch.float64)
        assert float(jacobian_frobenius(p)) == pytest.approx(2 * a * (1 - a), rel=1e-9)
