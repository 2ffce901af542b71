"""MultiHeadAttention with a key/value cache (the causal single stacks' generation): the prompt and
then one token at a time give what one causal pass over the whole sequence gives, with ALiBi and
with an additive mask hiding a key; the reference is the same module without a cache."""

from __future__ import annotations

import pytest
import torch

from attnscope.modules import MultiHeadAttention
from attnscope.modules.kv_cache import KVCache


@pytest.mark.parametrize("position", [None, "alibi"])
@pytest.mark.parametrize("additive", [False, True])
@torch.no_grad()
def test_cached_steps_equal_one_causal_pass(position, additive):
    torch.manual_seed(0)
    m = MultiHeadAttention(16, 4, position=position, layer_index=1).double().eval()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    hide = torch.zeros(7, 7, dtype=torch.float64)
    hide[:, 1] = float("-inf")  # key 1 hidden from every query (additive: kept additive with the cache)
    hide[0, 1] = 0.0  # query 0 sees its one key
    full, w_full = m(x, causal=True, attn_mask=hide if additive else None, need_weights=True)  # (2, 7, 16)
    cache = KVCache(2)
    outs, rows = [], []
    for a, b in ((0, 3), (3, 4), (4, 5), (5, 6), (6, 7)):
        out, w = m(x[:, a:b], causal=True, attn_mask=hide[a:b, :b] if additive else None, cache=cache,
                   need_weights=True)  # (2, b − a, 16), (2, 4, b − a, b)
        cache.advance(b - a)
        outs.append(out)
        rows.append(w[:, :, -1])  # (2, 4, b)
    assert cache.k[0] is None and cache.k[1] is not None  # the layer's own slot
    assert torch.allclose(torch.cat(outs, 1), full, atol=1e-12)
    for b, r in zip((3, 4, 5, 6, 7), rows):
        assert torch.allclose(r, w_full[:, :, b - 1, :b], atol=1e-12)
    if additive:
        assert float(w_full[:, :, 2:, 1].abs().max()) == 0.0  # the mask did hide that key


@torch.no_grad()
def test_a_cache_of_another_model_is_one_sentence():
    """A cache with fewer layers than the model failed as an IndexError inside KVCache.update; one
    continued after the model was cast (float64 → float32) took the new keys into its float64 buffer
    silently, and attention then failed inside torch on the mixed dtypes. Both are one sentence."""
    from attnscope.errors import InputError
    from attnscope.i18n import error_message

    m = MultiHeadAttention(16, 4, layer_index=1).double().eval()
    x = torch.randn(1, 3, 16, dtype=torch.float64)
    with pytest.raises(InputError, match=r"^the cache has room for 1 layers, and layer 1 was run with it") as e:
        m(x, causal=True, cache=KVCache(1))
    assert "KVCache(model.config.n_layers)" in error_message(e.value, "zh")
    cache = KVCache(2)
    m(x, causal=True, cache=cache)
    cache.advance(3)
    with pytest.raises(InputError, match=r"^the cache holds layer 1's keys as torch.float64 on cpu, and the new keys "
                                         r"are torch.float32 on cpu") as e:
        m.float()(x[:, :1].float(), causal=True, cache=cache)
    assert "torch.float64 on cpu" in error_message(e.value, "zh")
