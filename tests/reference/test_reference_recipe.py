"""The float64 forward walks the layer recipe (attnscope.recipe, reference_model_blocks.run_layer):
a recipe registered in one call runs in it and agrees with the torch model that runs the same
recipe; a position scheme that acts on the scores (ALiBi, BLOOM) is added there; cross-attention
is a block step of the encoder–decoder's decoder recipes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import attnscope
from attnscope import reference_model as RM
from attnscope.models.registry import family_for
from attnscope.recipe import parse_recipe
from attnscope.reference_model_blocks import layer_recipe, qk_norm
from attnscope.reference_model_seq2seq import DECODER_RECIPES
from attnscope.testing import tiny as T1
from tests.models.decoders import tiny as TD

EN = "The quick brown fox jumps over the lazy dog because it was tired."

def _with_recipe(model, recipe: str, model_type: str, seed: int):
    """``model``'s twin whose layers run ``recipe``: the same weights, the new norms random."""
    cfg = dataclasses.replace(model.config, norm=recipe)
    twin = type(model)(cfg, family_for(model_type), name=f"{model.name}-{recipe}", tokenizer=model.tokenizer)
    missing, unexpected = twin.load_state_dict(model.state_dict(), strict=False)
    assert missing and all(".ln_attn_post." in k for k in missing) and not unexpected
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in twin.layers:
            w = layer.ln_attn_post.weight
            w.copy_(1.0 + 0.3 * torch.randn(w.shape, generator=g))  # (d,)
            if getattr(layer.ln_attn_post, "bias", None) is not None:
                layer.ln_attn_post.bias.copy_(0.1 * torch.randn(w.shape, generator=g))
    return twin.eval()


def _agrees_with_trace(model, text: str, tol: float) -> list[str]:
    """Every trace name the float64 forward and the model's float32 trace share agree to ``tol``
    (relative to the step's largest value); returns the names compared."""
    f = RM.forward(model, text)
    known = set(model.hook_names)
    names = [k for k in f if k in known]
    tr = model.trace(text, names=names)
    for k in names:
        ours, theirs = f[k], tr[k][0].double().numpy()
        fin = np.isfinite(ours)
        assert np.array_equal(fin, np.isfinite(theirs)), k
        scale = max(1.0, float(np.abs(ours[fin]).max()))
        assert float(np.abs(ours[fin] - theirs[fin]).max(initial=0.0)) <= tol * scale, k
    return names


@pytest.mark.parametrize("build,model_type", [(TD.llama_gqa, "llama"), (T1.tiny_bert, "bert")])
def test_a_recipe_registered_in_one_call_runs_in_the_float64_forward(pre_attn_norm, tmp_path, build, model_type):
    base = attnscope.load(build(tmp_path / model_type))
    model = _with_recipe(base, pre_attn_norm.name, model_type, seed=7)
    assert layer_recipe(model.layers[0], model.config) is pre_attn_norm
    f = RM.forward(model, EN)
    names = _agrees_with_trace(model, EN, 1e-5)
    n = model.config.n_layers
    for i in range(n):
        # the new step is the norm of the block's output, and the residual, compared with the
        # torch model's, reads it
        assert f"layers.{i}.attn_resid" in names and f"layers.{i}.ffn_in" in names
        np.testing.assert_array_equal(f[f"layers.{i}.attn_resid"], RM.layer_input(f, i) + f[f"layers.{i}.attn_post_norm"])
    # the extra norm changes the numbers: the float64 forward of the base model differs
    assert np.abs(RM.forward(base, EN)[f"layers.{n - 1}.out"] - f[f"layers.{n - 1}.out"]).max() > 1e-3


def _hidden_states(f: dict, n_layers: int) -> list:
    """transformers' convention: what enters layer 0, each layer's output, the last after the final norm."""
    hs = [RM.layer_input(f, 0)] + [f[f"layers.{i}.out"] for i in range(n_layers)]
    if "final_norm" in f:
        hs[-1] = f["final_norm"]
    return hs


@pytest.mark.parametrize("build", [T1.tiny_bloom, T1.tiny_bloom_6heads])
def test_alibi_in_the_float64_forward_equals_transformers(tmp_path, build):
    """BLOOM's ALiBi term (a position scheme that acts on the scores) is added to every layer's
    scaled scores: ``attn.bias`` is there, and the hidden states are transformers' (float32) to 1e-5."""
    folder = build(tmp_path / "bloom")
    model = attnscope.load(folder)
    f = RM.forward(model, EN)
    n, L = model.config.n_layers, len(f["tokens"])
    bias = f["layers.0.attn.bias"]  # (H, L, L): slope_h · key position
    assert bias.shape == (model.config.n_heads, L, L)
    np.testing.assert_array_equal(f["layers.0.attn.masked"][:, -1], f["layers.0.attn.scaled"][:, -1] + bias[:, -1])
    b = model.encode(EN)
    hf = TD.hf_run(TD.hf_model(folder), b.input_ids)
    for i, (ours, theirs) in enumerate(zip(_hidden_states(f, n), hf["hidden_states"])):
        theirs = theirs[0].double().numpy()
        assert np.abs(ours - theirs).max() <= 1e-5 * max(1.0, np.abs(theirs).max()), i
    for i in range(n):
        np.testing.assert_allclose(f[f"layers.{i}.attn.weights"], hf["attentions"][i][0].double().numpy(), rtol=0, atol=2e-6)
    _agrees_with_trace(model, EN, 1e-5)


def test_qk_norm_over_all_heads_is_one_rmsnorm_before_the_split():
    """``qk_norm_span="all"`` (OLMo 2): one RMSNorm over H·d_head features, then the head split; "head":
    each head over its own d_head. Written out by hand on a (2, 3, 4) array."""
    from attnscope.modules.rmsnorm import RMSNorm

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4))  # (H, L, d_head)
    for span, width in (("all", 8), ("head", 4)):
        norm = RMSNorm(width, 1e-6)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor(rng.normal(size=width)))
        w = norm.weight.detach().double().numpy()
        if span == "all":
            flat = np.concatenate([x[0], x[1]], axis=-1)  # (L, H·d): head 0's features, then head 1's
            y = flat / np.sqrt((flat ** 2).mean(-1, keepdims=True) + 1e-6) * w
            want = np.stack([y[:, :4], y[:, 4:]])
        else:
            want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * w
        np.testing.assert_allclose(qk_norm(x, norm, span), want, rtol=0, atol=1e-14)


def test_cross_attention_is_a_block_step_of_the_decoder_recipes():
    recipe = DECODER_RECIPES["pre"]
    assert recipe.blocks == ("self_attn", "cross_attn", "ffn")
    assert "cross_attn" not in recipe.points and "cross_attn_resid" in recipe.points
    assert recipe.step("cross_attn").op == "cross_attention" and recipe.norms == ("ln1", "ln2", "ln3")
    assert DECODER_RECIPES["post"].step("out").module == "ln3"
    # any other call is still a norm module
    other = parse_recipe("t", "a = attention(x)\nb = cross(a)\nc = mlp(b)\nout = c + a")
    assert other.step("b").op == "norm" and other.step("b").module == "cross"


@pytest.mark.parametrize("name", ["qwen3", "olmo2"])
def test_qwen3_and_olmo2_in_the_float64_forward_equal_transformers(tmp_path, name):
    """Qwen3 (``pre``, QK-norm per head, head_dim ≠ d/H, biases) and OLMo 2 (``post_block``: norms on
    the blocks' outputs only; QK-norm over all heads' features): every layer's hidden state and
    attention weights against transformers' float32 eager model, and every shared trace name
    against attnscope's own float32 trace."""
    folder = TD.BUILDERS[name](tmp_path / name)
    model = attnscope.load(folder)
    assert layer_recipe(model.layers[0], model.config).name == {"qwen3": "pre", "olmo2": "post_block"}[name]
    f = RM.forward(model, EN)
    n = model.config.n_layers
    hf = TD.hf_run(TD.hf_model(folder), model.encode(EN).input_ids)
    for i, (ours, theirs) in enumerate(zip(_hidden_states(f, n), hf["hidden_states"])):
        theirs = theirs[0].double().numpy()
        assert np.abs(ours - theirs).max() <= 1e-5 * max(1.0, np.abs(theirs).max()), i
    for i in range(n):
        np.testing.assert_allclose(f[f"layers.{i}.attn.weights"], hf["attentions"][i][0].double().numpy(), rtol=0, atol=2e-6)
        assert f"layers.{i}.attn.q_normed" in f and (f"layers.{i}.attn_in" in f)
    if name == "olmo2":  # no norm before the blocks: attention reads the layer's input itself
        np.testing.assert_array_equal(f["layers.1.attn_in"], f["layers.0.out"])
    names = _agrees_with_trace(model, EN, 1e-5)
    assert "layers.1.attn.q_normed" in names and "layers.1.ffn_resid" in names
