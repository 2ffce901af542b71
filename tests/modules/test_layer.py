"""RecipeLayer: one torch layer that runs any registered layer recipe.

Each recipe is checked against the layer written out by hand from the same sub-modules in float64
(the norms, the attention block and the MLP called one by one in the order the recipe's text
says), the hook points are registered in forward order under the recipe's names, dropout falls
on each block's output only, and a recipe registered in one call runs in a decoder stack.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnscope.config import DecoderConfig, TransformerConfig
from attnscope.errors import ConfigError
from attnscope.hooks import HookPoint, Recorder, name_hook_points
from attnscope.modules import DecoderLayer, EncoderLayer, TransformerDecoder
from attnscope.modules.cross_decoder import DecoderBlock, EncoderBlock
from attnscope.modules.layer import RecipeLayer
from attnscope.modules.seq2seq import Seq2SeqConfig
from attnscope.positions import Rotary
from attnscope.recipe import CROSS_RECIPES, LAYER_RECIPES


def _randomise(module: torch.nn.Module, seed: int) -> None:
    """Every parameter random (norm scales too), so a norm applied in the wrong place shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.3 + (1.0 if p.dim() == 1 else 0.0))


def _decoder_config(norm: str, **kw) -> DecoderConfig:
    return DecoderConfig(vocab_size=40, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, n_layers=2, max_positions=32,
                         norm=norm, **kw)


def _tables(c: DecoderConfig, L: int, dtype=torch.float64):
    return Rotary(c.d_head, c.rope_theta, None, max_positions=c.max_positions).cos_sin(
        torch.arange(L)[None], dtype)  # (1, 1, L, d_head) × 2


# by hand: the four recipes as their texts in attnscope.recipe say, block by block
def _by_hand(layer, norm: str, x, attn):
    if norm == "post":
        r = x + attn(x)
        f_in = layer.ln1(r)
        return layer.ln2(f_in + layer.ffn(f_in))
    if norm == "pre":
        r = x + attn(layer.ln1(x))
        return r + layer.ffn(layer.ln2(r))
    if norm == "sandwich":
        r = x + layer.ln_attn_post(attn(layer.ln1(x)))
        return r + layer.ln_ffn_post(layer.ffn(layer.ln2(r)))
    assert norm == "post_block"
    r = x + layer.ln_attn_post(attn(x))
    return r + layer.ln_ffn_post(layer.ffn(r))


NORMS = ("post", "pre", "sandwich", "post_block")


@pytest.mark.parametrize("norm", NORMS)
def test_decoder_layer_runs_each_recipe(norm):
    c = _decoder_config(norm)
    layer = DecoderLayer(c, 0).double().eval()
    _randomise(layer, 1)
    x = torch.randn(2, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))  # (B, L, d)
    cos, sin = _tables(c, 7)
    with torch.no_grad():
        want = _by_hand(layer, norm, x, lambda a: layer.attn(a, cos, sin, causal=True))  # (B, L, d)
        got = layer(x, cos, sin, causal=True)
        got_w, w = layer(x, cos, sin, causal=True, need_weights=True)
    assert float((got - want).abs().max()) < 1e-12
    assert float((got_w - got).abs().max()) < 1e-12 and w.shape == (2, 4, 7, 7)  # weights formed: not the fused kernel
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 7, dtype=torch.float64))
    assert float(w.triu(1).abs().max()) == 0.0  # causal


@pytest.mark.parametrize("norm", NORMS)
def test_encoder_layer_runs_each_recipe(norm):
    c = TransformerConfig(vocab_size=40, d_model=16, n_heads=4, d_ff=24, n_layers=1, norm=norm, dropout=0.0,
                          attn_dropout=0.0)
    layer = EncoderLayer(c).double().eval()
    _randomise(layer, 3)
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(4))  # (B, L, d)
    kpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])  # (B, L): the second text is padded
    with torch.no_grad():
        want = _by_hand(layer, norm, x, lambda a: layer.attn(a, key_padding_mask=kpm))
        got = layer(x, key_padding_mask=kpm)
    assert float((got - want).abs().max()) < 1e-12


@pytest.mark.parametrize("norm", NORMS)
def test_hook_points_are_the_recipe_steps_in_forward_order(norm):
    c = _decoder_config(norm, qk_norm=True)
    layer = DecoderLayer(c, 0)
    recipe = LAYER_RECIPES[norm]
    points = [n for n, m in layer.named_modules() if isinstance(m, HookPoint) and "." not in n]
    assert points == list(recipe.points)
    children = [n for n, _ in layer.named_children() if n != "drop"]
    # each norm just before the step that applies it, each block at its step
    want = []
    for step in recipe.steps:
        if step.op == "norm" and step.module not in want:
            want.append(step.module)
        want.append(step.name)
    assert children == want
    # the layer's points and the blocks' outputs fire in the order they are registered
    seen = []
    ends = [n for n in name_hook_points(layer) if "." not in n or n in ("attn.out", "ffn.out")]
    for name in ends:
        layer.get_submodule(name).add_hook(lambda t, n: seen.append(n))
    cos, sin = _tables(c, 3, torch.float32)
    with torch.no_grad():
        layer(torch.randn(1, 3, 16), cos, sin)
    assert seen == ends == [f"{s.name}.out" if s.op in ("attention", "mlp") else s.name for s in recipe.steps]


def test_norm_modules_keep_their_names_and_state_dict_keys():
    sandwich = DecoderLayer(_decoder_config("sandwich"), 0)
    assert {k.split(".")[0] for k in sandwich.state_dict() if k.startswith("ln")} == \
        {"ln1", "ln_attn_post", "ln2", "ln_ffn_post"}
    olmo = DecoderLayer(_decoder_config("post_block"), 0)
    assert {k.split(".")[0] for k in olmo.state_dict() if k.startswith("ln")} == {"ln_attn_post", "ln_ffn_post"}
    bert = EncoderLayer(TransformerConfig(d_model=16, n_heads=4, d_ff=24, n_layers=1))
    assert {k.split(".")[0] for k in bert.state_dict() if k.startswith("ln")} == {"ln1", "ln2"}


def test_dropout_falls_on_the_blocks_outputs_only():
    """``attn_resid = x + Dropout(attn)``: x itself is never dropped (the same random masks by hand)."""
    c = TransformerConfig(vocab_size=40, d_model=16, n_heads=4, d_ff=24, n_layers=1, norm="pre", dropout=0.5,
                          attn_dropout=0.0)
    layer = EncoderLayer(c).double().train()
    _randomise(layer, 5)
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(6))  # (B, L, d)
    torch.manual_seed(7)
    got = layer(x).detach()
    torch.manual_seed(7)
    r = x + F.dropout(layer.attn(layer.ln1(x)), 0.5, training=True)
    want = (r + F.dropout(layer.ffn(layer.ln2(r)), 0.5, training=True)).detach()
    assert float((got - want).abs().max()) < 1e-12
    layer.eval()
    with torch.no_grad():
        assert float((layer(x) - _by_hand(layer, "pre", x, layer.attn)).abs().max()) < 1e-12


def test_a_new_recipe_is_one_call_and_a_decoder_runs_it(pre_attn_norm):
    """A layer variant no family has (a norm after attention, before its residual sum; the
    ``pre_attn_norm`` fixture registers it in one call): a decoder stack builds it, runs it, and
    names its steps."""
    name = pre_attn_norm.name
    c = _decoder_config(name)
    model = TransformerDecoder(c).double().eval()
    _randomise(model, 8)
    ids = torch.tensor([[1, 5, 7, 9, 3, 2]])  # (1, L)
    names = list(name_hook_points(model))
    assert [n for n in names if n.startswith("layers.0.") and n.count(".") == 2] == \
        [f"layers.0.{s}" for s in ("attn_in", "attn_post_norm", "attn_resid", "ffn_in", "ffn_resid", "out")]
    sink: dict = {}
    for p in name_hook_points(model).values():
        p.add_hook(Recorder(sink))
    with torch.no_grad():
        out = model.decode(ids)  # (1, L, d)
        x = model.embed(ids)  # (1, L, d)
        cos, sin = _tables(c, ids.shape[1])
        for layer in model.layers:
            r = x + layer.ln_attn_post(layer.attn(layer.ln1(x), cos, sin, causal=True))
            x = r + layer.ffn(layer.ln2(r))
        want = model.ln_f(x)
    assert float((out - want).abs().max()) < 1e-12
    assert float((sink["layers.1.out"] - x).abs().max()) < 1e-12
    assert isinstance(model.layers[0], RecipeLayer) and model.layers[0].recipe.name == name
    LAYER_RECIPES.pop(name)
    with pytest.raises(ConfigError, match=f"norm = '{name}' is unknown"):
        _decoder_config(name)


def test_the_encoder_decoder_layers_are_recipe_layers():
    """T5's and BART's decoder layer: the cross recipes, cross-attention a block of its own that gets
    the encoder's output; the weights of both attentions come back in order."""
    for norm in ("pre", "post"):
        c = Seq2SeqConfig(vocab_size=40, d_model=16, n_heads=4, n_layers=1, n_decoder_layers=1, d_ff=24, norm=norm,
                          dropout=0.0, attn_dropout=0.0)
        enc, dec = EncoderBlock(c, 0).double().eval(), DecoderBlock(c, 0).double().eval()
        assert enc.recipe.name == norm and dec.recipe is CROSS_RECIPES[norm]
        assert [n for n, _ in dec.named_children() if n != "drop"] == \
            [s for step in dec.recipe.steps for s in ((step.module,) if step.op == "norm" else ()) + (step.name,)]
        _randomise(dec, 9)
        g = torch.Generator().manual_seed(10)
        x, src = torch.randn(2, 4, 16, generator=g, dtype=torch.float64), torch.randn(2, 6, 16, generator=g,
                                                                                       dtype=torch.float64)
        with torch.no_grad():
            out, w_self, w_cross = dec(x, src, causal=True, need_weights=True)
            if norm == "pre":
                r = x + dec.self_attn(dec.ln1(x), causal=True)
                r2 = r + dec.cross_attn(dec.ln2(r), src)
                want = r2 + dec.ffn(dec.ln3(r2))
            else:
                c_in = dec.ln1(x + dec.self_attn(x, causal=True))
                f_in = dec.ln2(c_in + dec.cross_attn(c_in, src))
                want = dec.ln3(f_in + dec.ffn(f_in))
        assert float((out - want).abs().max()) < 1e-12
        assert w_self.shape == (2, 4, 4, 4) and w_cross.shape == (2, 4, 4, 6)
    with pytest.raises(ConfigError, match="has a cross_attention step 'cross_attn'; the layer was given no module"):
        RecipeLayer(CROSS_RECIPES["pre"], attn=torch.nn.Identity(), ffn=torch.nn.Identity(), norm=torch.nn.Identity)
