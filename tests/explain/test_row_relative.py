"""explain on T5 rows (encoder, decoder self-attention, cross-attention) and DeBERTa rows: every
number against an independent NumPy float64 computation written here from transformers' weights
and the inputs transformers' own attention modules received, and against transformers' eager
attention weights; T5's buckets against transformers' ``_relative_position_bucket``; one clear
error for each misfit."""

import math

import numpy as np
import pytest
import torch

from attnscope import InputError, explain
from attnscope.cli import main
from tests.models.encoders.fixtures import encoder_dirs, encoders, hf_encoders  # noqa: F401
from tests.models.encoders.test_deberta import buckets_np
from tests.models.seq2seq.fixtures import hf_seq2seq_models, seq2seq, seq2seq_dirs  # noqa: F401

SOURCE = "summarize: Queries and keys; values too? Yes, every token looks at every other token."
TARGET = "Every token looks at the others."


def f64(t):
    return t.detach().double().numpy()


def softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def captured_inputs(hf, tr):
    """Run transformers' T5 once, keeping what each attention module received: its (normed)
    hidden states and, for cross-attention, the encoder output."""
    seen = {}

    def keep(name):
        def hook(module, args, kwargs):
            seen[name] = (args[0] if args else kwargs["hidden_states"], kwargs.get("key_value_states"))
        return hook
    handles = []
    for i, b in enumerate(hf.encoder.block):
        handles.append(b.layer[0].SelfAttention.register_forward_pre_hook(keep(("encoder", i)), with_kwargs=True))
    for i, b in enumerate(hf.decoder.block):
        handles.append(b.layer[0].SelfAttention.register_forward_pre_hook(keep(("self", i)), with_kwargs=True))
        handles.append(b.layer[1].EncDecAttention.register_forward_pre_hook(keep(("cross", i)), with_kwargs=True))
    try:
        with torch.no_grad():
            out = hf(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    return seen, out


def t5_reference(hf, seen, att, layer, head, i):
    """One T5 row in float64 from transformers' weights: q·k (+ the bias of the bucket) → softmax → z."""
    from transformers.models.t5.modeling_t5 import T5Attention
    stack = hf.encoder if att == "encoder" else hf.decoder
    block = stack.block[layer]
    mod = block.layer[1].EncDecAttention if att == "cross" else block.layer[0].SelfAttention
    x, kv = seen[(att, layer)]
    x = f64(x[0])
    kv = x if kv is None else f64(kv[0])
    d = mod.key_value_proj_dim
    rows = slice(head * d, (head + 1) * d)
    q = x @ f64(mod.q.weight)[rows].T
    k = kv @ f64(mod.k.weight)[rows].T
    v = kv @ f64(mod.v.weight)[rows].T
    qk = k @ q[i]
    n_k = k.shape[0]
    bias = np.zeros(n_k)
    bucket = None
    if att != "cross":
        rel = torch.arange(n_k) - i
        bucket = T5Attention._relative_position_bucket(
            rel, bidirectional=att == "encoder", num_buckets=hf.config.relative_attention_num_buckets,
            max_distance=hf.config.relative_attention_max_distance).numpy()
        table = f64(stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight)
        bias = table[bucket, head]
    s = qk + bias
    if att == "self":
        s = np.where(np.arange(n_k) <= i, s, -np.inf)
    w = softmax(s)
    return {"qk": qk, "bias": bias, "bucket": bucket, "weights": w, "z": w @ v}


@pytest.mark.parametrize("att,layer,head,pos", [("encoder", 1, 2, 5), ("self", 2, 1, 6), ("cross", 0, 3, 4),
                                                ("self", 0, 0, 0)])
def test_t5_rows_equal_numpy_and_transformers(att, layer, head, pos, seq2seq, hf_seq2seq_models):  # noqa: F811
    model, hf = seq2seq["t5"], hf_seq2seq_models("t5")
    w = explain(text=SOURCE, target=TARGET, attention=att, model=model, layer=layer, head=head, position=pos)
    tr = model.trace(SOURCE, TARGET, names=["encoder.layers.0.attn.q"])
    seen, out = captured_inputs(hf, tr)
    ref = t5_reference(hf, seen, att, layer, head, pos)
    v = w.values
    np.testing.assert_allclose(v["qk"], ref["qk"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v["weights"], ref["weights"], atol=1e-6)
    np.testing.assert_allclose(v["output_full"], ref["z"], atol=1e-5)
    hf_w = {"encoder": out.encoder_attentions, "self": out.decoder_attentions, "cross": out.cross_attentions}[att]
    np.testing.assert_allclose(v["weights"], f64(hf_w[layer][0, head, pos]), atol=1e-5)
    assert w.meta["factor"] == 1.0  # T5 does not scale
    if att == "cross":
        assert "bias" not in v and [s.key for s in w.steps][0] == "scores"
        assert w.meta["query_token"] == tr.target_tokens[0][pos]
    else:
        np.testing.assert_array_equal(v["bucket"], ref["bucket"])
        np.testing.assert_array_equal(v["bias"], ref["bias"])  # the table's float32 numbers, exactly
        np.testing.assert_allclose(v["scores"], v["qk"] + v["bias"], rtol=0, atol=0)
        assert [s.key for s in w.steps][:2] == ["bias", "scores"]
    if att == "encoder":
        assert {2, 6, 7} <= set(v["bucket"].tolist()), "the row reaches the log buckets on both sides"


def test_bart_cross_row_is_scaled(seq2seq, hf_seq2seq_models):  # noqa: F811
    model, hf = seq2seq["bart"], hf_seq2seq_models("bart")
    w = explain(text=SOURCE, target=TARGET, attention="cross", model=model, layer=1, head=2, position=3)
    tr = model.trace(SOURCE, TARGET, names=["encoder.layers.0.attn.q"])
    with torch.no_grad():
        out = hf(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids, output_attentions=True)
    assert w.meta["factor"] == pytest.approx(1 / math.sqrt(model.config.d_head), rel=1e-15)
    np.testing.assert_allclose(w.values["weights"], f64(out.cross_attentions[1][0, 2, 3]), atol=1e-5)


def deberta_reference(hf, cfg, x, layer, head, i):
    """c2c, c2p, p2c of row i in float64 from transformers' weights (loops over keys, test-local buckets)."""
    att = hf.encoder.layer[layer].attention.self
    d = cfg.d_head
    rows = slice(head * d, (head + 1) * d)
    lin = lambda m, a: a @ f64(m.weight)[rows].T + f64(m.bias)[rows]  # noqa: E731
    q, k = lin(att.query_proj, x), lin(att.key_proj, x)
    rel = f64(hf.encoder.rel_embeddings.weight)[: 2 * cfg.span]
    if getattr(hf.encoder, "LayerNorm", None) is not None and cfg.norm_rel_embed:
        ln = hf.encoder.LayerNorm
        rel = (rel - rel.mean(-1, keepdims=True)) / np.sqrt(rel.var(-1, keepdims=True) + ln.eps) * f64(ln.weight) + f64(ln.bias)
    share = cfg.share_att_key
    pos_k = lin(att.key_proj if share else att.pos_key_proj, rel) if "c2p" in cfg.pos_att_type else None
    pos_q = lin(att.query_proj if share else att.pos_query_proj, rel) if "p2c" in cfg.pos_att_type else None
    n = x.shape[0]
    c2c, c2p, p2c = np.zeros(n), np.zeros(n), np.zeros(n)
    for j in range(n):
        c2c[j] = q[i] @ k[j]
        if pos_k is not None:
            r = min(max(buckets_np(i - j, cfg.position_buckets, cfg.max_relative_positions) + cfg.span, 0), 2 * cfg.span - 1)
            c2p[j] = q[i] @ pos_k[r]
        if pos_q is not None:
            r = min(max(-buckets_np(j - i, cfg.position_buckets, cfg.max_relative_positions) + cfg.span, 0),
                    2 * cfg.span - 1)
            p2c[j] = k[j] @ pos_q[r]
    return c2c, c2p, p2c


@pytest.mark.parametrize("name", ["deberta_v3", "deberta_v2", "deberta_c2p"])
def test_deberta_rows_equal_numpy_and_transformers(name, encoders, hf_encoders):  # noqa: F811
    model, hf = encoders[name], hf_encoders(name)
    text = "Relative positions tell a head how far apart two tokens are, said the quick brown fox."
    layer, head, pos = 1, 2, 4
    w = explain(text=text, model=model, layer=layer, head=head, position=pos)
    enc = model.encode(text)
    with torch.no_grad():
        out = hf(input_ids=enc.input_ids, attention_mask=enc.attention_mask, output_hidden_states=True,
                 output_attentions=True)
    cfg = model.config
    c2c, c2p, p2c = deberta_reference(hf, cfg, f64(out.hidden_states[layer][0]), layer, head, pos)
    v = w.values
    for got, want in ((v["c2c"], c2c), (v["c2p"], c2p), (v["p2c"], p2c)):
        np.testing.assert_allclose(got, want, atol=2e-5)
    m = 1 + len(cfg.pos_att_type)
    assert w.meta["factor"] == pytest.approx(1 / math.sqrt(m * cfg.d_head), rel=1e-15)
    np.testing.assert_allclose(v["scaled"], (v["c2c"] + v["c2p"] + v["p2c"]) * w.meta["factor"], rtol=1e-15)
    np.testing.assert_allclose(v["weights"], softmax((c2c + c2p + p2c) / math.sqrt(m * cfg.d_head)), atol=1e-6)
    np.testing.assert_allclose(v["weights"], f64(out.attentions[layer][0, head, pos]), atol=1e-5)
    assert [s.key for s in w.steps][:2] == ["positions", "scores"]
    if "c2p" not in cfg.pos_att_type or "p2c" not in cfg.pos_att_type:
        assert not (v["p2c"].any() and v["c2p"].any())


def test_renders_in_both_languages(seq2seq, encoders):  # noqa: F811
    t5 = explain(text=SOURCE, target=TARGET, attention="encoder", model=seq2seq["t5"], layer=0, head=1, position=3)
    for lang in ("en", "zh"):
        md = t5.render("markdown", lang=lang)
        assert "{" not in md.replace("{}", "") or "\\" in md, "no placeholder is left unfilled"
        assert ("bucket" if lang == "en" else "桶") in md
    js = t5.to_dict()
    assert js["values"]["bucket"][:5] == [2, 2, 1, 0, 5]  # δ = −3 … 1: log, exact, exact, 0, after
    deb = explain(text="the cat sat on the mat", model=encoders["deberta_v3"], layer=0, head=0, position=2)
    for lang in ("en", "zh"):
        md = deb.render("markdown", lang=lang)
        assert "c2p" in md and "{normed}" not in md
    assert "\\mathrm{ceil}" in deb.render("latex")


def test_bad_input_one_error_each(seq2seq, encoders, seq2seq_dirs, capsys):  # noqa: F811
    t5 = seq2seq["t5"]
    cases = [(dict(text=SOURCE, attention="cross", model=t5), "needs the target text"),
             (dict(text=SOURCE, target=TARGET, attention="crosss", model=t5), "attention must be one of"),
             (dict(text=SOURCE, target=TARGET, attention="self", model=t5, layer=3), "layer 3 is out of range"),
             (dict(text=SOURCE, target=TARGET, attention="self", model=t5, token="nope"), "not in the text"),
             (dict(text="the cat", target="x", model=encoders["deberta_v3"]), "are for encoder–decoder models"),
             (dict(target=TARGET, model=t5), "a target needs its source")]
    for kw, msg in cases:
        with pytest.raises(InputError, match=msg):
            explain(**kw)
    assert main(["explain", "--target", "x", "--model", str(seq2seq_dirs["t5"])]) == 2
    assert "need --text" in capsys.readouterr().err


def test_cli_t5_cross_row(seq2seq_dirs, capsys):  # noqa: F811
    assert main(["explain", "--model", str(seq2seq_dirs["t5"]), "--text", SOURCE, "--target", TARGET, "--attention",
                 "cross", "--layer", "1", "--head", "0", "--position", "2", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "cross-attention" in out and "no position bias" in out and "× 1" in out
