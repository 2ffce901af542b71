"""Half-precision q and k are normalised (cosine, qknorm) in float32 and rounded once to their
dtype: each prepared entry is within half a unit in the dtype's last place of the float64 value
(plus float32's own rounding), which cosine's norm and division computed in the dtype are not
(qknorm's F.layer_norm already computed in float32 inside)."""

from __future__ import annotations

import pytest
import torch

from attnscope.scorings import get_scoring


def units_off(got: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype) -> float:
    """max |got − exact| in units of the dtype's last place at each exact value, less float32's
    rounding (8 of its units at the row's largest value: centring cancels), so that a correctly
    rounded result gives ≤ 0.5."""
    _, e = torch.frexp(exact)  # |x| = m · 2^e, m ∈ [0.5, 1): one unit is 2^(e − 1) · eps
    unit = torch.ldexp(torch.ones_like(exact), e - 1).clamp_min(torch.finfo(dtype).smallest_normal)  # subnormals
    slack = 8 * exact.abs().amax(-1, keepdim=True) * torch.finfo(torch.float32).eps
    over = ((got.double() - exact).abs() - slack).clamp_min(0.0)
    return float((over / (unit * torch.finfo(dtype).eps)).max())


@pytest.mark.parametrize("scoring", ["cosine", "qknorm"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_are_prepared_in_float32_and_rounded_once(scoring, dtype):
    g = torch.Generator().manual_seed(3)
    q, k = (torch.randn(2, 3, 40, 32, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    sc = get_scoring(scoring)
    q2, k2 = sc.prepare_qk(q, k)
    assert q2.dtype == dtype and k2.dtype == dtype
    # the float64 twin on the same (rounded) inputs: NumPy, another implementation
    q64, k64 = (torch.from_numpy(a) for a in sc.prepare_qk_np(q.double().numpy(), k.double().numpy()))
    assert units_off(q2, q64, dtype) <= 0.5 and units_off(k2, k64, dtype) <= 0.5
    if scoring == "cosine":  # a norm and a division each rounded in the dtype: more than half a unit off
        q1, _ = sc.prepare(q, k, 1e-6)
        assert units_off(q1, q64, dtype) > 0.5
    # gradients still reach the half-precision inputs
    qg, kg = q.clone().requires_grad_(), k.clone().requires_grad_()
    a, b = sc.prepare_qk(qg, kg)
    (a.float().sum() + b.float().square().sum()).backward()
    assert qg.grad is not None and qg.grad.dtype == dtype and torch.isfinite(kg.grad.float()).all()
