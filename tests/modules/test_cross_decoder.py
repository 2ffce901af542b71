"""Seq2SeqAttention's self-attention composed by hand with a Seq2SeqCache against float64
attention written out from its definition (projections, a causal softmax over every position so
far, T5's unscaled scores with an additive bias)."""

import pytest
import torch

from attnscope.modules.cross_decoder import Seq2SeqAttention, Seq2SeqCache


@pytest.mark.parametrize("chunks", [[5], [3, 2], [1, 1, 1, 1, 1]])
def test_cached_chunks_with_causal(chunks):
    # a chunk after the first was attended with SDPA's top-left causality: query i of the chunk saw
    # keys 0 … i, not 0 … past + i (the stack passes its own mask; a hand-composed loop did not)
    torch.manual_seed(1)
    a = Seq2SeqAttention(16, 2, scoring="unscaled", has_bias=True).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    bias = torch.randn(1, 2, 5, 5, dtype=torch.float64)  # (1, H, L, S): a relative bias of all positions
    W, b = a.W_qkv.weight, a.W_qkv.bias
    q, k, v = (t.reshape(2, 5, 2, 8).transpose(1, 2) for t in (x @ W.T + b).split(16, dim=-1))  # (B, H, L, d)
    s = q @ k.transpose(-1, -2) + bias  # T5: no 1/√d
    s = s.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    ref = a.W_O((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(2, 5, 16))
    cache, outs, at = Seq2SeqCache(1), [], 0
    for n in chunks:
        outs.append(a(x[:, at:at + n], bias=bias[:, :, at:at + n, :at + n], causal=True, cache=cache))
        cache.advance(n)
        at += n
    torch.testing.assert_close(torch.cat(outs, dim=1), ref, atol=1e-12, rtol=0)
