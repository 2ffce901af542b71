"""explain --path for DeBERTa (its three score terms and relative table) and the encoder–decoder
families (a source token through a T5/BART encoder layer, a target token through a decoder layer:
causal self-attention, cross-attention, feed-forward): every value against transformers' eager
models of the same tiny checkpoints run in float64, read through forward hooks step by step; the
outputs in Markdown, JSON and Chinese; one clear error per misfit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from attnscope import InputError
from attnscope.cli import main
from attnscope.explain import explain
from tests.models.encoders.fixtures import encoder_dirs, encoders, hf_encoders  # noqa: F401
from tests.models.seq2seq.fixtures import hf_seq2seq_models, seq2seq, seq2seq_dirs  # noqa: F401
from tests.reference.test_reference_model_relative import _patch_t5_norm_float64

from .reference import half_up

SOURCE = "summarize: Queries and keys; values too? Yes, every token looks at every other token."
TARGET = "Every token looks at the others."


def _agree(ours, theirs, tol, what):
    theirs = np.asarray(theirs, dtype=np.float64)
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=0, atol=tol * max(1.0, float(np.abs(theirs).max())),
                               err_msg=what)


def _record(mods: dict, first_only=("q", "k")):
    seen: dict = {}

    def hook(key, use_input=False):
        def f(m, i, o):
            if key in first_only and key in seen:
                return None  # DeBERTa's shared query/key projections also project the relative table
            seen[key] = (i[0] if use_input else o)[0].detach().double().numpy()
        return f
    handles = [m.register_forward_hook(hook(k, k.endswith("_in"))) for k, m in mods.items()]
    return seen, handles


@pytest.mark.parametrize("name, text, layer, head, pos", [
    ("deberta_v2", "我喜欢人工智能和自然语言处理", 1, 2, 3),
    ("deberta_v3", "The quick brown fox jumps over the lazy dog.", 1, 1, 4),
    ("deberta_c2p", "the cat sat on the mat because it was tired", 0, 1, 2),
])
def test_deberta_path_equals_transformers_float64(name, text, layer, head, pos, encoders, hf_encoders):  # noqa: F811
    model, hf = encoders[name], hf_encoders(name).double()
    w = explain(text=text, model=model, layer=layer, head=head, position=pos, path=True)
    v, cfg = w.values, model.config
    lay = hf.encoder.layer[layer]
    seen, handles = _record({"emb": hf.embeddings.LayerNorm, "q": lay.attention.self.query_proj,
                             "k": lay.attention.self.key_proj, "attn_out": lay.attention.output.dense,
                             "ln1": lay.attention.output.LayerNorm, "hid": lay.intermediate,
                             "ffo": lay.output.dense, "out": lay.output.LayerNorm})
    b = model.encode(text)
    kw = {"token_type_ids": b.token_type_ids} if cfg.type_vocab_size > 0 else {}
    try:
        with torch.no_grad():
            o = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, output_hidden_states=True,
                   output_attentions=True, **kw)
    finally:
        for h in handles:
            h.remove()
    # transformers rounds √(d·scale_factor) to float32 (exact only for c2p alone: √16)
    tol = 1e-12 if name == "deberta_c2p" else 1e-7
    d, p = cfg.d_head, f"layers.{layer}"
    _agree(v["embed.out"], seen["emb"][pos], 1e-13, "embed.out")
    if layer:
        _agree(v[f"layers.{layer - 1}.out"], o.hidden_states[layer][0, pos], tol, "layer input")
    _agree(v[f"{p}.attn.q[{head}]"], seen["q"][pos, head * d:(head + 1) * d], tol, "q")
    _agree(v[f"{p}.attn.k[{head}]"], seen["k"][:, head * d:(head + 1) * d], tol, "K")
    _agree(v["weights"], o.attentions[layer][0, head, pos], tol, "weights")
    _agree(v["c2c"] + v["c2p"] + v["p2c"], np.log(o.attentions[layer][0, head, pos].numpy()) / cfg.query_scale
           - np.log(o.attentions[layer][0, head, pos].numpy()).max() / cfg.query_scale + (v["scores"]).max(), 1e-5,
           "the three terms are what the softmax read")
    assert cfg.query_scale == pytest.approx(1 / math.sqrt(d * (1 + len(hf.config.pos_att_type))), rel=1e-15)
    for key, ref in (("attn.out", "attn_out"), ("ffn_in", "ln1"), ("ffn.hidden", "hid"), ("ffn.out", "ffo"),
                     ("out", "out")):
        _agree(v[f"{p}.{key}"], seen[ref][pos], tol, key)
    _agree(v[f"{p}.out"], o.hidden_states[layer + 1][0, pos], tol, "layer output")
    keys = [s.key for s in w.steps]
    assert keys.index("relative") < keys.index("positions") < keys.index("scores") and keys[-1] == "summary"
    assert ("embed_projected" in keys) == (name == "deberta_v2")
    if name == "deberta_v2":  # E → d before the LayerNorm
        assert keys.index("embed_projected") < keys.index("embed_norm")
    md = w.render("markdown")
    assert f"Trace name: {p}.attn.scores_c2c[{head}], {p}.attn.scores_c2p[{head}]" in md
    assert f"| {half_up(v[f'{p}.out'][0], 4)} |" in md or half_up(v[f"{p}.out"][0], 4) in md
    zh = w.render("markdown", lang="zh")
    assert "相对位置" in zh and "Trace name" not in zh
    js = json.loads(w.render("json"))
    assert js["meta"]["kind"] == "path" and max(js["meta"]["trace_path_max_abs_diff"].values()) < 1e-4


def _t5_hooks(hf, stack, layer, t5):
    if t5:
        blk = getattr(hf, stack).block[layer]
        mods = {"q": blk.layer[0].SelfAttention.q, "ffo": blk.layer[-1].DenseReluDense.wo,
                "hid_in": blk.layer[-1].DenseReluDense.wo}
        if stack == "decoder":
            mods["cq"] = blk.layer[1].EncDecAttention.q
    else:
        blk = getattr(hf.model, stack).layers[layer]
        mods = {"q": blk.self_attn.q_proj, "ffo": blk.fc2, "hid_in": blk.fc2}
        if stack == "decoder":
            mods["cq"] = blk.encoder_attn.q_proj
    return mods


@pytest.mark.parametrize("name, stack, layer, head, pos", [
    ("t5", "encoder", 1, 2, 5), ("t5", "decoder", 1, 1, 4), ("t5_v11", "decoder", 0, 3, 6),
    ("bart", "encoder", 1, 2, 5), ("bart", "decoder", 0, 0, 3), ("bart_zh", "decoder", 1, 3, 2),
    ("mt5", "encoder", 0, 1, 2),
])
def test_seq2seq_path_equals_transformers_float64(name, stack, layer, head, pos, seq2seq, hf_seq2seq_models,  # noqa: F811
                                                  monkeypatch):
    model = seq2seq[name]
    zh = name in ("bart_zh", "mt5")
    src, tgt = ("我喜欢人工智能和自然语言", "我喜欢北京") if zh else (SOURCE, TARGET)
    kw = dict(target=tgt) if stack == "decoder" else {}
    w = explain(text=src, model=model, layer=layer, head=head, position=pos, path=True, **kw)
    t5 = name.startswith(("t5", "mt5"))
    if t5:
        _patch_t5_norm_float64(monkeypatch)
    hf = hf_seq2seq_models(name).double()
    tr = model.trace(src, tgt, names=["encoder.embed.out"])
    seen, handles = _record(_t5_hooks(hf, stack, layer, t5), first_only=())
    try:
        with torch.no_grad():
            o = hf(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids, output_attentions=True,
                   output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    v, d = w.values, model.config.d_head
    lp = f"{stack}.layers.{layer}"
    att = "attn" if stack == "encoder" else "self_attn"
    tight = 1e-12
    hs = o.encoder_hidden_states if stack == "encoder" else o.decoder_hidden_states
    _agree(v[f"{stack}.embed.tokens"], hf.get_input_embeddings().weight.detach()[tr.input_ids[0] if stack == "encoder"
                                                                          else tr.decoder_input_ids[0]][pos], 0, "tokens")
    if layer:
        _agree(v[f"{stack}.layers.{layer - 1}.out"], hs[layer][0, pos], tight, "layer input")
    _agree(v[f"{lp}.{att}.q[{head}]"], seen["q"][pos, head * d:(head + 1) * d], tight, "q")
    weights = o.encoder_attentions if stack == "encoder" else o.decoder_attentions
    _agree(v["weights"], weights[layer][0, head, pos], tight, "weights")
    if t5:
        from transformers.models.t5.modeling_t5 import T5Attention
        n_k = len(v["weights"])
        bucket = T5Attention._relative_position_bucket(torch.arange(n_k) - pos, bidirectional=stack == "encoder",
                                                       num_buckets=model.config.relative_buckets,
                                                       max_distance=model.config.relative_max_distance).numpy()
        np.testing.assert_array_equal(v["bucket"], bucket)
        table = getattr(hf, stack).block[0].layer[0].SelfAttention.relative_attention_bias.weight.detach().double().numpy()
        np.testing.assert_array_equal(v["bias"], table[bucket, head])
        assert w.meta["factor"] == 1.0
    else:
        assert w.meta["factor"] == pytest.approx(1 / math.sqrt(d), rel=1e-15)
    if stack == "decoder":
        _agree(v[f"{lp}.cross_attn.q[{head}]"], seen["cq"][pos, head * d:(head + 1) * d], tight, "cross q")
        _agree(v["cross_weights"], o.cross_attentions[layer][0, head, pos], tight, "cross weights")
        assert len(v["cross_weights"]) == tr.input_ids.shape[1]
    _agree(v[f"{lp}.ffn.hidden"], seen["hid_in"][pos], tight, "ffn hidden")
    _agree(v[f"{lp}.ffn.out"], seen["ffo"][pos], tight, "ffn out")
    last = layer == (model.config.n_layers if stack == "encoder" else model.config.n_decoder_layers) - 1
    if not (t5 and last):  # transformers' last hidden state is after T5's final norm
        _agree(v[f"{lp}.out"], hs[layer + 1][0, pos], tight, "layer output")
    keys = [s.key for s in w.steps]
    if stack == "decoder":
        assert keys[0] == "source_tokens" and "cross_attn_in" in keys and "cross_weights" in keys
        assert keys.index("cross_q") < keys.index("cross_scores") < keys.index("attn_resid_cross") < keys.index("ffn")
    assert ("bias" in keys) == t5 and ("embed_norm" in keys) == (not t5)
    md = w.render("markdown")
    assert f"Trace name: {lp}.{att}.q[{head}]" in md and "{" not in md.replace("{}", "").split("$")[0]
    if stack == "decoder":
        assert f"Trace name: {lp}.cross_attn.weights[{head}]." in md and "cross-attention row of head" in md
    zhmd = w.render("markdown", lang="zh")
    assert "追踪名" in zhmd and ("交叉注意力" in zhmd) == (stack == "decoder")
    js = json.loads(w.render("json"))
    assert max(js["meta"]["trace_path_max_abs_diff"].values()) < 1e-4


def test_seq2seq_path_errors_and_cli(seq2seq, seq2seq_dirs, capsys, tmp_path):  # noqa: F811
    t5 = seq2seq["t5"]
    cases = [(dict(text=SOURCE, target=TARGET, position=40), "the target: position 40 is out of range"),
             (dict(text=SOURCE, attention="cross"), "needs the target text"),
             (dict(text=SOURCE, target=TARGET, layer=3), "decoder layer 3 is out of range"),
             (dict(text=SOURCE, layer=2, position=1), "encoder layer 2 is out of range"),
             (dict(text=SOURCE, target=TARGET, token="zzz"), "the target: token 'zzz' is not in the text"),
             (dict(target=TARGET, position=1), "a target needs its source")]
    for kw, msg in cases:
        with pytest.raises(InputError, match=msg):
            explain(model=t5, path=True, **kw)
    out = tmp_path / "p.json"
    assert main(["explain", "--model", str(seq2seq_dirs["t5"]), "--text", SOURCE, "--target", TARGET, "--path",
                 "--layer", "1", "--head", "2", "--position", "3", "--format", "json", "-o", str(out)]) == 0
    js = json.loads(out.read_text(encoding="utf-8"))
    assert js["meta"]["attention"] == "decoder" and "cross_weights" in js["values"]
    capsys.readouterr()
    assert main(["explain", "--model", str(seq2seq_dirs["t5"]), "--target", TARGET, "--path"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "need --text" in err[0]


@pytest.mark.parametrize("name, ln", [("t5", "RMSNorm"), ("bart", "LayerNorm")])
def test_seq2seq_decoder_path_counts_its_three_norms_and_residuals(name, ln, seq2seq):  # noqa: F811
    """A decoder layer has three sublayers: T5's feed-forward reads its third RMSNorm (ln3, pre-norm;
    BART's reads its second, post-norm) and adds the third residual; an encoder layer has two of each."""
    model = seq2seq[name]

    def titles(**kw):
        md = explain(text=SOURCE, model=model, layer=1, position=3, path=True, **kw).render("markdown")
        return {line.split(": ", 1)[1] for line in md.splitlines() if line.startswith("## Step ")}, md
    dec, md = titles(target=TARGET)
    enc, _ = titles()
    ffn_in = "third" if name == "t5" else "second"  # T5: ln1 self, ln2 cross, ln3 FFN; BART: ln2 after cross
    assert f"the {ffn_in} {ln}" in dec and "the third residual connection" in dec
    assert "the second residual connection" not in dec
    assert "the second residual connection" in enc and "the third residual connection" not in enc
    if name == "t5":
        assert "the second RMSNorm" in enc and "the second RMSNorm" not in dec
        ln3 = model.decoder.layers[1].ln3.weight.detach().double().numpy()
        step = md.split("the third RMSNorm")[1].split("Trace name: decoder.layers.1.ffn_in")[0]
        assert f"{ln3[0]:.4f}" in step  # the weights shown are ln3's


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_the_path_writes_a_bias_only_where_the_model_has_one(name, seq2seq):  # noqa: F811
    """T5 has no biases, BART has them: T5's path said "q = x W_Q + b", "plus the bias" and a
    feed-forward "with W_1 and a bias" although there is none (the numbers were right)."""
    model = seq2seq[name]
    attn, ffn = model.encoder.layers[1].attn, model.encoder.layers[1].ffn
    biased = attn.W_qkv.bias is not None
    assert biased == (ffn.W_1.bias is not None) == (name == "bart")  # the models' own weights
    for lang, plus in (("en", "plus the bias"), ("zh", "再加偏置")):
        for target in (None, TARGET):
            md = explain(text=SOURCE, model=model, layer=1, position=3, path=True, target=target).render(
                "markdown", lang=lang)
            titles = [line for line in md.splitlines() if line.startswith("## ") and "x W_Q" in line]
            assert titles and all(line.endswith("x W_Q + b" if biased else "x W_Q") for line in titles)
            assert ("b_Q" in md) == (plus in md) == biased, (lang, target)
            assert ("act(x W_1 + b_1)" in md or "x W_1+b_1" in md) == biased
