import math

import torch

from attnscope import SingleHeadAttention


def test_article_module_shapes_and_rows_sum_to_one():
    torch.manual_seed(0)
    attn = SingleHeadAttention()  # hidden_size 768 as in the article
    out, w = attn(torch.randn(1, 9, 768))
    assert out.shape == (1, 9, 768) and w.shape == (1, 9, 9)
    torch.testing.assert_close(w[0, 2].sum(), torch.tensor(1.0))


def test_matches_the_article_formula():
    torch.manual_seed(1)
    attn = SingleHeadAttention(16).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    Q, K, V = attn.W_Q(x), attn.W_K(x), attn.W_V(x)
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(16), dim=-1)  # d_k = d_model
    out, got_w = attn(x)
    torch.testing.assert_close(got_w, w)
    torch.testing.assert_close(out, w @ V)
