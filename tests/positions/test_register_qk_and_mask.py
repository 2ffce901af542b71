"""A q/k transform and a mask are each one register_position() call, the twin of
test_register_alibi.py for the two other places a position scheme acts (issue 24 item 3):

* ``rotary_base500`` (acts on qk): rotary positions at base 500 instead of the checkpoint's 10000 —
  the torch tables from :class:`attnscope.positions.LayerRotary`, the float64 speeds 500^(−2i/d);
* ``window2`` (acts on mask, a layer type): each query sees itself and the key before it, with its
  own torch mask and float64 twin written here.

A tiny Llama (8 heads, 2 k/v heads) built with ``position="rotary_base500"`` and
``layer_types=["window2", "full"]`` is checked in torch, in the float64 reference, in explain's row
and in the viewer's data against attention written out here in float64: each pair (i, i + d/2)
turned as the complex number (a + ib)·e^{i·p·500^(−2i/d)}, keys j ≤ p (and p − j < 2 on layer 0),
softmax by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import attnscope
from attnscope import ConfigError
from attnscope.config import DecoderConfig
from attnscope.models.registry import FAMILIES
from attnscope.modules.decoder_attention import KVCache
from attnscope.positions import (
    LayerRotary,
    PositionScheme,
    get_position,
    mask_names,
    position_names,
    register_position,
    unregister_position,
)
from tests.models.decoders import tiny

QK, MASK, BASE = "rotary_base500", "window2", 500.0
TEXT = "the cat sat on the mat and the dog sat on the log"


def _window2(q_pos, k_pos, window):  # written apart from attnscope's causal_window_mask
    q, k = q_pos[..., :, None], k_pos[..., None, :]
    return (k <= q) & (k > q - 2)


def _window2_np(q_pos, k_pos, window):
    q, k = np.asarray(q_pos)[:, None], np.asarray(k_pos)[None, :]
    return (k <= q) & (k > q - 2)


@pytest.fixture(scope="module")
def schemes():
    register_position(PositionScheme(
        name=QK, acts_on="qk", build=lambda c: LayerRotary(c, theta=BASE),
        inv_freq=lambda c, i, n: (BASE ** (-np.arange(0, c.d_head, 2) / c.d_head), BASE, None),
        words={"en": "Positions: rotary at base 500.", "zh": "位置：底数 500 的旋转位置编码。"}))
    register_position(PositionScheme(name=MASK, acts_on="mask", mask=_window2, mask_np=_window2_np,
                                     window=lambda c: 2))
    yield
    unregister_position(QK)
    unregister_position(MASK)
    assert QK not in position_names() and MASK not in mask_names()


@pytest.fixture(scope="module")
def models(schemes, tmp_path_factory):
    """The tiny Llama as saved, and the same weights with the two new schemes."""
    base = attnscope.load(tiny.llama_gqa(tmp_path_factory.mktemp("llama")))
    cfg = dataclasses.replace(base.config, position=QK, layer_types=[MASK, "full"])
    model = type(base)(cfg, FAMILIES[base.family], name="twin", tokenizer=base.tokenizer, path=base.path).eval()
    model.load_state_dict(base.state_dict())
    return base, model


def _turn(x, base=BASE):
    """x (…, n, d) with row p's pair (i, i + d/2) turned by p·base^(−2i/d), as complex numbers."""
    n, d = x.shape[-2:]
    z = x[..., : d // 2] + 1j * x[..., d // 2:]
    z = z * np.exp(1j * np.arange(n)[:, None] * base ** (-2.0 * np.arange(d // 2) / d))
    return np.concatenate([z.real, z.imag], -1)


def _weights(q_pre, k_pre, window):
    """Every head's weights (H, n, n) from the operands before the rotation, (H, n, d) and (H_kv, n, d)."""
    H, n, d = q_pre.shape
    k = np.repeat(_turn(np.asarray(k_pre, dtype=np.float64)), H // k_pre.shape[0], axis=0)  # (H, n, d)
    s = _turn(np.asarray(q_pre, dtype=np.float64)) @ k.transpose(0, 2, 1) / np.sqrt(d)  # (H, n, n)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    s = np.where((j <= i) & ((i - j < window) if window else True), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_schemes_register_where_they_act(schemes):
    assert get_position(QK).acts_on == "qk" and get_position(MASK).acts_on == "mask"
    assert QK in position_names() and MASK not in position_names() and MASK in mask_names()
    with pytest.raises(ConfigError, match="needs its torch mask"):
        register_position(PositionScheme(name="half_mask", acts_on="mask", mask=_window2))
    with pytest.raises(ConfigError, match="position = 'window2' is unknown"):
        DecoderConfig(position=MASK)  # a mask is a layer type, not config.position
    with pytest.raises(ConfigError, match="a decoder's positions turn q and k"):
        DecoderConfig(position="alibi")
    with pytest.raises(ConfigError, match="layer_types must list"):
        DecoderConfig(n_layers=2, layer_types=["full", "window3"])


def test_the_torch_model_turns_and_masks_by_the_new_schemes(models):
    base, model = models
    names = ["layers.*.attn.q_proj", "layers.*.attn.k_proj", "layers.*.attn.weights"]
    tr, plain = model.trace(TEXT, names=names), base.trace(TEXT, names=names)
    n = tr.length(0)
    assert n > 4
    for i, window in ((0, 2), (1, None)):
        got = tr[f"layers.{i}.attn.weights"][0].double().numpy()  # (H, n, n)
        want = _weights(tr[f"layers.{i}.attn.q_proj"][0], tr[f"layers.{i}.attn.k_proj"][0], window)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        # the checkpoint's own positions give other weights: the schemes changed something
        assert np.abs(got - plain[f"layers.{i}.attn.weights"][0].double().numpy()).max() > 1e-2
    assert (tr.mask(0, text=0)[0].numpy() == _window2_np(np.arange(n), np.arange(n), 2)).all()
    # with the key/value cache, one token at a time: each row is the full pass's (keys kept turned)
    ids, cache = model.encode(TEXT).input_ids, KVCache(model.config.n_layers)
    with torch.no_grad():
        rows = [model.decode(ids[:, t:t + 1], cache=cache, need_weights=True)[1] for t in range(n)]
    for i in (0, 1):
        for t in range(n):
            full = tr[f"layers.{i}.attn.weights"][0, :, t, : t + 1]
            assert float((rows[t][i][0, :, 0] - full).abs().max()) <= 1e-5


def test_the_float64_reference_and_explain_take_the_schemes(models):
    from attnscope.explain import explain
    from attnscope.reference_model import forward

    _, model = models
    f = forward(model, TEXT)  # float64 from the weights
    for i, window in ((0, 2), (1, None)):
        want = _weights(f[f"layers.{i}.attn.q_proj"], f[f"layers.{i}.attn.k_proj"], window)
        np.testing.assert_allclose(f[f"layers.{i}.attn.weights"], want, rtol=0, atol=1e-12)
    want = _weights(f["layers.0.attn.q_proj"], f["layers.0.attn.k_proj"], 2)
    head, query = 5, 6
    w = explain(text=TEXT, model=model, layer=0, head=head, position=query)
    np.testing.assert_allclose(w.values["weights"], want[head, query], rtol=0, atol=1e-12)
    assert np.isinf(w.values["masked"][: query - 1]).all() and np.isfinite(w.values["masked"][query - 1: query + 1]).all()
    assert w.meta["rope"]["base"] == BASE and w.meta["window"] == 2


def test_the_viewer_data_takes_the_schemes(models):
    from attnscope import reference as R
    from attnscope.viewer import data

    _, model = models
    tr = model.trace(TEXT)
    d = data.build(tr)  # checks the page's softmax (its own rotation, its windows) against the traced weights
    assert d["config"]["windows"] == [2, None]
    d_head = model.config.d_head
    for rope in d["config"]["rope"]:
        assert rope["base"] == BASE
        np.testing.assert_allclose(rope["inv_freq"], BASE ** (-2.0 * np.arange(d_head // 2) / d_head), rtol=1e-15)
    want = _weights(tr["layers.0.attn.q_proj"][0], tr["layers.0.attn.k_proj"][0], 2)
    row = R.trace_row(tr, 0, 3, 7)
    np.testing.assert_allclose(row["weights"], want[3, 7], rtol=0, atol=1e-6)
