"""A query that may look at no key gets output 0 and lse −∞, never NaN — also in the gradients,
and also when whole tiles of it are masked (the running max stays −∞ across tiles)."""

import pytest
import torch

from attnscope.blockwise import blockwise_attention


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_fully_masked_rows_and_tiles(kernel):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 40, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 2, 50, 8, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 2, 50, 4, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(1, 2, 40, 50, dtype=torch.bool)
    mask[0, 0, 3] = False  # one dead row
    mask[0, 1, :16] = False  # a whole query tile dead (block_q = 16)
    mask[0, 1, 20, :45] = False  # a row alive only in its last key tile
    out, lse = blockwise_attention(q, k, v, mask, block_size=16, return_lse=True, kernel=kernel)
    assert torch.equal(out[0, 0, 3], torch.zeros(4, dtype=torch.float64))
    assert torch.equal(out[0, 1, :16], torch.zeros(16, 4, dtype=torch.float64))
    assert torch.isneginf(lse[0, 0, 3]) and torch.isneginf(lse[0, 1, :16]).all()
    assert torch.isfinite(lse).sum() == 2 * 40 - 1 - 16
    # the half-dead row is the softmax over its 5 live keys
    s = (q[0, 1, 20] @ k[0, 1, 45:].T) / 8 ** 0.5
    torch.testing.assert_close(out[0, 1, 20], torch.softmax(s, -1) @ v[0, 1, 45:], rtol=0, atol=1e-14)
    finite_lse = torch.where(torch.isinf(lse), 0.0, lse)
    (out.sum() + finite_lse.sum()).backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.equal(q.grad[0, 0, 3], torch.zeros(8, dtype=torch.float64))


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_float_mask_of_minus_inf_and_causal_with_more_queries_than_keys(kernel):
    """Causal with L > S (top-left aligned): queries past S see every key; float −inf masks."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 30, 8, generator=g)
    k = torch.randn(3, 10, 8, generator=g)
    v = torch.randn(3, 10, 8, generator=g)
    add = torch.zeros(3, 30, 10)
    add[:, :, 0] = float("-inf")  # query 0 sees only key 0 (causal) and that one is masked
    out, lse = blockwise_attention(q, k, v, add, causal=True, block_size=4, return_lse=True, kernel=kernel)
    assert not torch.isnan(out).any()
    assert torch.isneginf(lse[:, 0]).all() and torch.isfinite(lse[:, 1:]).all()
    ref = torch.nn.functional.scaled_dot_product_attention(q[:, 1:], k, v, attn_mask=add[:, 1:] + torch.zeros(29, 10).masked_fill(
        torch.ones(29, 10, dtype=torch.bool).triu(2), float("-inf")))
    torch.testing.assert_close(out[:, 1:], ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_row_blocked_by_the_dtypes_lowest_value_is_averaged_as_softmax_does(dtype):
    # transformers' masks block with finfo.min; the online kernel adds mask × log₂e, which made
    # finfo.min −inf: such a row (every key alike) became a dead row, output 0 and weights 0,
    # where softmax (and the fused and explicit paths) average it. Reference: the masked scores
    # as the dtype holds them, softmax in float64.
    from attnscope.blockwise import attention_weights
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=g, dtype=dtype) for _ in range(3))
    low = torch.finfo(dtype).min
    add = torch.zeros(6, 6, dtype=dtype)
    add[1] = low  # every key alike: the softmax of equal scores
    add[2, :4] = low
    s = (q @ k.transpose(-1, -2)) * 8 ** -0.5 + add  # (1, 2, 6, 6) as the dtype holds them
    ref_w = torch.softmax(s.double(), dim=-1)
    ref = ref_w @ v.double()
    tol = dict(rtol=0, atol=1e-5 if dtype == torch.float32 else 1e-12)
    out = blockwise_attention(q, k, v, add, kernel="online", block_size=4)
    torch.testing.assert_close(out.double(), ref, **tol)
    torch.testing.assert_close(attention_weights(q, k, add, block_size=4).double(), ref_w, **tol)
