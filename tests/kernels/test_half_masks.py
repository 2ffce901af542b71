"""A float32 additive mask on half-precision attention: its large finite values stay finite.

``mask.to(float16)`` turned a "blocked" −1e9 into −inf (a row blocked everywhere came out as zeros,
where float32 gives a finite average) and +1e9 into +inf (that row's softmax, and its output, NaN).
The reference is the float64 softmax of the float64 scores plus the mask; a row blocked everywhere
has none that every dtype shares (in float32 and bfloat16 s − 1e9 rounds every score alike, while
float64 keeps softmax(s)), so it is only asked to be finite."""

from __future__ import annotations

import pytest
import torch

from attnscope.kernels.steps import attend


def _reference(q, k, v, mask):
    s = q.double() @ k.double().transpose(-1, -2) / q.shape[-1] ** 0.5 + mask.double()  # (B, H, L, S)
    return torch.softmax(s, dim=-1) @ v.double()  # (B, H, L, d_v)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("need_weights", [False, True])  # the fused path, the explicit steps
def test_large_finite_mask_values_stay_finite_in_half_precision(dtype, need_weights):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g).to(dtype) for _ in range(3))  # (B, H, L, d): exact in dtype
    mask = torch.zeros(4, 4)
    mask[0, :] = -1e9        # a row blocked everywhere: softmax(s − 1e9) = softmax(s)
    mask[1, 2:] = -1e9       # two keys blocked
    mask[2, 1] = 1e9         # one key forced
    want = _reference(q, k, v, mask)  # (1, 2, 4, 8)
    z, w = attend(q, k, v, mask, need_weights=need_weights)
    assert z.dtype == dtype and torch.isfinite(z).all()
    err = (z.double() - want)[..., 1:, :].abs().max()
    assert err <= 8 * torch.finfo(dtype).eps, float(err)
    if need_weights:
        assert torch.isfinite(w).all() and (w[..., 1, 2:] == 0).all() and (w[..., 2, 1] == 1).all()


def test_minus_inf_still_blocks_and_an_all_blocked_row_is_still_empty():
    q = k = v = torch.ones(1, 1, 2, 4, dtype=torch.float16)
    mask = torch.tensor([[0.0, float("-inf")], [float("-inf"), float("-inf")]])
    z, w = attend(q, k, v, mask, need_weights=True)
    assert (w[0, 0, 0] == torch.tensor([1.0, 0.0], dtype=torch.float16)).all()
    assert (z[0, 0, 1] == 0).all() and (w[0, 0, 1] == 0).all()  # no key to attend: zeros, as before
