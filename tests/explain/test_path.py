"""One token's whole path (explain --path): every value against transformers' own float64 modules
(forward hooks on the embeddings, the query projection, the attention probabilities, the output
dense layers, the LayerNorms and the feed-forward of BertModel), against attnscope's torch model run
in float64 (decoders, GPT-2, ALBERT, XLM-RoBERTa), the printed digits against those values, and
the command line on the real default model in Markdown, JSON and Chinese."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope.cli import main
from attnscope.explain import explain
from attnscope.explain.path import explain_path
from attnscope.testing import tiny as T1
from tests.models.decoders import tiny as TD
from tests.models.encoders import tiny as TE

from .reference import half_up

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def hf_bert():
    """transformers' BertModel of the packaged MiniLM in float64, with every module's output recorded."""
    import transformers
    transformers.logging.set_verbosity_error()
    hf = transformers.BertModel.from_pretrained(str(attnscope.models.default_model_path()),
                                                attn_implementation="eager").eval().double()
    return hf


def hf_steps(hf, model, text, layer):
    """The float64 outputs of transformers' modules on ``text`` (batch axis dropped)."""
    rec = {}
    mods = {"word": hf.embeddings.word_embeddings, "pos": hf.embeddings.position_embeddings,
            "seg": hf.embeddings.token_type_embeddings, "emb_ln": hf.embeddings.LayerNorm}
    lay = hf.encoder.layer[layer]
    mods.update(query=lay.attention.self.query, key=lay.attention.self.key, value=lay.attention.self.value,
                attn_dense=lay.attention.output.dense, attn_ln=lay.attention.output.LayerNorm,
                inter=lay.intermediate, out_dense=lay.output.dense, out_ln=lay.output.LayerNorm)
    hooks = [m.register_forward_hook(lambda mod, i, o, k=k: rec.__setitem__(k, o[0].detach().numpy()))
             for k, m in mods.items()]
    b = model.encode(text)
    try:
        with torch.no_grad():
            o = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, token_type_ids=b.token_type_ids,
                   output_attentions=True, output_hidden_states=True)
    finally:
        for h in hooks:
            h.remove()
    rec["weights"] = o.attentions[layer][0].numpy()
    rec["input"] = o.hidden_states[layer][0].numpy()
    return rec


def test_cli_path_json_equals_transformers_float64(minilm, hf_bert, tmp_path, monkeypatch):
    import attnscope.models as models
    monkeypatch.setattr(models, "load", lambda name=None, **kw: minilm)
    out = tmp_path / "path.json"
    assert main(["explain", "--text", TEXT, "--token", "it", "--layer", "1", "--head", "3", "--path", "--format", "json",
                 "-o", str(out)]) == 0
    d = json.loads(out.read_text(encoding="utf-8"))
    v = {k: np.array(x, dtype=np.float64) for k, x in d["values"].items() if x is not None}
    p = d["meta"]["query_position"]
    ref = hf_steps(hf_bert, minilm, TEXT, 1)
    H, dh = 12, 32
    tight = dict(rtol=0, atol=1e-12)
    np.testing.assert_allclose(v["embed.tokens"], ref["word"][p], **tight)
    np.testing.assert_allclose(v["embed.positions"], ref["pos"][p], **tight)
    np.testing.assert_allclose(v["embed.segments"], ref["seg"][p], **tight)
    np.testing.assert_allclose(v["embed.out"], ref["emb_ln"][p], **tight)
    np.testing.assert_allclose(v["layers.0.out"], ref["input"][p], **tight)
    np.testing.assert_allclose(v["layers.1.attn.q[3]"], ref["query"][p, 3 * dh:4 * dh], **tight)
    np.testing.assert_allclose(v["layers.1.attn.k[3]"], ref["key"][:, 3 * dh:4 * dh], **tight)
    np.testing.assert_allclose(v["layers.1.attn.v[3]"], ref["value"][:, 3 * dh:4 * dh], **tight)
    np.testing.assert_allclose(v["weights"], ref["weights"][3, p], rtol=0, atol=1e-14)
    z = np.stack([ref["weights"][h, p] @ ref["value"][:, h * dh:(h + 1) * dh] for h in range(H)])
    for h in range(H):
        np.testing.assert_allclose(v[f"layers.1.attn.z[{h}]"], z[h], **tight)
    np.testing.assert_allclose(v["layers.1.attn.merged"], z.reshape(-1), **tight)
    np.testing.assert_allclose(v["layers.1.attn.out"], ref["attn_dense"][p], **tight)
    np.testing.assert_allclose(v["layers.1.ffn_in"], ref["attn_ln"][p], **tight)
    np.testing.assert_allclose(v["layers.1.ffn.hidden"], ref["inter"][p], **tight)
    np.testing.assert_allclose(v["layers.1.ffn.out"], ref["out_dense"][p], **tight)
    np.testing.assert_allclose(v["layers.1.out"], ref["out_ln"][p], **tight)
    assert d["values"]["ids"][p] == minilm.tokenizer.token_to_id("it")
    # every step names its trace name and the model's float32 trace is within float32 error
    diffs = d["meta"]["trace_path_max_abs_diff"]
    assert set(diffs) >= {"embed.out", "layers.1.attn.q[3]", "layers.1.attn.out", "layers.1.ffn.hidden", "layers.1.out"}
    assert 0 < max(diffs.values()) < 1e-4
    titles = [s["title"] for s in d["steps"]]
    assert titles[0].startswith("tokenization") and titles[-1].startswith("every step beside")


def _table(step, header_start: str):
    return next(b for b in step.blocks if type(b).__name__ == "Table" and str(getattr(b.header[0], "key", b.header[0]))
                == header_start)


def test_printed_digits_are_the_values(minilm, hf_bert):
    w = explain(text=TEXT, model=minilm, layer=1, head=3, token="it", path=True)
    ref = hf_steps(hf_bert, minilm, TEXT, 1)
    p = w.meta["query_position"]
    md = w.render("markdown")
    # the LayerNorm table of the embeddings: x_i, γ_i, β_i and y_i at 4 decimals, half-up
    g = hf_bert.embeddings.LayerNorm.weight.detach().numpy()
    bta = hf_bert.embeddings.LayerNorm.bias.detach().numpy()
    x = ref["word"][p] + ref["pos"][p] + ref["seg"][p]
    for c in range(3):
        row = f"| {c} | {half_up(x[c], 4)} |"
        assert row in md, row
        assert f"| {half_up(g[c], 4)} | {half_up(bta[c], 4)} | {half_up(ref['emb_ln'][p, c], 4)} |" in md
    mu, var = x.mean(), x.var()
    assert f"mean μ = {half_up(mu, 4)}, variance σ² = {half_up(var, 4)}" in md
    # q = x W_Q + b: the first products, and the result is transformers' query
    W = hf_bert.encoder.layer[1].attention.self.query.weight.detach().numpy()
    xin = ref["input"][p]
    for c in range(3):
        col = W[3 * 32 + c]
        cells = " | ".join(f"{half_up(xin[i], 4)}·{half_up(col[i], 4)}" for i in range(3))
        assert f"| {c} | {cells} | {half_up((xin[3:] * col[3:]).sum(), 4)} |" in md
        assert f"| {half_up(ref['query'][p, 96 + c], 4)} |" in md
    # W_O: the result row is transformers' attention dense output; the layer's output its last LayerNorm
    assert "| result | " + " | ".join(half_up(ref["attn_dense"][p, c], 4) for c in range(3)) + " |" in md
    last = md.split("the last LayerNorm: the layer's output", 1)[1].split("\n## ", 1)[0]
    for c in range(3):
        assert f" | {half_up(ref['out_ln'][p, c], 4)} |\n" in last
    for k in ("Trace name: embed.tokens, embed.segments, embed.positions.", "Trace name: layers.1.attn.q[3], ",
              "Trace name: layers.1.attn.weights[3].", "Trace name: layers.1.attn.out.", "Trace name: layers.1.out."):
        assert k in md
    zh = w.render("markdown", lang="zh")
    assert "追踪名：layers.1.attn.q[3]" in zh and "第 2 步：词向量各行及其和" in zh and "Step" not in zh
    for fmt in ("rich", "latex"):
        text = w.render(fmt, lang="zh")
        assert half_up(ref["out_ln"][p, 0], 4) in text


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("path-tiny")
    build = {"gemma3": TD.gemma3, "llama_gqa": TD.llama_gqa, "qwen2_window": TD.qwen2_window, "gpt2": T1.tiny_gpt2,
             "albert": TE.albert, "xlm_roberta": TE.xlm_roberta, "bert_zh": T1.tiny_bert_chinese}
    return {k: attnscope.load(b(root / k)) for k, b in build.items()}


@pytest.mark.parametrize("name, text, layer, head, pos", [
    ("gemma3", "A sliding window keeps each token's view to the most recent few tokens.", 2, 3, 9),
    ("llama_gqa", "The quick brown fox jumps over the lazy dog.", 1, 5, 6),
    ("qwen2_window", "The quick brown fox jumps over the lazy dog.", 1, 2, 8),
    ("gpt2", "The quick brown fox jumps over the lazy dog.", 1, 1, 4),
    ("albert", "The quick brown fox jumps over the lazy dog.", 2, 0, 3),
    ("xlm_roberta", "The quick brown fox jumps over the lazy dog.", 1, 2, 3),
    ("bert_zh", "我喜欢人工智能", 1, 2, 2),
])
def test_every_value_equals_the_float64_torch_model(tiny, name, text, layer, head, pos):
    m = tiny[name]
    w = explain_path(text, m, layer=layer, head=head, position=pos)
    tr = copy.deepcopy(m).double().trace(text)
    checked = 0
    for key, ours in w.values.items():
        base = key.split("[")[0]
        if base not in tr:
            continue
        theirs = tr[base][0].numpy()
        if "[" in key:
            h = int(key.split("[")[1][:-1])
            kv = base.rsplit(".", 1)[1] in ("k", "v", "k_proj", "k_normed")
            theirs = theirs[h // (m.config.n_heads // m.config.kv_heads) if kv else h]
            if np.ndim(ours) == 1:
                theirs = theirs[pos]
        else:
            theirs = theirs[pos]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10 * max(1.0, float(np.abs(theirs).max())), err_msg=key)
        checked += 1
    assert checked >= 12
    keys = [s.key for s in w.steps]
    decoder = getattr(m.config, "kind", "") == "decoder"
    assert ("rotation" in keys) == decoder and ("embed_projected" in keys) == (name == "albert")
    assert ("attn_post_norm" in keys) == (name == "gemma3") and keys[-1] == "summary"
    md = w.render("markdown")
    if name == "gemma3":
        assert "(1 + w)" in md and "√32" in md and "Trace name: layers.2.attn.q_normed[3], layers.2.attn.k_normed[3]." in md
    if name == "xlm_roberta":
        assert f"row {pos + 2} of the learned position table" in md and f"position {pos} reads row {pos + 2}" in md
    if name == "gpt2":
        assert "LayerNorm before attention" in md and "tanh" in md


def test_sinusoidal_positions_are_computed(tmp_path):
    import transformers
    cfg = transformers.DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                        max_position_embeddings=64, sinusoidal_pos_embds=True)
    folder = tmp_path / "distil-sin"
    TE.english_vocab(folder)
    transformers.DistilBertModel(cfg).eval().save_pretrained(str(folder))
    w = explain_path(TEXT, attnscope.load(folder), layer=0, head=1, token="cat")
    step = next(s for s in w.steps if s.key == "sinusoid")
    tab = next(b for b in step.blocks if type(b).__name__ == "Table")
    for j, (feat, i2, fn, ang, pe) in enumerate(tab.rows):
        assert feat == j and fn == ("sin" if j % 2 == 0 else "cos") and ang == pytest.approx(2 / 10000 ** (i2 / 32), rel=1e-15)
        assert pe == pytest.approx(math.sin(ang) if j % 2 == 0 else math.cos(ang), abs=1e-15)
    assert w.values["embed.positions"][:4] == pytest.approx([0.0 + math.sin(2), math.cos(2), math.sin(2 / 10000 ** (2 / 32)),
                                                              math.cos(2 / 10000 ** (2 / 32))], abs=1e-15)


def test_errors(tmp_path, minilm, capsys):
    with pytest.raises(InputError, match="target= and attention= are for encoder–decoder models"):
        explain_path(TEXT, minilm, target="x", position=1)
    with pytest.raises(InputError, match="layer 9 is out of range: the model has 6 layers"):
        explain_path(TEXT, minilm, layer=9)
    with pytest.raises(InputError, match="token 'dog' is not in the text"):
        explain_path(TEXT, minilm, token="dog")
    with pytest.raises(InputError, match="give text="):
        explain(path=True)
    capsys.readouterr()
    assert main(["explain", "--path", "--token", "it"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--path works one token's whole path" in err[0]


def test_docs_whole_path_is_current(minilm):
    """docs/whole-path.md is what the tool prints now (the numbers; the float32 differences depend on
    the thread count)."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "whole-path.md").read_text(encoding="utf-8")
    md = explain(text=TEXT, model=minilm, layer=0, head=3, token="it", path=True).render("markdown")
    keep = lambda s: [ln for ln in s.splitlines() if "float32" not in ln and not ln.startswith("| ")  # noqa: E731
                      or ln.startswith("| ") and "e-" not in ln]
    body = doc.split("-->\n\n", 1)[1]
    assert keep(md) == keep(body)


def test_smollm2_path_equals_its_float64_torch_model():
    """The installed SmolLM2-135M (GGUF, 9 query heads on 3 k/v heads): every value of the path
    through layer 2 equals attnscope's torch model run in float64."""
    m = attnscope.load("smollm2-135m")
    text = "When Mary and John went to the store, John gave a drink to"
    w = explain_path(text, m, layer=2, head=4, position=13)
    del m  # memory: the float64 model alone (its weights are the float32 ones widened, as tests/models/test_gguf.py checks)
    m64 = attnscope.load("smollm2-135m", dtype=torch.float64)
    tr = m64.trace(text, names=["embed.*", "layers.1.out", "layers.2.*"])
    checked = 0
    for key, ours in w.values.items():
        base = key.split("[")[0]
        if base not in tr or np.ndim(ours) != 1:
            continue
        theirs = tr[base][0].numpy()
        theirs = theirs[int(key.split("[")[1][:-1])][13] if "[" in key else theirs[13]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * max(1.0, float(np.abs(theirs).max())), err_msg=key)
        checked += 1
    assert checked >= 12
    md = w.render("markdown")
    assert "Query head 4 reads key/value head 1" in md and "SiLU(a)" in md and "100000^(-2i/d)" in md


def test_the_embedding_layernorm_says_when_its_shown_numbers_do_not_divide_out(minilm):
    """"x − μ = 0.0311, √(σ² + ε) = 0.0745, x̂ = 0.4176": 0.0311 / 0.0745 is 0.4174, and the step
    said nothing (the sum and division lines elsewhere carry the rounding note)."""
    from decimal import Decimal
    w = explain(text="The cat sat on the cat.", model=minilm, layer=1, token="cat", path=True)
    x = np.asarray(w.values["embed.sum"], dtype=np.float64)  # (384,) the LayerNorm's input, float64
    mu = math.fsum(x) / len(x)
    root = math.sqrt(math.fsum((v - mu) ** 2 for v in x) / len(x) + 1e-12)
    shown = [(Decimal(half_up(v - mu, 4)), Decimal(half_up((v - mu) / root, 4))) for v in x[:3]]
    den = Decimal(half_up(root, 4))
    off = any((a / den).quantize(Decimal("0.0001"), rounding="ROUND_HALF_UP") != b for a, b in shown)
    assert off  # 0.0311 / 0.0745 = 0.4174…, shown 0.4176
    md = w.render("markdown")
    step = next(s for s in md.split("\n## ") if s.split("\n")[0].endswith("LayerNorm of the embedding sum"))
    assert "Each number is the exact value rounded on its own, so for x̂_i" in step, step
