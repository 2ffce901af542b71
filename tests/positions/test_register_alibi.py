"""Adding a position scheme that acts on the scores is one register_position() call: ALiBi's twin,
registered here under a new name with the two functions of attnscope's own ``alibi`` (torch, and
float64 from attnscope.reference), works in attention (attnscope.attention and
MultiHeadAttention), a TransformerConfig model, the float64 reference forward, explain and the
viewer's data, without touching another file — the twin of tests/scorings/test_register_scoring.py.

The slopes are checked against numbers written here (Press et al.: 2^(−8k/H); for 6 heads four
of 2^(−8k/4) and two of 2^(−8k/8), k = 1, 3), the weights against softmax written out in NumPy and
torch's SDPA, and the model against transformers' BLOOM (the same weights)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnscope
from attnscope import ConfigError, MultiHeadAttention, TransformerConfig, attention, attention_steps
from attnscope import reference as R
from attnscope.positions import (
    PositionScheme,
    alibi_bias,
    get_position,
    position_names,
    register_position,
    unregister_position,
)

NAME = "alibi_twin"
SLOPES6 = np.array([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3])  # H = 6, by hand
TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture
def twin():
    scheme = register_position(PositionScheme(
        name=NAME, acts_on="bias", bias=alibi_bias, bias_np=R.alibi_bias,
        words={"en": "Positions: ALiBi's twin; slope × key position added to the scaled scores.",
               "zh": "位置：ALiBi 的孪生方案；斜率 × 键的位置加到缩放后的分数上。"}))
    yield scheme
    unregister_position(NAME)
    assert NAME not in position_names()


def _by_hand(H: int, n: int) -> np.ndarray:
    """bias[h, i, j] = slope_h · j, (H, n, n), from SLOPES6 / the power-of-two rule."""
    slopes = SLOPES6 if H == 6 else 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
    return np.broadcast_to(slopes[:, None, None] * np.arange(n)[None, None, :], (H, n, n))


def test_a_new_bias_scheme_works_in_attention(twin):
    assert get_position(NAME) is twin and twin.acts_on == "bias"
    n = 9
    pos = torch.arange(n)[None]
    b = twin.bias(6, pos, pos, torch.float64, None)  # (1, H, L, S)
    assert b.shape == (1, 6, n, n)
    np.testing.assert_array_equal(b[0].numpy(), _by_hand(6, n))
    np.testing.assert_array_equal(twin.bias_np(6, np.arange(n), np.arange(n)), _by_hand(6, n))
    np.testing.assert_array_equal(twin.bias_np(8, np.arange(n), np.arange(n)), _by_hand(8, n))

    # attention: the term as an additive mask (the functional API's way to add a score term)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 6, n, 8, generator=g, dtype=torch.float64) for _ in range(3))
    add = b.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))  # (1, H, L, S)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=add)
    torch.testing.assert_close(attention(q, k, v, add), expected)
    steps = attention_steps(q, k, v, add)
    torch.testing.assert_close(steps["masked"], q @ k.transpose(-1, -2) / 8 ** 0.5 + add)

    # MultiHeadAttention adds it itself (hook point attn.bias), by real-token positions under padding
    m = MultiHeadAttention(48, 6, position=NAME).double()
    x = torch.randn(2, n, 48, generator=g, dtype=torch.float64)
    pad = torch.zeros(2, n, dtype=torch.bool)
    pad[1, 6:] = True  # text 1: 6 real tokens, right-padded
    seen = {}
    m.bias.add_hook(lambda t, name: seen.setdefault("bias", t.clone()))
    with torch.no_grad():
        y, w = m(x, key_padding_mask=pad, causal=True, need_weights=True)
        qm, km, _ = (m.split_heads(t) for t in m.project(x))
        fused = m(x, key_padding_mask=pad, causal=True)
    s = (qm @ km.transpose(-1, -2)).numpy() / 8 ** 0.5 + _by_hand(6, n)[None]
    s = np.where(np.tril(np.ones((n, n), dtype=bool))[None, None] & ~pad.numpy()[:, None, None, :], s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(w.numpy(), e / e.sum(-1, keepdims=True), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(seen["bias"][1, :, :, :6].numpy(), _by_hand(6, n)[:, :, :6])
    torch.testing.assert_close(fused, y)  # the fused path (no weights formed) agrees


def test_registry_errors(twin):
    with pytest.raises(ConfigError, match="position scheme 'alibi_twin' is already registered"):
        register_position(twin)
    with pytest.raises(ConfigError, match="needs both its torch function"):
        register_position(PositionScheme(name="half", acts_on="bias", bias=alibi_bias))
    with pytest.raises(ConfigError, match="a score term is acts_on='bias'"):
        register_position(PositionScheme(name="wrong", acts_on="qk", bias=alibi_bias, bias_np=R.alibi_bias))
    with pytest.raises(ConfigError, match="acts on one of embeddings, qk, bias, mask"):
        register_position(PositionScheme(name="scores", acts_on="scores"))
    with pytest.raises(ConfigError, match="built in and cannot be removed"):
        unregister_position("alibi")
    with pytest.raises(ConfigError, match="learned bias built per stack"):
        MultiHeadAttention(32, 4, position="t5_relative")
    assert get_position("t5_relative").acts_on == "bias" and get_position("rotary").acts_on == "qk"


@pytest.fixture
def twin_model(twin, tmp_path):
    """A TransformerConfig model with position=alibi_twin carrying tiny BLOOM's weights (same
    shapes: ALiBi has no parameters), beside transformers' BLOOM of those weights."""
    import transformers

    from attnscope.models.model import Model
    from attnscope.models.registry import FAMILIES
    from attnscope.testing.tiny import tiny_bloom_6heads

    transformers.logging.set_verbosity_error()
    folder = tiny_bloom_6heads(tmp_path / "bloom")
    bloom = attnscope.load(folder)
    cfg = TransformerConfig(**{**{f: getattr(bloom.config, f) for f in bloom.config.__dataclass_fields__},
                               "position": NAME})
    assert (cfg.position, cfg.causal, cfg.norm, cfg.score_bias) == (NAME, True, "pre", True)
    model = Model(cfg, FAMILIES["bloom"], name="twin", tokenizer=bloom.tokenizer, path=folder).eval()
    model.load_state_dict(bloom.state_dict())
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    return model, hf


def test_a_new_bias_scheme_works_in_a_model_and_the_float64_reference(twin_model):
    from attnscope.reference_model import forward

    model, hf = twin_model
    assert "layers.0.attn.bias" in dict(model.named_modules()) and model.embed.position_embedding is None
    ids = model.encode(TEXT).input_ids
    tr = model.trace(TEXT, names=["layers.*.attn.weights", "layers.*.attn.bias", "final_norm"])
    with torch.no_grad():
        ref = hf(input_ids=ids, output_attentions=True, output_hidden_states=True)
    n = ids.shape[1]
    assert float((tr["final_norm"] - ref.hidden_states[-1]).abs().max()) <= 1e-5
    for i, a in enumerate(ref.attentions):
        assert float((tr[f"layers.{i}.attn.weights"] - a).abs().max()) <= 1e-5
        np.testing.assert_array_equal(tr[f"layers.{i}.attn.bias"][0].double().numpy(), _by_hand(6, n))
    f = forward(model, TEXT)  # float64 from the weights
    np.testing.assert_array_equal(f["layers.1.attn.bias"], _by_hand(6, n))
    for i in range(model.config.n_layers):
        assert np.abs(f[f"layers.{i}.attn.weights"] - tr[f"layers.{i}.attn.weights"][0].double().numpy()).max() <= 1e-5
    assert np.abs(f["final_norm"] - ref.hidden_states[-1][0].double().numpy()).max() <= 1e-5


def test_a_new_bias_scheme_works_in_explain_and_the_viewer(twin_model):
    from attnscope.explain import explain
    from attnscope.viewer import data

    model, _ = twin_model
    layer, head, query = 1, 4, 7
    tr = model.trace(TEXT, names=["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v", "layers.*.attn.weights"])
    q, k, v = (tr.step(layer, s, head, text=0).double().numpy() for s in ("q", "k", "v"))
    n = q.shape[0]
    s = q[query] @ k.T / 8 ** 0.5 + SLOPES6[head] * np.arange(n)
    s = np.where(np.arange(n) <= query, s, -np.inf)
    p = np.exp(s - s.max())
    p /= p.sum()

    # explain: the row from the float64 forward and the row from the trace both show the term
    for operands in ("weights", "trace"):
        from attnscope.explain.row import explain_model_row
        w = explain(text=TEXT, model=model, layer=layer, head=head, position=query) if operands == "weights" else \
            explain_model_row(TEXT, model, layer, head, position=query, operands="trace")
        np.testing.assert_array_equal(w.values["bias"], SLOPES6[head] * np.arange(n))
        np.testing.assert_allclose(w.values["weights"], p, rtol=0, atol=1e-6)  # its own trace: float32 noise
        assert max(w.meta["trace_max_abs_diff"].values()) <= 1e-5
        md, zh = w.render("markdown"), w.render("markdown", lang="zh")
        assert "position bias b_j added to the scaled scores" in md and "ALiBi's twin" in md
        assert "把位置偏置 b_j 加到缩放后的分数上" in zh and "ALiBi 的孪生方案" in zh

    # the viewer's data: the page adds slope_h · j (rows by key), and its weights are the model's
    d = data.build(tr)  # checks softmax(factor·q·kᵀ + bias) against the traced weights
    assert d["config"]["bias"]["scheme"] == NAME
    np.testing.assert_array_equal(np.asarray(d["config"]["bias"]["rows"]), _by_hand(6, n)[:, -1, :])
    row = R.trace_row(tr, layer, head, query)
    np.testing.assert_allclose(row["weights"], p, rtol=0, atol=1e-13)
    np.testing.assert_allclose(R.trace_weights(tr, layer, recorded=False), tr.step(layer, "weights").double().numpy()[0],
                               atol=1e-6)
