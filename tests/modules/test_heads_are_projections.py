"""The fourth article's point: head i is x @ W_Q^(i) with its own (d_model, d_head) matrix,
not the slice x[:, i*d_head:(i+1)*d_head]; running heads one by one equals the fused module."""

import torch

from attnscope import MultiHeadAttention, attention


def test_heads_one_by_one_equal_fused():
    torch.manual_seed(0)
    m = MultiHeadAttention(512, 8).double()
    x = torch.randn(2, 10, 512, dtype=torch.float64)
    fused, fused_w = m(x, need_weights=True)
    total = m.W_O.bias.clone()
    for i in range(8):
        W = m.head_weights(i)
        assert W["W_Q"].shape == (512, 64) and W["W_O"].shape == (64, 512)
        q = x @ W["W_Q"] + W["b_Q"]  # (B, L, 64)
        k = x @ W["W_K"] + W["b_K"]
        v = x @ W["W_V"] + W["b_V"]
        z, w = attention(q, k, v, return_weights=True)  # one head on its own
        torch.testing.assert_close(w, fused_w[:, i])
        total = total + z @ W["W_O"]  # concatenation followed by W_O = sum of per-head products
    torch.testing.assert_close(total, fused, rtol=1e-12, atol=1e-12)


def test_heads_are_not_slices_of_the_input():
    torch.manual_seed(1)
    m = MultiHeadAttention(16, 4).double()
    x = torch.randn(1, 5, 16, dtype=torch.float64)
    q_head0 = x @ m.head_weights(0)["W_Q"] + m.head_weights(0)["b_Q"]
    assert not torch.allclose(q_head0, x[..., :4])
    # every input feature influences head 0's query
    assert (m.head_weights(0)["W_Q"].abs().sum(1) > 0).all()


def test_split_is_view_and_merge_inverts_it():
    m = MultiHeadAttention(12, 3)
    t = torch.randn(2, 5, 12)
    split = m.split_heads(t)
    assert split.shape == (2, 3, 5, 4)
    assert split.data_ptr() == t.data_ptr()  # a view: no copy, no arithmetic
    assert torch.equal(split[:, 1], t[..., 4:8])
    assert torch.equal(m.merge_heads(split), t)
