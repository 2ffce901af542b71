"""Qwen3 (QK-norm per head) and OLMo 2 (norms after the blocks, QK-norm over all heads): each one
family file, equal to transformers' eager Qwen3Model/Qwen3ForCausalLM and Olmo2Model/Olmo2ForCausalLM
on the tiny random checkpoints of tests/models/decoders/tiny.py (every parameter random, norms too).

Hidden states of every layer and attention weights to 1e-5 and logits to 1e-4, alone and in a
right-padded batch of two texts of different lengths; the weights land where the recipe says
(OLMo 2's ``post_attention_layernorm`` is the norm on attention's output, not Llama's norm before
the MLP); the trace has the recipe's names; QK-norm over all heads is what it says.
"""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors import safe_open

from tests.models.decoders.tiny import hf_run

FAMILIES = ("qwen3", "olmo2")
TEXTS = ["Every token looks at the tokens before it and decides how much to listen.",
         "我喜欢人工智能。北京是中国的首都。 A sliding window keeps each token's view to the most recent few tokens."]
TOL = 1e-5


def _base_model(folder, name):
    """transformers' base model (no LM head) of a causal-LM checkpoint, eager attention."""
    import transformers

    cls = {"qwen3": transformers.Qwen3Model, "olmo2": transformers.Olmo2Model}[name]
    return cls.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32).eval()


def _hidden(model, texts):
    """Every layer's output as transformers lists them: the embedding, layers 0 … n−2, the final norm."""
    tr = model.trace(texts, names=["embed.out", "layers.*.out", "final_norm", "layers.*.attn.weights"])
    n = model.config.n_layers
    hidden = [tr["embed.out"]] + [tr[f"layers.{i}.out"] for i in range(n - 1)] + [tr["final_norm"]]
    return hidden, [tr[f"layers.{i}.attn.weights"] for i in range(n)]


def _diff(xs, ys):
    return max(float((x.double() - y.double()).abs().max()) for x, y in zip(xs, ys))


def test_the_configs_say_what_the_families_are(decoders):
    q, o = decoders["qwen3"].config, decoders["olmo2"].config
    assert (q.norm, q.qk_norm, q.qk_norm_span, q.head_dim, q.bias, q.out_bias) == ("pre", True, "head", 16, True, True)
    assert (o.norm, o.qk_norm, o.qk_norm_span, o.bias) == ("post_block", True, "all", False)
    assert decoders["qwen3"].family == "qwen3" and decoders["olmo2"].family == "olmo2"


def test_olmo2_weights_land_where_the_recipe_says(decoders, decoder_dirs):
    model = decoders["olmo2"]
    layer = model.layers[1]
    assert not hasattr(layer, "ln1") and not hasattr(layer, "ln2")  # no norm before the blocks
    assert layer.attn.q_norm.weight.shape == (4 * 8,) and layer.attn.k_norm.weight.shape == (2 * 8,)
    with safe_open(str(decoder_dirs["olmo2"] / "model.safetensors"), "pt") as f:
        def hf(key):
            return f.get_tensor(f"model.layers.1.{key}")
        assert torch.equal(layer.ln_attn_post.weight, hf("post_attention_layernorm.weight"))
        assert torch.equal(layer.ln_ffn_post.weight, hf("post_feedforward_layernorm.weight"))
        assert torch.equal(layer.attn.q_norm.weight, hf("self_attn.q_norm.weight"))
        assert torch.equal(layer.attn.k_norm.weight, hf("self_attn.k_norm.weight"))
        assert not any(".input_layernorm." in k or "pre_feedforward" in k for k in f.keys())


@pytest.mark.parametrize("name", FAMILIES)
def test_every_layer_and_the_logits_equal_transformers(name, decoders, decoder_dirs, hf_decoders):
    model = decoders[name]
    base = _base_model(decoder_dirs[name], name)
    for text in TEXTS:
        ids = model.encode(text).input_ids
        ref = hf_run(hf_decoders(name), ids)  # Qwen3ForCausalLM / Olmo2ForCausalLM
        with torch.no_grad():
            ref_base = base(input_ids=ids, output_hidden_states=True, output_attentions=True)
            logits = model.lm_logits(model(ids))  # the plain forward: the fused kernel
        hidden, weights = _hidden(model, text)
        assert len(hidden) == len(ref_base.hidden_states) == model.config.n_layers + 1
        assert _diff(hidden, ref_base.hidden_states) <= TOL
        assert _diff(hidden, ref["hidden_states"]) <= TOL
        assert _diff(weights, ref_base.attentions) <= TOL and weights[0].shape == ref_base.attentions[0].shape
        assert float((hidden[-1] - ref_base.last_hidden_state).abs().max()) <= TOL
        assert float((logits - ref["logits"]).abs().max()) <= 1e-4


@pytest.mark.parametrize("name", FAMILIES)
def test_a_right_padded_batch_gives_each_text_what_it_gets_alone(name, decoders, hf_decoders):
    model = decoders[name]
    batch = model.encode(TEXTS)
    assert batch.lengths[0] < batch.lengths[1]  # the first text is padded
    hidden, weights = _hidden(model, TEXTS)
    with torch.no_grad():
        logits = model.lm_logits(model(batch.input_ids, batch.attention_mask))  # (B, L, V)
    for b, text in enumerate(TEXTS):
        n = batch.lengths[b]
        ref = hf_run(hf_decoders(name), model.encode(text).input_ids)
        assert _diff([h[b, :n] for h in hidden], [h[0] for h in ref["hidden_states"]]) <= TOL
        assert _diff([w[b, :, :n, :n] for w in weights], [a[0] for a in ref["attentions"]]) <= TOL
        assert all(float(w[b, :, :n, n:].abs().sum()) == 0.0 for w in weights)  # padded keys get nothing
        assert float((logits[b, :n] - ref["logits"][0]).abs().max()) <= 1e-4


def test_olmo2_trace_has_the_recipe_names_and_no_norm_before_the_blocks(decoders):
    model = decoders["olmo2"]
    c = model.config
    layer_names = [n.split(".", 2)[2] for n in model.hook_names if n.startswith("layers.0.")]
    own = [n for n in layer_names if "." not in n]
    assert own == list(c.recipe.points) == ["attn_in", "attn_post_norm", "attn_resid", "ffn_in", "ffn_post_norm",
                                             "ffn_resid", "out"]
    assert {"attn.q_normed", "attn.k_normed", "ffn.gate"} <= set(layer_names)
    tr = model.trace(TEXTS[0])
    assert torch.equal(tr["layers.0.attn_in"], tr["embed.out"])  # attention reads the stream itself
    assert torch.equal(tr["layers.0.ffn_in"], tr["layers.0.attn_resid"])
    resid = tr["layers.1.attn_in"] + tr["layers.1.attn_post_norm"]  # x + RMSNorm(attn.out)
    assert float((tr["layers.1.attn_resid"] - resid).abs().max()) == 0.0


def test_olmo2_qk_norm_spans_every_head(decoders):
    """q_normed (B, H, L, d) is RMSNorm over all H·d features of a token's query, split into heads
    afterwards — by hand in float64 from the traced q_proj and the checkpoint's q_norm weight."""
    model = decoders["olmo2"]
    tr = model.trace(TEXTS[0], names=["layers.1.attn.q_proj", "layers.1.attn.k_proj", "layers.1.attn.q_normed",
                                      "layers.1.attn.k_normed"])
    attn = model.layers[1].attn
    for step, norm, heads in (("q", attn.q_norm, 4), ("k", attn.k_norm, 2)):
        proj = tr[f"layers.1.attn.{step}_proj"].double()  # (1, heads, L, d)
        B, H, L, d = proj.shape
        flat = proj.transpose(1, 2).reshape(B, L, H * d)  # (1, L, H·d): a token's features, every head
        want = flat / torch.sqrt(flat.pow(2).mean(-1, keepdim=True) + model.config.layer_norm_eps) * norm.weight.double()
        want = want.view(B, L, H, d).transpose(1, 2)  # (1, H, L, d)
        got = tr[f"layers.1.attn.{step}_normed"]
        assert H == heads and got.shape == want.shape
        assert float((got.double() - want).abs().max()) <= 1e-5
        per_head = proj / torch.sqrt(proj.pow(2).mean(-1, keepdim=True) + model.config.layer_norm_eps)
        assert float((got.double() - per_head * norm.weight.double().view(H, 1, d)).abs().max()) > 1e-3  # not per head


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_olmo2_norms_round_as_transformers_in_half_precision(decoders, dtype):
    """OLMo 2's RMSNorm multiplies by its weight before casting back (Llama's after): in half
    precision the two roundings differ, and attnscope's norms take OLMo 2's, bit for bit."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm

    layer = decoders["olmo2"].layers[0]
    x = (torch.randn(4, 64, 32, generator=torch.Generator().manual_seed(11)) * 3).to(dtype)  # (B, L, d)
    for ours, eps in ((layer.ln_attn_post, layer.ln_attn_post.eps), (layer.attn.q_norm, layer.attn.q_norm.eps)):
        olmo, llama = Olmo2RMSNorm(ours.weight.shape[0], eps), LlamaRMSNorm(ours.weight.shape[0], eps)
        with torch.no_grad():
            olmo.weight.copy_(ours.weight)
            llama.weight.copy_(ours.weight)
            got = copy.deepcopy(ours).to(dtype)(x)  # a copy: the session's model stays float32
            assert torch.equal(got, olmo.to(dtype)(x))
            assert not torch.equal(got, llama.to(dtype)(x))  # the other rounding: the test can tell them apart
