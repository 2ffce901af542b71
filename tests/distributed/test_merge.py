"""Merging partial attention over two disjoint key sets by log-sum-exp gives attention over the
union — also with scores so large that exp would overflow, and with empty sets (−∞, never NaN)."""

import torch

from attnscope.blockwise import blockwise_attention
from attnscope.distributed import merge_partials


def test_merge_equals_attention_over_the_union():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 10, 8, generator=g, dtype=torch.float64) * 40  # scores in the thousands
    k = torch.randn(2, 3, 20, 8, generator=g, dtype=torch.float64) * 40
    v = torch.randn(2, 3, 20, 4, generator=g, dtype=torch.float64)
    mask = torch.ones(10, 20, dtype=torch.bool)
    mask[3] = False  # query 3 sees nothing in either half
    mask[5, :12] = False  # query 5 sees only the second half
    whole, lse = blockwise_attention(q, k, v, mask, return_lse=True)
    assert lse.abs()[torch.isfinite(lse)].max() > 1000  # exp(lse) would overflow float64
    a = blockwise_attention(q, k[..., :12, :], v[..., :12, :], mask[:, :12], return_lse=True)
    b = blockwise_attention(q, k[..., 12:, :], v[..., 12:, :], mask[:, 12:], return_lse=True)
    out, merged = merge_partials(*a, *b)
    torch.testing.assert_close(out, whole, rtol=0, atol=1e-12)
    torch.testing.assert_close(merged, lse, rtol=0, atol=1e-9)
    assert torch.isneginf(merged[..., 3]).all() and torch.equal(out[..., 3, :], torch.zeros_like(out[..., 3, :]))
    assert not torch.isnan(out).any()
    # the ring merges in place (no copies of the results): the same numbers, written into out_a
    out_a = a[0].clone()
    got, got_lse = merge_partials(out_a, a[1], b[0].clone(), b[1], inplace=True)
    assert got.data_ptr() == out_a.data_ptr()
    torch.testing.assert_close(got, out, rtol=0, atol=0)
    torch.testing.assert_close(got_lse, merged, rtol=0, atol=0)
