"""Without weights every scoring is the fused kernel on its prepared inputs: the same numbers as
torch's SDPA called on q', k' with the scoring's factor as ``scale=``, and within float32
rounding of the float64 explicit steps."""

import pytest
import torch
import torch.nn.functional as F

from attnscope import SCORINGS, attention
from attnscope import reference as R

g = torch.Generator().manual_seed(3)
q, k, v = (torch.randn(2, 3, 40, 16, generator=g) for _ in range(3))
mask = torch.rand(2, 1, 40, 40, generator=g) > 0.2


def prepared_sdpa(scoring, mask, causal, temperature=None):
    """SDPA on the scoring's prepared q, k — written here from the scoring's definition."""
    if scoring == "cosine":
        qp, kp = F.normalize(q, dim=-1, eps=1e-6), F.normalize(k, dim=-1, eps=1e-6)
        tau = 0.1 if temperature is None else temperature
        qp, scale = (qp / tau, 1.0) if isinstance(tau, torch.Tensor) else (qp, 1 / tau)
    elif scoring == "qknorm":
        qp, kp, scale = F.layer_norm(q, (16,), eps=1e-6), F.layer_norm(k, (16,), eps=1e-6), 16 ** -0.5
    else:
        qp, kp, scale = q, k, {"scaled": 16 ** -0.5, "unscaled": 1.0, "inv_d": 1 / 16}[scoring]
    if causal:
        mask = mask & torch.ones(40, 40, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(qp, kp, v, attn_mask=mask, scale=scale)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "cosine", "qknorm"])
def test_fused_equals_sdpa_on_prepared_inputs(scoring, causal):
    assert scoring in SCORINGS
    got = attention(q, k, v, mask, causal=causal, scoring=scoring)
    torch.testing.assert_close(got, prepared_sdpa(scoring, mask, causal), rtol=0, atol=1e-6)
    ref, _ = R.attention(q, k, v, mask.numpy(), causal=causal, scoring=scoring)
    assert abs(got.double().numpy() - ref).max() <= 2e-5


def test_tensor_temperature_per_head_is_folded_into_q():
    tau = torch.tensor([0.05, 0.1, 0.3]).view(3, 1, 1)  # (H, 1, 1)
    got = attention(q, k, v, mask, scoring="cosine", temperature=tau)
    torch.testing.assert_close(got, prepared_sdpa("cosine", mask, False, tau), rtol=0, atol=1e-6)
