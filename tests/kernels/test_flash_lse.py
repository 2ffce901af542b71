"""The log-sum-exp from PyTorch's CPU flash kernel and from attnscope's own online softmax agree
with each other and with the float64 reference: masks of every shape, causal, rows that see no
key (lse −∞, out 0), every scoring, bfloat16."""

import numpy as np
import pytest
import torch

import attnscope.kernels.fused as fused
from attnscope import reference as R
from attnscope.blockwise import attention_lse, attention_weights, blockwise_attention

g = torch.Generator().manual_seed(11)
q, k, v = (torch.randn(2, 3, 70, 16, generator=g) for _ in range(3))
MASKS = {
    "none": None,
    "keys": torch.rand(2, 1, 1, 70, generator=g) > 0.3,
    "full": torch.rand(2, 3, 70, 70, generator=g) > 0.5,
    "float": torch.randn(70, 70, generator=g),
}
dead = MASKS["full"].clone()
dead[0, 1, 5] = False  # query 5 of head 1 sees nothing
MASKS["dead_row"] = dead


@pytest.fixture(params=["flash", "pure"])
def kernel(request, monkeypatch):
    if request.param == "pure":
        monkeypatch.setattr(fused, "flash_lse_ok", lambda *a: False)
    calls = []
    real = fused.flash_lse
    monkeypatch.setattr(fused, "flash_lse", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    return request.param, calls


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", list(MASKS))
@pytest.mark.parametrize("scoring", ["scaled", "cosine", "qknorm"])
def test_lse_and_out_match_the_reference(kernel, scoring, mask_kind, causal):
    which, calls = kernel
    mask = MASKS[mask_kind]
    out, lse = blockwise_attention(q, k, v, mask, causal=causal, scoring=scoring, block_size=32, return_lse=True)
    assert bool(calls) == (which == "flash")
    m = None if mask is None else mask.numpy()
    ref = R.attention_steps(q, k, v, m, causal=causal, scoring=scoring)
    np.testing.assert_allclose(out.double().numpy(), ref["out"], rtol=0, atol=2e-5)
    assert np.array_equal(np.isneginf(lse.numpy()), np.isneginf(ref["lse"]))
    finite = np.isfinite(ref["lse"])
    np.testing.assert_allclose(lse.double().numpy()[finite], ref["lse"][finite], rtol=0, atol=2e-5)
    np.testing.assert_allclose(attention_lse(q, k, mask, causal=causal, scoring=scoring).double().numpy()[finite],
                               ref["lse"][finite], rtol=0, atol=2e-5)
    w = attention_weights(q, k, mask, causal=causal, scoring=scoring, heads=[2, 1])
    np.testing.assert_allclose(w.double().numpy(), ref["weights"][:, [2, 1]], rtol=0, atol=2e-6)


def test_the_two_kernels_agree_in_bfloat16(monkeypatch):
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    flash = blockwise_attention(qb, kb, vb, MASKS["keys"], return_lse=True)
    monkeypatch.setattr(fused, "flash_lse_ok", lambda *a: False)
    pure = blockwise_attention(qb, kb, vb, MASKS["keys"], return_lse=True)
    assert flash[1].dtype == pure[1].dtype == torch.float32
    torch.testing.assert_close(flash[1], pure[1], rtol=0, atol=2e-2)
    torch.testing.assert_close(flash[0].float(), pure[0].float(), rtol=0, atol=3e-2)


def test_flash_is_not_used_where_it_cannot_serve():
    assert not fused.flash_lse_ok(q[..., :0, :], k, v)  # L = 0 (the kernel would crash)
    assert not fused.flash_lse_ok(q, k[..., :0, :], v[..., :0, :])  # S = 0
    assert not fused.flash_lse_ok(q[..., :0], k[..., :0], v)  # d_k = 0
    assert not fused.flash_lse_ok(q, k, v, 0.1)  # dropout
    assert not fused.flash_lse_ok(q.long(), k.long(), v.long())
    assert not fused.flash_lse_ok(q, k.double(), v)  # mixed dtypes
    assert not fused.flash_lse_ok(q, k[:1, :2], v[:1, :2])  # leading dims that do not broadcast
    # what it takes: 3-D or 5-D (flattened), d_v ≠ d_k (padded), broadcast leading dims, gradients
    assert fused.flash_lse_ok(q[0], k[0], v[0]) and fused.flash_lse_ok(q[None], k[None], v[None])
    assert fused.flash_lse_ok(q, k, v[..., :8]) and fused.flash_lse_ok(q, k[:1], v[:1])
    assert fused.flash_lse_ok(q.requires_grad_(), k, v) and fused.flash_lse_ok(q.half(), k.half(), v.half())
    q.requires_grad_(False)


def test_causal_key_mask_whose_first_keys_are_blocked(kernel):
    """Queries 0..2 see no key when keys 0..2 are padding: lse −∞ and out 0 from both kernels."""
    keys = torch.ones(2, 1, 1, 70, dtype=torch.bool)
    keys[:, :, :, :3] = False
    out, lse = blockwise_attention(q, k, v, keys, causal=True, return_lse=True)
    assert torch.isneginf(lse[..., :3]).all() and torch.isfinite(lse[..., 3:]).all()
    assert torch.equal(out[..., :3, :], torch.zeros_like(out[..., :3, :]))
    ref = R.attention_steps(q, k, v, keys.numpy(), causal=True)
    np.testing.assert_allclose(out.double().numpy(), ref["out"], rtol=0, atol=2e-5)
