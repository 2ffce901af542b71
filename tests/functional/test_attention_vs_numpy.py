"""Every scoring against a float64 NumPy re-computation written from the papers' formulas."""

import numpy as np
import pytest
import torch

from attnscope import attention, attention_steps
from attnscope.functional import DEFAULT_COSINE_TEMPERATURE
from tests.blockwise.reference import np_prepare
from tests.functional.reference import bool_to_additive, np_attention

FACTORS = {
    "scaled": lambda d: 1 / np.sqrt(d),
    "unscaled": lambda d: 1.0,
    "inv_d": lambda d: 1 / d,
    "cosine": lambda d: 1 / DEFAULT_COSINE_TEMPERATURE,
    "qknorm": lambda d: 1 / np.sqrt(d),
}


@pytest.mark.parametrize("scoring", list(FACTORS))
@pytest.mark.parametrize("masked", [False, True])
def test_scorings_match_numpy(scoring, masked):
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3, 6, 16)), rng.normal(size=(2, 3, 7, 16)), rng.normal(size=(2, 3, 7, 5))
    mask = rng.random((6, 7)) > 0.4 if masked else None
    qn, kn = np_prepare(q, k, scoring)
    ref_out, ref_w = np_attention(qn, kn, v, None if mask is None else bool_to_additive(mask), FACTORS[scoring](16))
    t = lambda a: torch.from_numpy(a)
    out, w = attention(t(q), t(k), t(v), None if mask is None else t(mask), scoring=scoring, return_weights=True)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-11, atol=1e-13)
    # The fast route (no weights) must agree with the explicit one.
    np.testing.assert_allclose(attention(t(q), t(k), t(v), None if mask is None else t(mask), scoring=scoring).numpy(),
                               ref_out, rtol=1e-11, atol=1e-13)


def test_cosine_temperature_tensor_per_head():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(1, 2, 4, 8)), rng.normal(size=(1, 2, 4, 8)), rng.normal(size=(1, 2, 4, 8))
    tau = np.array([0.05, 0.5]).reshape(2, 1, 1)
    qn, kn = np_prepare(q, k, "cosine")
    cos = np.einsum("bhld,bhsd->bhls", qn, kn)
    assert np.abs(cos).max() <= 1 + 1e-12
    w = np.exp(cos / tau - (cos / tau).max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    t = torch.from_numpy
    _, got = attention(t(q), t(k), t(v), scoring="cosine", temperature=t(tau), return_weights=True)
    np.testing.assert_allclose(got.numpy(), w, rtol=1e-12, atol=1e-14)


def test_steps_are_consistent():
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(3, 1, 5, 4, dtype=torch.float64, generator=g).unbind(0)
    s = attention_steps(q, k, v, causal=True)
    torch.testing.assert_close(s["scores"], q @ k.transpose(-1, -2))
    torch.testing.assert_close(s["scaled"], s["scores"] / 2.0)  # √4 = 2
    assert torch.isneginf(s["masked"][0].triu(1)[torch.ones(5, 5).triu(1).bool()]).all()
    torch.testing.assert_close(s["weights"].sum(-1), torch.ones(1, 5, dtype=torch.float64))
    torch.testing.assert_close(s["out"], s["weights"] @ v)


def test_scale_overrides_every_scoring():
    q, k, v = torch.randn(3, 4, 6, dtype=torch.float64).unbind(0)
    for scoring in FACTORS:
        s = attention_steps(q, k, v, scoring=scoring, scale=0.25)
        torch.testing.assert_close(s["scaled"], s["scores"] * 0.25)
