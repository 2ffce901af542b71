"""One counting convention in every output (issue 15 item 4): positions, rows, columns, dimensions,
heads and layers count from 0, as the trace, the viewer and --position/--head/--layer do.

Every kind of output states it once (Markdown, rich, LaTeX, JSON, both languages; JSON also as
``index_base: 0``), and the indices shown are the 0-based ones: the toy's q₀ is the first token's
query (plain-Python matrix products as the reference), a real row's position j and V column c are
the trace's ``[0, j, c]``, the path's feature columns are the trace's features, and ``check``
reports the entry at Python index (i, j) as row i, column j.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attnscope
from attnscope.check import check
from attnscope.explain import explain
from attnscope.explain.i18n import LABELS
from attnscope.testing.tiny import tiny_bert_chinese, tiny_gpt2  # needs transformers (test extra)

from .reference import THREE, matmul

EN = LABELS["en"]["counting"]
ZH = LABELS["zh"]["counting"]
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
GPT2_TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    return attnscope.load(tiny_bert_chinese(tmp_path_factory.mktemp("zh")))


def _outputs(gpt2, chinese) -> dict:
    return {
        "toy": explain(example="three-tokens"),
        "multi-head": explain(example="multi-head"),
        "grouped-query": explain(example="grouped-query"),
        "scores": explain(scores=[15.3, 22.7, 18.2], values=[[1, 0], [0, 1], [1, 1]], d_k=64),
        "scaling": explain(lesson="scaling", samples=200),
        "sinusoidal": explain(lesson="positions", position=5, dim=2, offset=3),
        "rotary": explain(lesson="positions", scheme="rotary", position=5),
        "t5": explain(lesson="positions", scheme="t5", position=20, offset=-13),
        "model row": explain(text=GPT2_TEXT, model=gpt2, layer=0, head=1, position=3, dims=2),
        "path": explain(text="我喜欢人工智能", model=chinese, layer=1, head=2, token="喜", path=True),
    }


def test_every_output_states_the_convention_once(gpt2, chinese):
    for name, w in _outputs(gpt2, chinese).items():
        for fmt in ("markdown", "rich", "latex"):  # the terminal wraps lines: compare without the breaks
            assert " ".join(w.render(fmt).split()).count(EN) == 1, (name, fmt)
            assert "".join(w.render(fmt, lang="zh").split()).count("".join(ZH.split())) == 1, (name, fmt, "zh")
        for lang, line in (("en", EN), ("zh", ZH)):
            d = json.loads(w.render("json", lang=lang))
            assert d["index_base"] == 0, name
            assert [b["text"] for b in d["intro"] if b["type"] == "para"].count(line) == 1, (name, lang)
    for r in (check(example="three-tokens-article"), check(example="xi-row-article")):
        assert r.render("markdown").count(EN) == 1 and " ".join(r.render("rich").split()).count(EN) == 1
        assert r.render("markdown", lang="zh").count(ZH) == 1
        assert json.loads(r.render("json"))["index_base"] == 0


def test_no_output_says_it_counts_from_one(gpt2, chinese):
    for name, w in _outputs(gpt2, chinese).items():
        for lang in ("en", "zh"):
            text = w.render("markdown", lang=lang)
            assert not re.search(r"(count|numbered)[^.]{0,40}\bfrom 1\b|1-based|从 1 开始", text), (name, lang)


def test_toy_rows_and_columns_are_the_matrices_indices():
    """qᵢ, kᵢ, vᵢ, sᵢ … are row i (from 0) of the matrices; the column headers are 0 … d − 1."""
    md = explain(example="three-tokens").render("markdown")
    for sym, W in (("q", THREE["W_Q"]), ("k", THREE["W_K"]), ("v", THREE["W_V"])):
        M = matmul(THREE["X"], W)
        for i, row in enumerate(M):
            want = "[" + ", ".join(str(x) for x in row) + "]"
            assert re.search(rf"^{sym}{str(i).translate(SUB)} = \[.*\]\n   = {re.escape(want)}$", md, re.M), (sym, i)
        assert f"| **{sym.upper()}** | 0 | 1 |" in md
    for sym in ("q", "k", "v", "s", "s'", "Σ", "a", "o"):
        shown = set(re.findall(rf"^{re.escape(sym)}([₀-₉]+) = ", md, re.M))
        assert shown == {"₀", "₁", "₂"}, sym
    assert "| **W_Q** | 0 | 1 |\n|---|---:|---:|\n| 0 | 1 | 0 |\n| 1 | 1 | 1 |" in md  # W_Q[0] = [1, 0], W_Q[1] = [1, 1]


def test_multi_head_columns_are_head_and_feature_from_0():
    w = explain(example="multi-head")
    md = w.render("markdown")
    fused = w.values["QKV"]
    H, d = 2, 2
    # column Qh.f of X·W_QKV is column h·d + f of the fused product (the Q block comes first)
    header = next(ln for ln in md.splitlines() if ln.startswith("| **X·W_QKV** |"))
    cols = [c.strip() for c in header.split("|")[2:-1]]
    assert cols[:H * d] == [f"Q{h}.{f}" for h in range(H) for f in range(d)]
    first = next(ln for ln in md.splitlines() if ln.startswith("| 我 |") and ln.count("|") == len(cols) + 2)
    cells = [float(c) for c in first.split("|")[2:-1]]
    np.testing.assert_allclose(cells, fused[0], atol=5e-5)
    assert "columns 0–1 of Q" in md and "Q⁽¹⁾[:, 0]" in md


def test_model_row_positions_and_dimensions_are_the_traces(gpt2):
    q, head = 3, 1
    w = explain(text=GPT2_TEXT, model=gpt2, layer=0, head=head, position=q, dims=2)
    md = w.render("markdown")
    tr = gpt2.trace(GPT2_TEXT, names=[f"layers.0.attn.v[{head}]"])
    tokens = tr.labels[0]  # as shown: byte-level pieces decoded (' quick' for Ġquick)
    assert tokens != tr.tokens[0]
    v = tr[f"layers.0.attn.v[{head}]"][0].double().numpy()  # (L, d_head)
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (-?[\d.]+) \|$", md.split("## Step 2")[0], re.M)
    assert [(int(j), t.strip()) for j, t, _ in rows] == [(j, t.strip()) for j, t in enumerate(tokens)]
    assert "| **V** | 0 | 1 |" in md
    for j, tok in enumerate(tokens):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {j}:{tok} |"))
        cells = [float(c) for c in line.split("|")[2:-1]]
        np.testing.assert_allclose(cells, v[j, :2], atol=5e-5 + 1e-5)
    assert f"z{str(q).translate(SUB)} = " in md and f"The query is {q}:{tokens[q]}" in md


def test_path_features_are_the_traces(chinese):
    text, pos = "我喜欢人工智能", 2
    w = explain(text=text, model=chinese, layer=1, head=2, position=pos, path=True)
    md = w.render("markdown")
    tr = chinese.trace(text, names=["embed.tokens", "embed.positions"])
    for name in ("embed.tokens", "embed.positions"):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} |"))
        cells = [float(c) for c in line.split("|")[2:-1]]
        np.testing.assert_allclose(cells, tr[name][0, pos, :3].double().numpy(), atol=5e-5 + 1e-6)
    assert "| vector | 0 | 1 | 2 |" in md and "(counted from 0)" in md


def test_check_names_python_indices(gpt2):
    toy = check({"problem": {"example": "three-tokens"},
                 "answers": {"K": [[1, 2], [0, 1], [1, 4]]}})  # K[2][1] is 3, not 4
    (e,) = toy.by_verdict("wrong")
    assert (e.row, e.col) == (2, 1)
    assert "K, row 2 (你), column 1: you wrote 4" in toy.render("markdown")
    assert "键（K），第 2 (你) 行，第 1 列" in toy.render("markdown", lang="zh")  # the step named in Chinese
    d = json.loads(toy.render("json"))
    assert [(x["row"], x["col"]) for x in d["entries"] if x["verdict"] == "wrong"] == [(2, 1)]
    # a real row: the problem's position and the entries count from 0, as --position and the trace
    q, head = 3, 1
    tr = gpt2.trace(GPT2_TEXT, names=[f"layers.0.attn.weights[{head}]"])
    tokens = tr.tokens[0]
    wts = tr[f"layers.0.attn.weights[{head}]"][0, q].double().numpy()
    answers = [f"{x:.4f}" for x in wts]
    answers[1] = f"{wts[1] + 0.05:.4f}"
    r = check({"problem": {"text": GPT2_TEXT, "model": gpt2, "layer": 0, "head": head, "position": q},
               "answers": {"weights": answers}})
    assert r.problem["position"] == q and r.problem["token"] == tokens[q]
    (e,) = r.by_verdict("wrong")
    assert e.col == 1 and e.col_label == f"1 ({tokens[1]})"
    md = r.render("markdown")
    assert f"query {tokens[q]} (position {q})" in md and f"weights, entry 1 ({tokens[1]})" in md
