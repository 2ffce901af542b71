"""Grouped-query attention in the step function: k and v with H_kv heads, each serving H/H_kv
query heads — the fused kernel (SDPA's enable_gqa), the explicit steps, the blockwise kernel and
the weights on demand all equal attention over k, v repeated per query head."""

import pytest
import torch

import attnscope.kernels.memory as memory
from attnscope import attention, attention_steps
from attnscope.blockwise import attention_weights, blockwise_attention

g = torch.Generator().manual_seed(2)
q = torch.randn(2, 6, 10, 8, generator=g, dtype=torch.float64)
k, v = (torch.randn(2, 2, 12, 8, generator=g, dtype=torch.float64) for _ in range(2))  # 3 query heads per k/v head
kr, vr = k.repeat_interleave(3, dim=1), v.repeat_interleave(3, dim=1)
mask = torch.rand(2, 1, 10, 12, generator=g) > 0.2


@pytest.mark.parametrize("scoring", ["scaled", "cosine"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_path_equals_repeated_heads(scoring, causal, monkeypatch):
    ref, ref_w = attention(q, kr, vr, mask, causal=causal, scoring=scoring, return_weights=True)
    torch.testing.assert_close(attention(q, k, v, mask, causal=causal, scoring=scoring), ref)
    out, w = attention(q, k, v, mask, causal=causal, scoring=scoring, return_weights=True)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, ref_w)
    torch.testing.assert_close(attention_steps(q, k, v, mask, causal=causal, scoring=scoring)["out"], ref)
    torch.testing.assert_close(blockwise_attention(q, k, v, mask, causal=causal, scoring=scoring, block_size=4), ref)
    torch.testing.assert_close(attention_weights(q, k, mask, causal=causal, scoring=scoring, heads=[4, 1]), ref_w[:, [4, 1]])
    monkeypatch.setattr(memory, "DENSE_MEMORY_LIMIT", 0)
    with torch.no_grad():
        out, w = attention(q, k, v, mask, causal=causal, scoring=scoring, return_weights=True)
    torch.testing.assert_close(w, ref_w)
    torch.testing.assert_close(out, ref)


def test_heads_that_do_not_divide_are_a_shape_error():
    from attnscope import ShapeError
    with pytest.raises(ShapeError, match="do not broadcast"):
        attention(q, k[:, :1].expand(2, 4, 12, 8)[:, :4], v[:, :1].expand(2, 4, 12, 8))
