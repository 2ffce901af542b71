"""The float64 twins of today's decoder steps (rotary positions in both pairings, RMSNorm with
Llama's w and Gemma's 1 + w, windows, shared k/v heads, a trace's factor with Gemma's scale)
against independent torch float64 computations: transformers' own ``apply_rotary_pos_emb``,
Meta's complex-number rotation, and RMSNorm written with torch ops."""

import math

import numpy as np
import pytest
import torch

from attnscope import reference as R
from attnscope.errors import ConfigError

g = torch.Generator().manual_seed(11)


def test_half_pairing_is_transformers_rotate_half():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    d, L, base = 16, 9, 10000.0
    q, k = (torch.randn(1, 2, L, d, generator=g, dtype=torch.float64) for _ in range(2))
    pos = torch.arange(L, dtype=torch.float64) + 3
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = pos[:, None] * inv[None]
    emb = torch.cat([freqs, freqs], -1)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, emb.cos()[None], emb.sin()[None])
    inv_np = R.rope_inv_freq(d, base)
    np.testing.assert_allclose(inv_np, inv.numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(R.rotate(q, pos.numpy(), inv_np, "half"), q_hf.numpy(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(R.rotate(k, pos.numpy(), inv_np, "half"), k_hf.numpy(), rtol=0, atol=1e-14)


def test_adjacent_pairing_is_metas_complex_rotation():
    d, L, base = 8, 6, 500.0
    x = torch.randn(L, d, generator=g, dtype=torch.float64)
    pos = torch.arange(L, dtype=torch.float64)
    inv = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    z = torch.view_as_complex(x.reshape(L, d // 2, 2).contiguous())  # (x_2i + i·x_2i+1)
    turned = torch.view_as_real(z * torch.polar(torch.ones(L, d // 2, dtype=torch.float64), pos[:, None] * inv))
    np.testing.assert_allclose(R.rotate(x, pos.numpy(), R.rope_inv_freq(d, base), "adjacent"),
                               turned.reshape(L, d).numpy(), rtol=0, atol=1e-14)


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
def test_scores_depend_on_distance_only(pairing):
    d = 12
    q, k = np.random.default_rng(3).normal(size=(2, d))
    inv = R.rope_inv_freq(d, 10000.0)

    def score(m, n):
        return float(R.rotate(q[None], [m], inv, pairing)[0] @ R.rotate(k[None], [n], inv, pairing)[0])

    assert math.isclose(score(3, 1), score(7, 5), rel_tol=1e-12)
    assert math.isclose(score(3, 1), score(102, 100), rel_tol=1e-11)
    assert not math.isclose(score(3, 1), score(3, 0), rel_tol=1e-3)
    # lengths never change
    np.testing.assert_allclose(np.linalg.norm(R.rotate(q[None], [41], inv, pairing)), np.linalg.norm(q), rtol=1e-14)


def test_rope_pairs_and_errors():
    a, b = R.rope_pairs(8, "half")
    assert a.tolist() == [0, 1, 2, 3] and b.tolist() == [4, 5, 6, 7]
    a, b = R.rope_pairs(8, "adjacent")
    assert a.tolist() == [0, 2, 4, 6] and b.tolist() == [1, 3, 5, 7]
    with pytest.raises(ConfigError, match="even"):
        R.rope_pairs(7)
    with pytest.raises(ConfigError, match="pairing"):
        R.rope_pairs(8, "diagonal")


@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_rms_norm_against_torch(offset):
    x = torch.randn(5, 16, generator=g, dtype=torch.float64) * 3
    w = torch.randn(16, generator=g, dtype=torch.float64) * 0.1 + (0.0 if offset else 1.0)
    eps = 1e-6
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + w)
    np.testing.assert_allclose(R.rms_norm(x, w, eps, offset), want.numpy(), rtol=1e-14, atol=1e-14)
    plain = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    np.testing.assert_allclose(R.rms_norm(x, None, eps), plain.numpy(), rtol=1e-14, atol=1e-14)


def test_window_mask_and_kv_head():
    m = R.window_mask(6, 6, window=3)
    want = torch.ones(6, 6, dtype=torch.bool).tril() & ~torch.ones(6, 6, dtype=torch.bool).tril(-3)
    np.testing.assert_array_equal(m, want.numpy())
    np.testing.assert_array_equal(R.window_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril().numpy())
    assert [R.kv_head(h, 9, 3) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [R.kv_head(h, 4, 1) for h in range(4)] == [0, 0, 0, 0]


def test_trace_factor_uses_the_models_query_scale(tmp_path):
    """Gemma 3's factor is query_pre_attn_scalar^-½, not 1/√d_head (24 vs 16 in the tiny model)."""
    import attnscope
    from tests.models.decoders.tiny import gemma3

    model = attnscope.load(gemma3(tmp_path / "g"))
    c = model.config
    assert c.query_scale is not None and not math.isclose(c.query_scale, c.d_head ** -0.5)
    tr = model.trace("A sliding window keeps each token's view short.", names=["layers.2.attn.q", "layers.2.attn.k",
                                                                            "layers.2.attn.weights"])
    assert R.trace_factor(tr) == c.query_scale
    # recomputed from q and k (k shared by every query head) = the model's weights
    w = R.trace_weights(tr, 2, recorded=False)
    np.testing.assert_allclose(w, tr["layers.2.attn.weights"][0].double().numpy(), atol=1e-5)
