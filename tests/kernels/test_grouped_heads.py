"""The explicit weights path of grouped-query heads multiplies each k/v head once for the query
heads it serves (no repeated k, v): its weights and output against float64 maths with k and v
repeated by hand, and against SDPA."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnscope.kernels import dense
from attnscope.kernels.steps import attend


def _reference(q, k, v, causal, factor):
    g = q.shape[1] // k.shape[1]
    kk = k.double().repeat_interleave(g, dim=1)  # (B, H, S, d)
    vv = v.double().repeat_interleave(g, dim=1)
    s = q.double() @ kk.transpose(-2, -1) * factor  # (B, H, L, S)
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1 + S - L), float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w, w @ vv


@pytest.mark.parametrize("H,H_kv", [(4, 1), (6, 2), (9, 3)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
def test_grouped_weights_and_output(H, H_kv, causal, transposed):
    g = torch.Generator().manual_seed(H * 10 + H_kv)
    B, L, d = 2, 7, 8
    if transposed:  # the layout of a projection split into heads: (B, L, H, d).transpose(1, 2)
        q = torch.randn(B, L, H, d, generator=g).transpose(1, 2)
    else:
        q = torch.randn(B, H, L, d, generator=g)
    k, v = torch.randn(B, H_kv, L, d, generator=g), torch.randn(B, H_kv, L, d, generator=g)
    z, w = attend(q, k, v, causal=causal, need_weights=True)
    w_ref, z_ref = _reference(q, k, v, causal, 1 / math.sqrt(d))
    assert w.shape == (B, H, L, L) and z.shape == (B, H, L, d)
    torch.testing.assert_close(w.double(), w_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(z.double(), z_ref, atol=1e-6, rtol=0)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    torch.testing.assert_close(z, sdpa, atol=1e-6, rtol=0)


def test_grouped_is_a_view_of_contiguous_heads():
    t = torch.randn(2, 6, 5, 4)
    gt = dense.grouped(t, 3)
    assert gt.shape == (2, 2, 15, 4) and gt.data_ptr() == t.data_ptr()
    # head j·3 + i of query row r is row i·5 + r of k/v head j
    torch.testing.assert_close(gt[1, 1, 2 * 5 + 3], t[1, 1 * 3 + 2, 3])


def test_grouped_lean_weights_with_per_head_temperature():
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 4, 5, 8, generator=g), torch.randn(1, 2, 5, 8, generator=g)
    factor = torch.tensor([1.0, 2.0, 0.5, 3.0]).view(4, 1, 1)  # one factor per query head
    w = dense.lean_weights(q, k, factor, None, groups=2)
    w_ref = torch.softmax(q.double() @ k.double().repeat_interleave(2, dim=1).transpose(-2, -1) * factor.double(), -1)
    torch.testing.assert_close(w.double(), w_ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_heads_with_a_temperature_that_varies_over_keys(weights, causal):
    # a factor per key cannot go on q: the explicit path multiplied q (4 heads) by the unrepeated
    # k (2 heads), a RuntimeError from torch.matmul, with or without weights
    import attnscope
    g = torch.Generator().manual_seed(4)
    q, k, v = torch.randn(2, 4, 7, 6, generator=g), torch.randn(2, 2, 7, 6, generator=g), torch.randn(2, 2, 7, 5, generator=g)
    tau = torch.rand(7, generator=g) + 0.05  # one τ per key
    qn, kn = q.double() / q.double().norm(dim=-1, keepdim=True), k.double() / k.double().norm(dim=-1, keepdim=True)
    w_ref, z_ref = _reference(qn, kn, v, causal, 1 / tau.double())
    got = attnscope.attention(q, k, v, causal=causal, scoring="cosine", temperature=tau, return_weights=weights)
    z = got[0] if weights else got
    torch.testing.assert_close(z.double(), z_ref, atol=1e-5, rtol=0)
    if weights:
        torch.testing.assert_close(got[1].double(), w_ref, atol=1e-6, rtol=0)
