"""analyze's special-token shares with raw weights and with norms (issue 27 item 3), against a
float64 loop over layers, heads and query rows written here from ``model.attribute(…, "norm")``'s
per-head norms and the traced attention weights; the report's section in en and zh and the JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.norm_shares import norm_shares
from attnscope.testing.tiny import FAMILIES

TEXTS = ["The bank of the river was green.", "She put the money in the bank, then went home."]


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(FAMILIES["gpt2"].build(tmp_path_factory.mktemp("tiny-gpt2")))


def direct(model, texts, causal):
    """Token-weighted means over the counted rows of every text: {kind: (raw, norm) (n_layers, H)}."""
    sums: dict = {}
    rows = 0
    for text in texts:
        tokens = model.encode(text).tokens[0]
        if causal:
            sets = {"first": [0]}
        else:
            assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
            sets = {"cls": [0], "sep": [j for j, t in enumerate(tokens) if t == "[SEP]"]}
        special = {j for js in sets.values() for j in js}
        heads = model.attribute(text, method="norm").details["heads"].double().numpy()  # (n_layers, H, L, L)
        tr = model.trace(text, names=["layers.*.attn.weights"])
        n_layers, H, L, _ = heads.shape
        for kind, js in sets.items():
            raw, norm = sums.setdefault(kind, (np.zeros((n_layers, H)), np.zeros((n_layers, H))))
            for layer in range(n_layers):
                w = tr[f"layers.{layer}.attn.weights"][0].double().numpy()  # (H, L, L)
                for h in range(H):
                    for i in range(L):
                        if i in special:
                            continue
                        raw[layer, h] += sum(w[h, i, j] for j in js)
                        norm[layer, h] += sum(heads[layer, h, i, j] for j in js) / sum(heads[layer, h, i])
        rows += sum(1 for i in range(len(tokens)) if i not in special)
    return {k: (r / rows, n / rows) for k, (r, n) in sums.items()}, rows


@pytest.mark.parametrize("name", ["minilm", "gpt2"])
def test_shares_equal_a_direct_loop(name, minilm, gpt2):
    model = minilm if name == "minilm" else gpt2
    causal = bool(model.config.causal)
    got = norm_shares(model, TEXTS)
    want, rows = direct(model, TEXTS, causal)
    assert got["texts"] == 2 and got["rows"] == rows
    assert got["kinds"] == (["first"] if causal else ["cls", "sep"])
    for kind, (raw, norm) in want.items():
        np.testing.assert_allclose(got[kind]["raw"], raw, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got[kind]["norm"], norm, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got[kind]["layer_raw"], raw.mean(1), rtol=1e-9, atol=1e-12)
    if causal:  # the first row sees only the first token: its raw share would be 1, and it is left out
        assert got["first"]["raw"].max() < 1


def test_kobayashi_drop_on_minilm(minilm):
    """[CLS]/[SEP] take less of the vectors than of the weights (Kobayashi et al. 2020's finding),
    in the layers where they take much: the mean over heads of layers 1-4."""
    got = norm_shares(minilm, TEXTS)
    raw = got["cls"]["raw"] + got["sep"]["raw"]
    norm = got["cls"]["norm"] + got["sep"]["norm"]
    assert norm[1:5].mean() < 0.5 * raw[1:5].mean()


def test_analyze_reports_them(minilm, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS + ["A third text the shares do not read."]) + "\n", encoding="utf-8")
    r = analyze(str(corpus), minilm, max_texts=3, importance_texts=0, norm_texts=2, progress=False)
    want, _ = direct(minilm, TEXTS, False)
    np.testing.assert_allclose(r.norm_shares["cls"]["norm"], want["cls"][1], rtol=1e-9, atol=1e-12)
    paths = r.write(tmp_path / "en", "en")
    data = json.loads(paths["analysis.json"].read_text(encoding="utf-8"))
    np.testing.assert_allclose(data["special_norms"]["sep"]["raw"], want["sep"][0], atol=1e-6)
    md = paths["report.md"].read_text(encoding="utf-8")
    assert "## Special tokens with and without norms" in md and "| [CLS] raw | [CLS] norm |" in md
    zh = r.write(tmp_path / "zh", "zh")["report.md"].read_text(encoding="utf-8")
    assert "## 特殊 token：只看权重与计入范数" in zh and "| [CLS]权重 | [CLS]范数 |" in zh
    none = analyze(str(corpus), minilm, max_texts=3, importance_texts=0, norm_texts=0, progress=False)
    assert "special_norms" not in json.loads(none.write(tmp_path / "none")["analysis.json"].read_text(encoding="utf-8"))
