"""attnscope.reference_model, the float64 forward pass from a model's weights, against transformers'
eager models of the same tiny checkpoints (float64 and float32), against attnscope's own torch model
run in float64 (a second, independent implementation of every step), and against the model's
float32 trace: every family it covers, every layer."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope import reference_model as RM
from attnscope.testing import tiny as T1
from tests.models.decoders import tiny as TD
from tests.models.encoders import tiny as TE

EN = "The quick brown fox jumps over the lazy dog because it was tired."
ZH = "我喜欢人工智能。北京是中国的首都。"

ENCODERS = {"bert": (T1.tiny_bert, EN), "bert-chinese": (T1.tiny_bert_chinese, ZH), "roberta": (T1.tiny_roberta, EN),
            "gpt2": (T1.tiny_gpt2, EN), "distilbert": (TE.distilbert, EN), "albert": (TE.albert, EN),
            "albert_groups": (TE.albert_groups, ZH), "electra": (TE.electra, EN), "xlm_roberta": (TE.xlm_roberta, EN)}
DECODERS = {name: (TD.BUILDERS[name], EN) for name in ("llama_gqa", "llama_mqa", "llama3_scaled", "qwen2_window",
                                                      "mistral_window", "gemma3", "qwen3", "olmo2")}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("refmodel")
    return {name: build(root / name) for name, (build, _) in {**ENCODERS, **DECODERS}.items()}


def _hf(name, folder):
    import transformers
    transformers.logging.set_verbosity_error()
    if name in DECODERS:
        return TD.hf_model(folder).model
    if name == "gpt2":
        return transformers.GPT2Model.from_pretrained(str(folder), attn_implementation="eager").eval()
    return transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()


def _ours(f, n_layers):
    """Hidden states in transformers' convention: what enters layer 0, each layer's output, the last
    one after the final norm."""
    hs = [RM.layer_input(f, 0)] + [f[f"layers.{i}.out"] for i in range(n_layers)]
    if "final_norm" in f:
        hs[-1] = f["final_norm"]
    return hs


def _hf_run(hf, model, text, dtype):
    b = model.encode(text)
    kw = dict(input_ids=b.input_ids, attention_mask=b.attention_mask, output_hidden_states=True,
              output_attentions=True)
    if "token_type_ids" in hf.forward.__code__.co_varnames and getattr(hf.config, "type_vocab_size", 0) > 1:
        kw["token_type_ids"] = b.token_type_ids
    hf = hf.to(dtype)
    with torch.no_grad():
        o = hf(**kw)
    return [h[0].double().numpy() for h in o.hidden_states], [a[0].double().numpy() for a in o.attentions]


@pytest.mark.parametrize("name", list(ENCODERS) + list(DECODERS))
def test_forward_equals_transformers(name, folders):
    model = attnscope.load(folders[name])
    text = (ENCODERS.get(name) or DECODERS[name])[1]
    f = RM.forward(model, text)
    n = model.config.n_layers
    ours = _ours(f, n)
    hf = _hf(name, folders[name])
    hs64, att64 = _hf_run(hf, model, text, torch.float64)
    hs32, att32 = _hf_run(hf, model, text, torch.float32)
    assert len(hs64) == len(ours) == n + 1
    # transformers' .double() encoders are float64 throughout; its decoders still normalise and take the
    # rotary angles in float32, so they sit at float32 distance
    tight = name in ENCODERS
    for a, b in zip(hs64, ours):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * max(1.0, np.abs(a).max()) if tight else 2e-5)
    for i in range(n):
        np.testing.assert_allclose(f[f"layers.{i}.attn.weights"], att64[i], rtol=0, atol=1e-13 if tight else 2e-6)
        np.testing.assert_allclose(f[f"layers.{i}.attn.weights"], att32[i], rtol=0, atol=5e-6)
    for a, b in zip(hs32, ours):
        np.testing.assert_allclose(b, a, rtol=0, atol=5e-5)


@pytest.mark.parametrize("name", list(ENCODERS) + list(DECODERS))
def test_every_trace_name_equals_the_float64_torch_model(name, folders):
    """attnscope's torch modules in float64 compute every step another way (torch kernels, fused
    projections, the step function); every recorded name agrees to float64 rounding."""
    model = attnscope.load(folders[name])
    text = (ENCODERS.get(name) or DECODERS[name])[1]
    f = RM.forward(model, text)
    tr64 = copy.deepcopy(model).double().trace(text)
    tr32 = model.trace(text)
    names = [k for k in f if k in tr64]
    assert len(names) >= 20 * model.config.n_layers // 2
    for k in names:
        ours = f[k]
        for tr, tol in ((tr64, 1e-10), (tr32, 1e-4)):
            theirs = tr[k][0].double().numpy()
            fin = np.isfinite(ours)
            assert np.array_equal(fin, np.isfinite(theirs)), k
            scale = max(1.0, float(np.abs(ours[fin]).max()))
            diff = np.abs(ours[fin] - theirs[fin])
            assert float(diff.max(initial=0.0)) <= tol * scale, (k, tol)


def test_positions_and_segments_are_the_models(folders):
    roberta = attnscope.load(folders["xlm_roberta"])
    f = RM.forward(roberta, EN, upto=0)
    pad = roberta.config.pad_token_id
    assert f["positions"].tolist() == list(range(pad + 1, pad + 1 + len(f["tokens"])))
    bert = attnscope.load(folders["bert"])
    f = RM.forward(bert, EN, upto=0)
    assert f["segments"].tolist() == [0] * len(f["tokens"]) and f["positions"][0] == 0
    W = bert.embed.position_embedding.weight.detach().double().numpy()
    np.testing.assert_array_equal(f["embed.positions"], W[: len(f["tokens"])])


def test_sinusoid_rows_by_the_formula():
    rows = RM.sinusoid_rows([0, 3, 17], 8)
    for r, p in zip(rows, (0, 3, 17)):
        for j in range(8):
            ang = p / 10000 ** ((j - j % 2) / 8)
            assert r[j] == pytest.approx(math.sin(ang) if j % 2 == 0 else math.cos(ang), abs=1e-15)


def test_distilbert_with_sinusoidal_positions(tmp_path):
    """A DistilBERT checkpoint trained with sinusoidal_pos_embds stores transformers' fixed table as
    its weight; the float64 pass computes the sinusoids from the formula and agrees with it."""
    import transformers
    cfg = transformers.DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                        max_position_embeddings=64, sinusoidal_pos_embds=True)
    hf = transformers.DistilBertModel(cfg).eval()
    folder = tmp_path / "distil-sin"
    TE.english_vocab(folder)
    hf.save_pretrained(str(folder))
    model = attnscope.load(folder)
    assert RM.position_kind(model) == "sinusoidal"
    f = RM.forward(model, EN)
    stored = hf.embeddings.position_embeddings.weight.detach().double().numpy()[: len(f["tokens"])]
    np.testing.assert_allclose(f["embed.positions"], stored, rtol=0, atol=1e-7)  # transformers' float32 table
    with torch.no_grad():
        b = model.encode(EN)
        out = hf.double()(input_ids=b.input_ids, attention_mask=b.attention_mask).last_hidden_state[0].numpy()
    np.testing.assert_allclose(f["layers.1.out"], out, rtol=0, atol=1e-5)


def test_what_it_does_not_cover(tmp_path):
    from tests.models.seq2seq import tiny as TS
    t5 = attnscope.load(TS.t5(tmp_path / "t5"))
    with pytest.raises(InputError, match="encoder–decoder model .*forward_seq2seq"):
        RM.forward(t5, EN)
    bert = attnscope.load(T1.tiny_bert(tmp_path / "bert"))
    with pytest.raises(InputError, match="layer 5 is out of range: the model has 2 layers"):
        RM.forward(bert, EN, upto=5)
    with pytest.raises(InputError, match="non-empty"):
        RM.forward(bert, "  ")
    with pytest.raises(InputError, match="unknown activation 'tanh'"):
        RM.activation("tanh", np.zeros(2))
