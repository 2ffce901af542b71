"""Adding a scoring is one register_scoring() call: a new one (scale = 1/d_k^0.75) then works in
attention (fused and explicit), attention_steps, the blockwise kernels, MultiHeadAttention,
TransformerConfig and the float64 reference, without touching any other file."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope import ConfigError, MultiHeadAttention, SCORINGS, TransformerConfig, attention, attention_steps, reference as R
from attnscope.blockwise import attention_weights, blockwise_attention
from attnscope.functional import score_factor
from attnscope.scorings import Scoring, get_scoring, register_scoring, unregister_scoring


@pytest.fixture
def pow075():
    sc = register_scoring(Scoring(
        name="pow075", factor=lambda d_k, tau=None: d_k ** -0.75, title="q·k / d_k^0.75",
        latex=r"\frac{q \cdot k}{d_k^{0.75}}",
        words={"en": "Scoring: the dot product divided by $d_k^{0.75}$.", "zh": "打分方式：点积除以 $d_k^{0.75}$。"}))
    yield sc
    unregister_scoring("pow075")
    assert "pow075" not in SCORINGS


def test_a_new_scoring_works_everywhere(pow075):
    assert "pow075" in SCORINGS and SCORINGS[-1] == "pow075" and get_scoring("pow075") is pow075
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 9, 16, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(2, 1, 9, 9, generator=g) > 0.2
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=16 ** -0.75)
    assert score_factor("pow075", 16) == 16 ** -0.75
    torch.testing.assert_close(attention(q, k, v, mask, scoring="pow075"), expected)
    out, w = attention(q, k, v, mask, scoring="pow075", return_weights=True)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(attention_steps(q, k, v, mask, scoring="pow075")["scaled"], q @ k.transpose(-1, -2) * 16 ** -0.75)
    torch.testing.assert_close(blockwise_attention(q, k, v, mask, scoring="pow075", block_size=4), expected)
    torch.testing.assert_close(attention_weights(q, k, mask, scoring="pow075", heads=2), w[:, 2])
    ref_out, ref_w = R.attention(q, k, v, mask.numpy(), scoring="pow075")
    np.testing.assert_allclose(ref_out, expected.numpy(), rtol=0, atol=1e-12)

    m = MultiHeadAttention(16, 2, scoring="pow075").double()
    x = torch.randn(2, 7, 16, generator=g, dtype=torch.float64)
    y, mw = m(x, need_weights=True)
    qm, km, vm = (m.split_heads(t) for t in m.project(x))
    torch.testing.assert_close(mw, torch.softmax(qm @ km.transpose(-1, -2) * 8 ** -0.75, -1))
    torch.testing.assert_close(m(x), y)  # the fused path gives the weights path's output
    assert TransformerConfig(d_model=16, n_heads=2, n_layers=1, d_ff=32, vocab_size=10, scoring="pow075").scoring == "pow075"


def test_registry_errors():
    with pytest.raises(ConfigError, match="scoring 'scaled' is already registered"):
        register_scoring(Scoring(name="scaled", factor=lambda d, t=None: 1.0))
    with pytest.raises(ConfigError, match="built in and cannot be removed"):
        unregister_scoring("cosine")
    with pytest.raises(ConfigError, match=r"unknown scoring 'nope'; choose one of scaled, unscaled, inv_d, cosine, qknorm"):
        get_scoring("nope")
    with pytest.raises(ConfigError, match="identifier"):
        register_scoring(Scoring(name="a b", factor=lambda d, t=None: 1.0))


def test_every_builtin_carries_its_words():
    for name in ("scaled", "unscaled", "inv_d", "cosine", "qknorm"):
        sc = get_scoring(name)
        assert sc.title and sc.latex and set(sc.words) == {"en", "zh"}
