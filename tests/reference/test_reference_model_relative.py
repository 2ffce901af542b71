"""attnscope.reference_model on DeBERTa (its three score terms) and on the encoder–decoder families
(reference_model_seq2seq: T5, T5 v1.1's gated FFN, mT5, BART, BART with scaled embeddings): every
hidden state and attention matrix against transformers' eager models of the same tiny checkpoints
run in float64, sub-step by sub-step through forward hooks, and every trace name against attnscope's
own torch model run in float64."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope import reference_model as RM
from attnscope.reference_model_seq2seq import forward_seq2seq
from tests.models.encoders import tiny as TE
from tests.models.seq2seq import tiny as TS

EN = "The quick brown fox jumps over the lazy dog because it was tired."
ZH = "我喜欢人工智能。北京是中国的首都。"
SRC = "summarize: Queries and keys; values too? Yes, every token looks at every other token."
TGT = "Every token looks at the others."
DEBERTA = {"deberta_v3": (TE.deberta_v3, EN), "deberta_v2": (TE.deberta_v2, ZH), "deberta_c2p": (TE.deberta_c2p, EN)}
SEQ2SEQ = {"t5": (TS.t5, SRC, TGT), "t5_v11": (TS.t5_v11, SRC, TGT), "mt5": (TS.mt5, ZH, "我喜欢北京"),
           "bart": (TS.bart, SRC, TGT), "bart_zh": (TS.bart_zh, ZH, "我喜欢北京")}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("refmodel-rel")
    out = {name: b(root / name) for name, (b, _) in DEBERTA.items()}
    out.update({name: v[0](root / name) for name, v in SEQ2SEQ.items()})
    return out


def _hf(folder, seq2seq: bool):
    import transformers
    transformers.logging.set_verbosity_error()
    auto = transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModel
    return auto.from_pretrained(str(folder), attn_implementation="eager").eval().double()


def _agree(ours, theirs, tol, what):
    theirs = np.asarray(theirs, dtype=np.float64)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=tol * max(1.0, float(np.abs(theirs).max())), err_msg=what)


@pytest.mark.parametrize("name", list(DEBERTA))
def test_deberta_equals_transformers_float64(name, folders):
    model = attnscope.load(folders[name])
    text = DEBERTA[name][1]
    f = RM.forward(model, text)
    hf = _hf(folders[name], False)
    b = model.encode(text)
    seen: dict = {}
    hooks = [hf.embeddings.LayerNorm.register_forward_hook(lambda m, i, o: seen.__setitem__("emb_in", i[0][0]))]
    for i, lay in enumerate(hf.encoder.layer):
        a = lay.attention
        hooks += [a.self.query_proj.register_forward_hook(lambda m, x, o, i=i: None if ("q", i) in seen else
                                                        seen.__setitem__(("q", i), o[0])),
                  a.output.LayerNorm.register_forward_hook(lambda m, x, o, i=i: seen.__setitem__(("ln1", i), o[0])),
                  lay.intermediate.register_forward_hook(lambda m, x, o, i=i: seen.__setitem__(("hid", i), o[0])),
                  lay.output.dense.register_forward_hook(lambda m, x, o, i=i: seen.__setitem__(("ffo", i), o[0]))]
    kw = {"token_type_ids": b.token_type_ids} if model.config.type_vocab_size > 0 else {}
    try:
        with torch.no_grad():
            o = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, output_hidden_states=True,
                   output_attentions=True, **kw)
    finally:
        for h in hooks:
            h.remove()
    # (query_proj also projects the relative table when share_att_key: the first call is the text's q)
    # transformers takes √(d_head · scale_factor) in float32 (torch.tensor(..., dtype=torch.float)), so
    # with c2p and p2c (√(3·8), not a float32 number) its scores sit 1e-8 from the exact factor;
    # with c2p alone (√16 = 4) it is float64 to the last bits
    exact = math.sqrt(model.config.d_head * (1 + len(model.config.pos_att_type))).is_integer()
    tol = 1e-12 if exact else 1e-7
    assert model.config.query_scale == pytest.approx(1 / math.sqrt(model.config.d_head * (1 + len(hf.config.pos_att_type))),
                                                     rel=1e-15)
    pre = f.get("embed.projected", f["embed.sum"])
    _agree(pre, seen["emb_in"], 1e-13, "embedding before its LayerNorm")
    _agree(f["embed.out"], o.hidden_states[0][0], 1e-13, "embed.out")
    H, d = model.config.n_heads, model.config.d_head
    for i in range(model.config.n_layers):
        q = seen[("q", i)].numpy().reshape(-1, H, d).transpose(1, 0, 2)
        _agree(f[f"layers.{i}.attn.q"], q, tol, f"layer {i} q")
        _agree(f[f"layers.{i}.attn.weights"], o.attentions[i][0], tol, f"layer {i} weights")
        _agree(f[f"layers.{i}.ffn_in"], seen[("ln1", i)], tol, f"layer {i} attention LayerNorm")
        _agree(f[f"layers.{i}.ffn.hidden"], seen[("hid", i)], tol, f"layer {i} ffn hidden")
        _agree(f[f"layers.{i}.ffn.out"], seen[("ffo", i)], tol, f"layer {i} ffn out")
        _agree(f[f"layers.{i}.out"], o.hidden_states[i + 1][0], tol, f"layer {i} out")
        # the three terms add up to what the softmax read
        terms = f[f"layers.{i}.attn.scores_c2c"] + f.get(f"layers.{i}.attn.scores_c2p", 0) + \
            f.get(f"layers.{i}.attn.scores_p2c", 0)
        np.testing.assert_allclose(f[f"layers.{i}.attn.masked"], terms * model.config.query_scale, rtol=1e-14, atol=1e-15)


def _patch_t5_norm_float64(monkeypatch):
    """transformers' T5LayerNorm takes the mean of squares in float32 even in a float64 model (on
    purpose: fp16 safety), which leaves its T5 at 1e-6; with that one line in float64 the model is
    float64 throughout and comparable to the last bits."""
    from transformers.models.mt5 import modeling_mt5
    from transformers.models.t5 import modeling_t5

    def forward(self, h):
        var = h.pow(2).mean(-1, keepdim=True)
        return self.weight * (h * torch.rsqrt(var + self.variance_epsilon))
    monkeypatch.setattr(modeling_t5.T5LayerNorm, "forward", forward)
    monkeypatch.setattr(modeling_mt5.MT5LayerNorm, "forward", forward)


@pytest.mark.parametrize("name", list(SEQ2SEQ))
def test_seq2seq_equals_transformers_float64(name, folders, monkeypatch):
    model = attnscope.load(folders[name])
    _, src, tgt = SEQ2SEQ[name]
    f = forward_seq2seq(model, src, tgt)
    hf = _hf(folders[name], True)
    t5 = name in ("t5", "t5_v11", "mt5")
    tr = model.trace(src, tgt, names=["encoder.embed.out"])
    run = lambda: hf(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids, output_attentions=True,  # noqa: E731
                     output_hidden_states=True)
    with torch.no_grad():
        loose = run()
    if t5:
        _patch_t5_norm_float64(monkeypatch)
    seen: dict = {}
    hooks = []
    for i, blk in enumerate(hf.model.decoder.layers if not t5 else hf.decoder.block):
        ffn = blk.fc1 if not t5 else (blk.layer[2].DenseReluDense.wo)
        key = "pre" if not t5 else "hid"
        if t5:
            hooks.append(ffn.register_forward_hook(lambda m, x, o, i=i: seen.__setitem__(("hid", i), x[0][0])))
        else:
            hooks.append(ffn.register_forward_hook(lambda m, x, o, i=i, k=key: seen.__setitem__((k, i), o[0])))
    try:
        with torch.no_grad():
            o = run()
    finally:
        for h in hooks:
            h.remove()
    enc = f[RM_out(model)]
    _agree(enc, o.encoder_last_hidden_state[0], 1e-12, "encoder output")
    for i in range(model.config.n_layers):
        _agree(f[f"encoder.layers.{i}.attn.weights"], o.encoder_attentions[i][0], 1e-12, f"encoder {i} weights")
        if i + 1 < model.config.n_layers or not t5:
            _agree(f[f"encoder.layers.{i}.out"], o.encoder_hidden_states[i + 1][0], 1e-12, f"encoder {i} out")
    _agree(f["encoder.embed.out"], o.encoder_hidden_states[0][0], 1e-13, "encoder embedding")
    _agree(f["decoder.embed.out"], o.decoder_hidden_states[0][0], 1e-13, "decoder embedding")
    for i in range(model.config.n_decoder_layers):
        p = f"decoder.layers.{i}"
        _agree(f[f"{p}.self_attn.weights"], o.decoder_attentions[i][0], 1e-12, f"{p} self weights")
        _agree(f[f"{p}.cross_attn.weights"], o.cross_attentions[i][0], 1e-12, f"{p} cross weights")
        if t5:
            _agree(f[f"{p}.ffn.hidden"], seen[("hid", i)], 1e-12, f"{p} ffn hidden")
        else:
            _agree(f[f"{p}.ffn.pre"], seen[("pre", i)], 1e-12, f"{p} fc1")
        if i + 1 < model.config.n_decoder_layers or not t5:
            _agree(f[f"{p}.out"], o.decoder_hidden_states[i + 1][0], 1e-12, f"{p} out")
    if t5:
        _agree(f["decoder.final_norm"], o.decoder_hidden_states[-1][0], 1e-12, "decoder final norm")
    # transformers unpatched (T5's RMS in float32) sits at float32 distance, no further
    _agree(enc, loose.encoder_last_hidden_state[0], 1e-5, "encoder output, unpatched")
    _agree(f[f"decoder.layers.{model.config.n_decoder_layers - 1}.cross_attn.weights"], loose.cross_attentions[-1][0],
           1e-5, "cross weights, unpatched")


def RM_out(model):
    from attnscope.reference_model_seq2seq import encoder_output_name
    return encoder_output_name(model)


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_seq2seq_every_trace_name_equals_the_float64_torch_model(name, folders):
    model = attnscope.load(folders[name])
    _, src, tgt = SEQ2SEQ[name]
    f = forward_seq2seq(model, src, tgt)
    tr = copy.deepcopy(model).double().trace(src, tgt)
    names = [k for k in model.hook_names if k in tr]
    assert names and all(k in f for k in names), [k for k in names if k not in f]
    for k in names:
        ours, theirs = np.asarray(f[k]), tr[k][0].numpy()
        fin = np.isfinite(ours)
        assert np.array_equal(fin, np.isfinite(theirs)), k
        _agree(ours[fin], theirs[fin], 1e-12, k)
    if name == "bart":
        assert f["encoder.positions"].tolist() == [j + 2 for j in range(len(f["encoder.tokens"]))]
    else:
        assert f["decoder.tokens"][0] == "<pad>" and f["encoder.buckets"]["bucket"].shape == (len(f["encoder.tokens"]),) * 2


def test_seq2seq_errors(folders):
    t5 = attnscope.load(folders["t5"])
    with pytest.raises(InputError, match="decoder layer 3 is out of range: the decoder has 3 layers"):
        forward_seq2seq(t5, SRC, TGT, decoder_upto=3)
    with pytest.raises(InputError, match="encoder layer 2 is out of range"):
        forward_seq2seq(t5, SRC, encoder_upto=2)
    with pytest.raises(InputError, match="source text must be a non-empty"):
        forward_seq2seq(t5, " ", TGT)
    deb = attnscope.load(folders["deberta_c2p"])
    with pytest.raises(InputError, match="not an encoder–decoder model"):
        forward_seq2seq(deb, SRC)
