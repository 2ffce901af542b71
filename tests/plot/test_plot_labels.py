"""plot --labels: the entries of --scores, or the tokens of a text, named as the lesson names them."""

from __future__ import annotations

import pytest

from attnscope import plot
from attnscope.cli import main
from attnscope.errors import InputError


def test_heatmap_labels(minilm):
    tr = minilm.trace("我喜欢", names=["layers.0.attn.q", "layers.0.attn.k"])
    assert tr.length(0) == 5  # [CLS] 我 [UNK] [UNK] [SEP]: MiniLM has no 喜, 欢
    fig = plot.head_heatmap(tr, 0, 0, labels=["[CLS]", "我", "喜", "欢", "[SEP]"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["[CLS]", "我", "喜", "欢", "[SEP]"]
    with pytest.raises(InputError, match="labels has 3 entries but the text has 5 tokens"):
        plot.head_heatmap(tr, 0, 0, labels=["a", "b", "c"])


def test_cli_labels(tmp_path, capsys):
    out = tmp_path / "s.svg"
    assert main(["plot", "--kind", "softmax", "--scores", "15.3,22.7,18.2", "--labels", "我,喜,欢", "-o", str(out)]) == 0
    assert out.is_file()
    assert main(["plot", "--kind", "softmax", "--scores", "15.3,22.7", "--labels", "我,喜,欢",
                 "-o", str(tmp_path / "t.svg")]) == 2
    assert "labels has 3 entries but x has 2" in capsys.readouterr().err
    assert main(["plot", "--kind", "hist", "--labels", "a,b", "-o", str(tmp_path / "h.svg")]) == 2
    assert "not of --kind hist" in capsys.readouterr().err


def test_softmax_figure_labels():
    fig = plot.softmax_temperatures([15.3, 22.7, 18.2], [1.0, 8.0], labels=["我", "喜", "欢"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["我", "喜", "欢"]
