"""``explain --attribution rollout|norm|alti``: the worked row against independent computations —
a plain loop over layers, heads and tokens on the float64 forward's weights (rollout of a tiny 2-layer
BERT written out entry by entry; Kobayashi's norms head by head), the float64 twins
(attnscope.reference.attribution, reference.attribution_blocks) and the torch methods on the float32
trace (``model.attribute``) — and the lesson in both languages, its formats and its errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers gemma3)
import tests.models.encoders.tiny  # noqa: F401  (registers deberta_v3)
import tests.models.seq2seq.tiny  # noqa: F401  (registers t5)
from attnscope import reference_model
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.explain.attribution_doc import explain_attribution
from attnscope.explain.attribution_values import lesson_values
from attnscope.reference import attribution as RA
from attnscope.reference import attribution_blocks as RB
from attnscope.testing.tiny import FAMILIES, tiny_bert, tiny_gpt2

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def bert2(tmp_path_factory):
    """A tiny random BERT: 2 layers, 4 heads."""
    return attnscope.load(tiny_bert(tmp_path_factory.mktemp("bert2")))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return attnscope.load(FAMILIES["t5"].build(tmp_path_factory.mktemp("t5")))


def loop_rollout_row(W: list, i: int) -> list:
    """Row i of Abnar & Zuidema's rollout as plain Python on per-layer weights W[l] (H, L, L): the head
    mean, ½·A + ½·I, each row divided by its sum, then R = Ã_l · R from layer 0 up, entry by entry."""
    L = W[0].shape[-1]
    R = [[1.0 if a == b else 0.0 for b in range(L)] for a in range(L)]
    for w in W:
        H = w.shape[0]
        A = [[sum(float(w[h, a, b]) for h in range(H)) / H for b in range(L)] for a in range(L)]
        half = [[0.5 * A[a][b] + (0.5 if a == b else 0.0) for b in range(L)] for a in range(L)]
        tilde = [[x / sum(row) for x in row] for row in half]
        R = [[sum(tilde[a][k] * R[k][b] for k in range(L)) for b in range(L)] for a in range(L)]
    return R[i]


def test_rollout_of_a_two_layer_model_equals_a_loop_by_hand(bert2):
    f = reference_model.forward(bert2, TEXT)
    W = [np.asarray(f[f"layers.{l}.attn.weights"]) for l in range(2)]
    L = W[0].shape[-1]
    for q in (0, 3, L - 1):
        v = lesson_values(bert2, TEXT, "rollout", position=q)
        assert v["layer"] == 1 and len(v["row"]) == L
        assert np.abs(v["row"] - np.array(loop_rollout_row(W, q))).max() <= 1e-14
        # the top-down product by hand: u_1 = Ã_1[q], u_0 = Σ_j u_1,j Ã_0[j, :]
        tilde = [(0.5 * w.mean(0) + 0.5 * np.eye(L)) / (0.5 * w.mean(0) + 0.5 * np.eye(L)).sum(-1, keepdims=True)
                 for w in W]
        u1 = tilde[1][q]
        u0 = [sum(u1[j] * tilde[0][j, c] for j in range(L)) for c in range(L)]
        assert np.abs(v["u"][1] - u1).max() <= 1e-15 and np.abs(v["u"][0] - np.array(u0)).max() <= 1e-15
        assert np.abs(v["row"] - v["torch"]).max() <= 1e-6


def test_rollout_values_are_the_twins_and_the_torch_method(minilm):
    v = lesson_values(minilm, TEXT, "rollout", token="cat")
    q = v["qpos"]
    f = reference_model.forward(minilm, TEXT)
    tilde = RA.residual_attention(RA.mean_weights(f, 6))
    assert np.array_equal(v["tilde"], tilde)  # each layer's Ã is the twin's, bit for bit
    assert np.abs(v["row"] - RA.rollout(tilde)[5, q]).max() <= 1e-15  # summed in another order
    torch_row = minilm.attribute(TEXT, "rollout").scores[q].double().numpy()
    assert np.abs(v["row"] - torch_row).max() <= 1e-6  # measured 5.6e-8
    assert abs(v["row"].sum() - 1.0) <= 1e-12
    w = explain_attribution(TEXT, "rollout", model=minilm, token="cat", layer=2)
    assert w.meta["layer"] == 2 and set(w.values) == {"mixed[2]", "mixed[1]", "product[1]", "mixed[0]", "rollout"}
    assert np.abs(w.values["rollout"] - RA.rollout(tilde)[2, q]).max() <= 1e-15


def test_norm_values_equal_kobayashi_head_by_head(minilm):
    layer = 3
    v = lesson_values(minilm, TEXT, "norm", token="cat", layer=layer)
    q = v["qpos"]
    f = reference_model.forward(minilm, TEXT)
    w, vv = f[f"layers.{layer}.attn.weights"], f[f"layers.{layer}.attn.v"]  # (H, L, L), (H, L, d_head)
    W_O = minilm.layers[layer].attn.W_O.weight.detach().double().numpy()  # (d, H·d_head)
    H, L, dh = w.shape[0], w.shape[-1], vv.shape[-1]
    total = np.zeros((L, W_O.shape[0]))
    for h in range(H):
        for j in range(L):
            fx = W_O[:, h * dh:(h + 1) * dh] @ vv[h, j]  # f^h(x_j), (d,)
            assert abs(v["alpha"][h, j] * np.linalg.norm(fx) - v["heads"][h, j]) <= 1e-12
            total[j] += w[h, q, j] * fx
    assert np.abs(np.linalg.norm(total, axis=-1) - v["row"]).max() <= 1e-12
    assert np.array_equal(v["row"], RB.kobayashi(vv, w, W_O)[1][q])  # the twin's row itself
    got = minilm.attribute(TEXT, "norm", layer=layer)
    assert np.abs(v["row"] - got.scores[q].double().numpy()).max() <= 1e-6 * np.abs(v["row"]).max()


def test_alti_values_are_the_twins_and_the_torch_method(minilm):
    v = lesson_values(minilm, TEXT, "alti", token="cat")
    q, top = v["qpos"], v["layer"]
    ref = RB.block_methods(minilm, TEXT)["alti"]
    assert np.array_equal(v["C"], ref)
    assert np.abs(v["raw"] / v["rowsum"] - ref[top, q]).max() <= 1e-15  # the top layer's row from its norms
    assert np.abs(v["row"] - RB.rollout(ref, top)[q]).max() <= 1e-15
    assert np.abs(v["row"] - v["torch"]).max() <= 1e-6  # measured 5.5e-7


def test_a_causal_model_needs_only_the_earlier_rows(gpt2):
    v = lesson_values(gpt2, TEXT, "rollout", position=3)
    assert list(v["rows"][0]) == [0, 1, 2, 3] and np.all(v["row"][4:] == 0.0)
    assert np.abs(v["row"] - v["torch"]).max() <= 1e-6


def test_an_encoder_decoder_model_works_its_encoder(t5):
    v = lesson_values(t5, "the cat sat", "rollout", position=1)
    assert np.abs(v["row"] - v["torch"]).max() <= 1e-6
    with pytest.raises(InputError, match="encoder–decoder model") as e:
        lesson_values(t5, "the cat sat", "norm", position=1)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("method", ["rollout", "norm", "alti"])
def test_the_lesson_in_both_languages_and_every_format(minilm, method):
    w = explain_attribution("The cat sat.", method, model=minilm, token="cat")
    en, zh = w.render("markdown"), w.render("markdown", lang="zh")
    assert "2:cat" in en and "Step 1:" in en and "Together:" in en
    assert "第 1 步" in zh and "合计" in zh
    for english in ("Layer", "the product", "weight", "Compared with", "Together", "Every number"):
        assert english not in zh, english
    doc = json.loads(w.render("json", lang="zh"))
    assert doc["kind"] == "attribution" and doc["meta"]["method"] == method
    tex = w.render("latex")
    body = tex.split("\\begin{document}", 1)[1]
    declared = {chr(int(h, 16)) for h in re.findall(r"\\DeclareUnicodeCharacter\{([0-9A-F]{4})\}", tex)}
    assert tex.startswith("% compile with pdflatex") and {c for c in body if ord(c) > 255} - set("–—‘’“”…•") <= declared


def test_the_rollout_lesson_shows_the_steps(minilm):
    md = explain_attribution("The cat sat.", "rollout", model=minilm, token="cat").render("markdown")
    assert "| **½A + ½I** |" in md and "| **Ã** |" in md and "u₄ = 0.2450×[0.9739" in md
    assert "| 2 | cat | 0.2653 | 0.0428 | 4.3% |" in md  # the raw weight beside the rollout
    assert "Σ u₀ = 0.7173 + 0.0381 + 0.0428 + 0.0274 + 0.0503 + 0.1241" in md
    assert "The row of 2:cat in R is e_i Ã_5 … Ã_0." in md


@pytest.mark.parametrize("args,words", [
    (["--attribution", "gradient"], "choose one of rollout, norm, alti"),
    (["--attribution", "rollout", "--path"], "without --path"),
    (["--attribution", "rollout", "--target", "x"], "leave out --target and --attention"),
    (["--attribution", "norm", "--head", "0"], "takes every head"),
])
def test_bad_input_is_one_sentence(args, words, capsys):
    assert main(["explain", "--text", "The cat sat.", "--token", "cat"] + args) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("args,flag", [
    (["--causal"], "--causal"), (["--scoring", "unscaled"], "--scoring"), (["--labels", "a,b"], "--labels"),
    (["--query", "0"], "--query"), (["--dk", "8"], "--dk"), (["--scheme", "rotary"], "--scheme"),
    (["--offset", "0"], "--offset"), (["--entry", "1,2"], "--entry"),
])
def test_an_option_of_another_lesson_is_refused_not_ignored(args, flag, capsys):
    """The lesson works the model's own attention: a causal mask, another scoring, labels, a d_k or a
    position scheme asked for beside it would not change a number, so they are refused, as the row
    lesson refuses --scheme (each was silently dropped: the rollout of a bidirectional BERT came out
    under --causal)."""
    assert main(["explain", "--text", "The cat sat.", "--token", "cat", "--attribution", "rollout"] + args) == 2
    err = capsys.readouterr().err.strip()
    assert f"without {flag}" in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("extra", [{"causal": True}, {"scoring": "unscaled"}, {"d_k": 8}, {"query": 0},
                                   {"scores": [1.0, 2.0]}, {"tokens": ["a", "b"]}])
def test_the_python_api_refuses_another_lessons_argument(minilm, extra):
    """attnscope.explain(attribution=…) with an argument only another lesson reads: one InputError
    naming it (it was dropped, the same row coming back as without it)."""
    name = next(iter(extra))
    with pytest.raises(InputError, match=f"without {name}"):
        attnscope.explain(text="The cat sat.", token="cat", model=minilm, attribution="rollout", layer=0, **extra)


def test_bad_input_in_chinese(capsys):
    assert main(["explain", "--text", "The cat sat.", "--token", "cat", "--attribution", "gradient", "--lang", "zh"]) == 2
    assert "不是逐步讲解支持的方法" in capsys.readouterr().err
    assert main(["explain", "--token", "cat", "--attribution", "rollout", "--lang", "zh"]) == 2
    assert "请给出 --text" in capsys.readouterr().err


def test_the_command_line_writes_the_lesson(capsys):
    assert main(["explain", "--text", "The cat sat.", "--token", "cat", "--attribution", "rollout", "--layer", "1",
                 "--format", "markdown", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 逐步计算 2:cat 的注意力 rollout（第 0–1 层）") and "第 0 层：Ã 和乘积" in out


def test_the_python_api(minilm):
    w = attnscope.explain(text="The cat sat.", token="cat", model=minilm, attribution="rollout", layer=1)
    v = lesson_values(minilm, "The cat sat.", "rollout", token="cat", layer=1)
    assert np.array_equal(w.values["rollout"], v["row"]) and w.meta["layer"] == 1
    assert attnscope.explain(text="The cat sat.", token="cat", model=minilm, attribution="norm").meta["layer"] == 5
    assert attnscope.explain(text="The cat sat.", token="cat", model=minilm).meta["layer"] == 0  # a row: layer 0
    with pytest.raises(InputError, match="without --path"):
        attnscope.explain(text="The cat sat.", token="cat", model=minilm, attribution="rollout", path=True)


@pytest.mark.parametrize("family", ["deberta_v3", "gemma3"])
def test_relative_positions_and_sliding_windows(family, tmp_path):
    """DeBERTa's disentangled terms and Gemma 3's sliding windows act on α only: the lesson's rows
    equal the torch methods (float32 trace). ALTI's differences of large L1 norms carry the float32
    method's own error: measured 1.6e-6 on the tiny DeBERTa, 7e-8 on Gemma 3."""
    model = attnscope.load(FAMILIES[family].build(tmp_path / family))
    for method, bound in (("rollout", 1e-6), ("norm", 1e-6), ("alti", 3e-6)):
        v = lesson_values(model, TEXT, method, position=3)
        scale = np.abs(v["row"]).max() if method == "norm" else 1.0
        assert np.abs(v["row"] - v["torch"]).max() <= bound * scale, method


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_rollout_summary_says_what_the_tokens_beyond_its_four_share(minilm, lang):
    """The last line named the four largest shares of a 9-token row as if they were all of it (68.5%,
    11.0%, 4.3%, 3.9%: 87.7%); it now adds the rest's share. Shares from the float64 twin's rollout."""
    f = reference_model.forward(minilm, TEXT)
    row = RA.rollout(RA.residual_attention(RA.mean_weights(f, 6)))[5, 2]  # 2:cat after layer 5
    order = np.argsort(-row, kind="stable")
    labels = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    pct = lambda x: f"{100 * x / row.sum():.1f}%"  # noqa: E731
    rest = pct(row[order[4:]].sum())
    if lang == "en":
        line = ("Where the vector of 2:cat comes from, by rollout: " + ", ".join(
            f"{pct(row[j])} from {j}:{labels[j]}" for j in order[:4]) + f", {rest} from the other tokens (5).")
    else:
        line = ("按 rollout，2:cat 的向量的来源：" + "、".join(f"{pct(row[j])} 来自 {j}:{labels[j]}" for j in order[:4])
                + f"、{rest} 来自其余 5 个 token。")
    md = explain_attribution(TEXT, "rollout", model=minilm, token="cat").render("markdown", lang=lang)
    assert line in md.splitlines(), [ln for ln in md.splitlines() if "rollout" in ln][-1]
