"""A layer recipe registered in one call gets a correct worked path with no code of the path naming
it: a tiny decoder built from ``DecoderConfig(norm=…)`` — OLMo 2's ``post_block`` (registered by one
call in attnscope.recipe) and a recipe this test registers — shows its layer's steps in the recipe's
order, each value equal to the float64 forward from the weights and to the torch model in float64,
in the recipe's words (or the generic words of its ops)."""

from __future__ import annotations

import copy
import dataclasses
import re

import numpy as np
import pytest
import torch

import attnscope
from attnscope import reference_model as RM
from attnscope.explain.path import explain_path
from attnscope.models.decoder_model import DecoderModel
from attnscope.recipe import BLOCK_OPS, LAYER_RECIPES
from tests.models.decoders import tiny as TD

TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return attnscope.load(TD.llama_gqa(tmp_path_factory.mktemp("path-new-recipe") / "llama"))


def _model(base, norm: str, seed: int):
    """``base``'s decoder with the layer recipe ``norm``: its weights where the names agree, every
    new norm's scale random around 1 (a norm applied in the wrong place shows)."""
    m = DecoderModel(dataclasses.replace(base.config, norm=norm), base._family, name=f"tiny-{norm}",
                     tokenizer=base.tokenizer).eval()
    theirs = base.state_dict()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(theirs[name] if name in theirs else 1.0 + 0.3 * torch.randn(p.shape, generator=g))
    return m


@pytest.mark.parametrize("norm", ["post_block", "test_pre_attn_norm"])
def test_a_registered_recipe_gets_its_worked_path(llama, norm, pre_attn_norm):
    m = _model(llama, norm, seed=3)
    recipe = m.layers[1].recipe
    assert recipe is LAYER_RECIPES[norm]
    w = explain_path(TEXT, m, layer=1, head=5, position=6)
    f = RM.forward(m, TEXT, upto=1)
    f64 = copy.deepcopy(m).double().trace(TEXT)
    want = [f"layers.1.{s.name}.out" if s.op in BLOCK_OPS else f"layers.1.{s.name}" for s in recipe.steps]
    assert [e["trace"] for e in w.meta["path"] if e["trace"] in want] == want
    for name in want:
        np.testing.assert_array_equal(w.values[name], f[name][6], err_msg=name)
        theirs = f64[name][0][6].numpy()
        np.testing.assert_allclose(w.values[name], theirs, rtol=0, atol=1e-10 * max(1.0, float(np.abs(theirs).max())),
                                   err_msg=name)
    # the norm after attention changes what is added: the residual is x + that norm's output
    np.testing.assert_allclose(w.values["layers.1.attn_resid"],
                               w.values["layers.0.out"] + w.values["layers.1.attn_post_norm"], rtol=0, atol=1e-12)
    md = w.render("markdown")
    titles = re.findall(r"^## Step \d+: (.*)$", md, re.M)
    zh = w.render("markdown", lang="zh")
    assert "Gemma's RMSNorm" not in md
    if norm == "post_block":
        assert "This layer has no norm before attention" in md and "No norm after the sum" in md
        assert titles[-11:-1] == ["the heads side by side", "mixing the heads: W_O", "the norm after attention",
                                 "the residual connection", "the feed-forward's input",
                                 "the gated feed-forward: gate, up and the activation", "the feed-forward's output: W_2",
                                 "the norm after the feed-forward", "the second residual connection",
                                 "the layer's output"]
        assert "No norm before the feed-forward: it reads layers.1.attn_resid itself." in md
        assert "这一层在注意力之前没有归一化" in zh
    else:
        assert "RMSNorm before attention" in md and "the norm after attention" in titles
        assert "This layer normalises what attention adds before adding it to the residual stream." in md


@pytest.mark.parametrize("operands", ["weights", "trace"])
def test_olmo2_row_qk_norm_over_all_heads(tmp_path, operands):
    """OLMo 2 normalises each token's q (and k) over all heads' features before the split: the row
    shows this head's part of q̂ and of every k̂, equal to the torch model's q_normed, k_normed in
    float64 (from the float32 trace's operands: within float32 rounding); the RMS is over H·d."""
    from attnscope.explain.row import explain_model_row
    m = attnscope.load(TD.olmo2(tmp_path / "olmo2"))
    c = m.config
    assert c.qk_norm_span == "all"
    w = explain_model_row(TEXT, m, layer=1, head=3, position=6, operands=operands)
    tr = copy.deepcopy(m).double().trace(TEXT)
    g = 3 // (c.n_heads // c.kv_heads)
    tol = 1e-12 if operands == "weights" else 1e-5
    np.testing.assert_allclose(w.values["q_normed"], tr["layers.1.attn.q_normed"][0][3][6].numpy(), rtol=0, atol=tol)
    np.testing.assert_allclose(w.values["k_normed"], tr["layers.1.attn.k_normed"][0][g].numpy(), rtol=0, atol=tol)
    q_all = tr["layers.1.attn.q_proj"][0][:, 6].reshape(-1).numpy()  # (H·d,): every head's q of the token
    md = w.render("markdown")
    assert f"{c.n_heads * c.d_head} features (its k: {c.kv_heads * c.d_head})" in md
    rms = float(np.sqrt(np.mean(q_all * q_all) + float(m.layers[1].attn.q_norm.eps)))
    row = next(ln for ln in md.splitlines() if ln.startswith("| q 6:"))
    assert f"| {rms:.4f} |" in row
