"""Blockwise attention equals dense attention for every scoring and mask type (≤ 1e-5 in float32,
≤ 1e-12 in float64), with tiles that do not divide L or S, L ≠ S, d_v ≠ d_k and broadcast leading
dims — by both kernels: PyTorch's fused kernel with log-sum-exp and attnscope's online softmax."""

import numpy as np
import pytest
import torch

from attnscope.blockwise import blockwise_attention
from attnscope.functional import SCORINGS
from tests.blockwise.reference import np_attention

B, H, L, S, D, DV = 2, 3, 75, 133, 16, 12


def make_mask(kind, g):
    if kind == "none":
        return None
    if kind == "bool":  # (B, 1, L, S): per sample, shared by the heads
        m = torch.rand(B, 1, L, S, generator=g) > 0.3
        m[0, 0, 4] = False  # one query that may see nothing
        return m
    if kind == "float":  # (H, L, S) additive, with a −inf row
        m = torch.randn(H, L, S, generator=g, dtype=torch.float64)
        m[1, 9] = float("-inf")
        return m
    if kind == "padding":  # key padding as attention() takes it: (B, 1, 1, S) bool
        keep = torch.ones(B, 1, 1, S, dtype=torch.bool)
        keep[1, ..., 100:] = False
        return keep
    raise ValueError(kind)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("scoring", SCORINGS)
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "padding"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_matches_reference(dtype, tol, scoring, mask_kind, causal, kernel):
    g = torch.Generator().manual_seed(hash((scoring, mask_kind, causal)) % 2**31)
    q = torch.randn(B, H, L, D, generator=g, dtype=dtype)
    k = torch.randn(B, H, S, D, generator=g, dtype=dtype)
    v = torch.randn(B, H, S, DV, generator=g, dtype=dtype)
    mask = make_mask(mask_kind, g)
    if mask is not None and mask.is_floating_point():
        mask = mask.to(dtype)
    ref_out, _, ref_lse = np_attention(q, k, v, mask, causal=causal, scoring=scoring)
    out, lse = blockwise_attention(q, k, v, mask, causal=causal, scoring=scoring, block_size=(32, 48),
                                   return_lse=True, kernel=kernel)
    assert out.dtype == dtype and out.shape == (B, H, L, DV) and lse.shape == (B, H, L)
    np.testing.assert_allclose(out.double().numpy(), ref_out, atol=tol, rtol=0)
    dead = np.isneginf(ref_lse)
    np.testing.assert_array_equal(torch.isneginf(lse).numpy(), dead)
    np.testing.assert_allclose(lse.double().numpy()[~dead], ref_lse[~dead], atol=tol * 10, rtol=tol)


@pytest.mark.parametrize("kernel", ["auto", "online"])
def test_tensor_temperature_per_head_and_per_key(kernel):
    """Cosine with τ per head (folded into q) and τ varying over keys (multiplies each tile;
    the fused kernel cannot form it, so "auto" runs the online softmax there)."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(B, H, n, D, generator=g, dtype=torch.float64) for n in (L, S, S))
    for tau in (torch.rand(H, 1, 1, generator=g, dtype=torch.float64) + 0.05,
                torch.rand(H, 1, S, generator=g, dtype=torch.float64) + 0.05):
        ref_out, _, ref_lse = np_attention(q, k, v, scoring="cosine", temperature=tau)
        out, lse = blockwise_attention(q, k, v, scoring="cosine", temperature=tau, block_size=40, return_lse=True,
                                       kernel=kernel)
        np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-12)
        np.testing.assert_allclose(lse.numpy(), ref_lse, atol=1e-12)


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_broadcast_leading_dims_and_scale(kernel):
    """k, v shared by the heads (B, 1, S, d) and an explicit scale, as attention() allows."""
    g = torch.Generator().manual_seed(2)
    q = torch.randn(B, H, L, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, 1, S, D, generator=g, dtype=torch.float64)
    v = torch.randn(1, 1, S, DV, generator=g, dtype=torch.float64)
    ref_out, _, _ = np_attention(q * 0.3 * np.sqrt(D), k, v)  # scale 0.3 = (0.3·√d)/√d
    out = blockwise_attention(q, k, v, scale=0.3, block_size=64, kernel=kernel)
    np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-12)


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_default_blocks_long_sequence_float32(kernel):
    """Default 256 × 256 tiles over a sequence of several tiles, against SDPA (float32)."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, 1000, 64, generator=g) for _ in range(3))
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
        got = blockwise_attention(q, k, v, causal=causal, kernel=kernel)
        assert (got.double() - ref).abs().max().item() <= 1e-5
