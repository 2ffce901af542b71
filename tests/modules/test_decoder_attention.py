"""DecoderAttention composed by hand with a KVCache against float64 attention written out from
its definition (projections, rotary by the rotate-half formula, grouped-query heads, a causal
softmax over every position so far)."""

import pytest
import torch

from attnscope.modules import DecoderAttention, KVCache
from attnscope.position_rotary import Rotary


def tables(n: int, d: int):
    """cos, sin (1, 1, n, d) of rotary at positions 0 … n − 1 (base 10000, halves repeated)."""
    inv = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None]  # (n, d/2)
    ang = torch.cat([ang, ang], dim=-1)  # (n, d)
    return ang.cos()[None, None], ang.sin()[None, None]


def by_hand(a: DecoderAttention, x: torch.Tensor) -> torch.Tensor:
    """out (B, L, d_model): every query at position i over keys 0 … i."""
    B, L, _ = x.shape
    H, Hkv, d = a.n_heads, a.n_kv_heads, a.d_head
    W, b = a.W_qkv.weight, a.W_qkv.bias
    qkv = x @ W.T + b  # (B, L, (H + 2 H_kv) d)
    q = qkv[..., :H * d].reshape(B, L, H, d).transpose(1, 2)
    k = qkv[..., H * d:(H + Hkv) * d].reshape(B, L, Hkv, d).transpose(1, 2)
    v = qkv[..., (H + Hkv) * d:].reshape(B, L, Hkv, d).transpose(1, 2)
    cos, sin = tables(L, d)

    def rot(t):
        half = torch.cat([-t[..., d // 2:], t[..., :d // 2]], dim=-1)
        return t * cos + half * sin
    q, k = rot(q), rot(k).repeat_interleave(H // Hkv, dim=1)
    v = v.repeat_interleave(H // Hkv, dim=1)
    s = (q @ k.transpose(-1, -2)) / d ** 0.5
    s = s.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), float("-inf"))
    z = torch.softmax(s, dim=-1) @ v  # (B, H, L, d)
    return a.W_O(z.transpose(1, 2).reshape(B, L, H * d))


@pytest.mark.parametrize("chunks", [[5], [3, 2], [1, 1, 1, 1, 1], [2, 1, 2]])
def test_cached_chunks_with_default_causal(chunks):
    # with a cache and its default causal=True, a chunk after the first was attended with SDPA's
    # top-left causality: query i of the chunk saw keys 0 … i, not 0 … past + i (off by up to 0.7
    # token by token); the stack never met it (it passes its own mask), a hand-composed loop did
    torch.manual_seed(0)
    a = DecoderAttention(32, 4, n_kv_heads=2).double()
    x = torch.randn(2, 5, 32, dtype=torch.float64)
    cos, sin = Rotary(a.d_head, 10000.0).cos_sin(torch.arange(5)[None], torch.float64)  # the stack's tables
    cache, outs, at = KVCache(1), [], 0
    for n in chunks:
        outs.append(a(x[:, at:at + n], cos[..., at:at + n, :], sin[..., at:at + n, :], cache=cache))
        cache.advance(n)
        at += n
    torch.testing.assert_close(torch.cat(outs, dim=1), by_hand(a, x), atol=1e-12, rtol=0)


@pytest.mark.parametrize("batch", [1, 3])
def test_a_cache_continued_with_another_batch_is_named(batch):
    # a cache of 2 texts continued with 1 text copied the first text's keys in by broadcasting (the new
    # text attended someone else's past, no error); with 3 texts torch's 'expanded size' error came
    from attnscope.errors import InputError
    torch.manual_seed(0)
    a = DecoderAttention(32, 4, n_kv_heads=2)
    cos, sin = Rotary(a.d_head, 10000.0).cos_sin(torch.arange(4)[None], torch.float32)
    cache = KVCache(1)
    a(torch.randn(2, 3, 32), cos[..., :3, :], sin[..., :3, :], cache=cache)
    cache.advance(3)
    with pytest.raises(InputError, match=r"the cache holds layer 0's keys of 3 positions, \(B, H_kv, S, d_head\) = "
                                         rf"\(2, 2, 3, 8\), and the new keys are \({batch}, 2, 1, 8\)"):
        a(torch.randn(batch, 1, 32), cos[..., 3:, :], sin[..., 3:, :], cache=cache)
