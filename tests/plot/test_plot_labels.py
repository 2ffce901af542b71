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
    assert "--labels has 3 entries but --scores has 2" in capsys.readouterr().err
    assert main(["plot", "--kind", "hist", "--labels", "a,b", "-o", str(tmp_path / "h.svg")]) == 2
    assert "not of --kind hist" in capsys.readouterr().err


def test_softmax_figure_labels():
    fig = plot.softmax_temperatures([15.3, 22.7, 18.2], [1.0, 8.0], labels=["我", "喜", "欢"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["我", "喜", "欢"]



def test_dollar_signs_in_tokens_are_drawn_as_written(minilm, tmp_path):
    """A token "$$" (SmolLM2 has one: "the formula $$x^2$$") made matplotlib read the label as TeX
    and saving the figure died in a ParseException traceback; "$x_1$" was drawn as a subscript.
    Tokens are drawn as written: each tick label is as wide as its characters set as plain text."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    tr = minilm.trace("a b c d", names=["layers.0.attn.q", "layers.0.attn.k"])
    labels = ["$$", "$x_1$", "b", "$", "[SEP]", "$$"][:tr.length(0)]
    assert len(labels) == tr.length(0)
    figs = [plot.head_heatmap(tr, 0, 0, labels=labels, annotate=False),
            plot.softmax_temperatures([1.0, 2.0, 3.0], [1.0], labels=["$$", "$x_1$", "b"])]
    for i, fig in enumerate(figs):
        fig.savefig(tmp_path / f"{i}.png")  # raised ParseException
        ax = fig.axes[0]
        ticks = ax.get_xticklabels()
        assert [t.get_text() for t in ticks] == (labels if i == 0 else ["$$", "$x_1$", "b"])
        renderer = FigureCanvasAgg(fig).get_renderer()
        for t in ticks:  # the width of the characters as plain text (ismath=False), not as TeX
            w, _, _ = renderer.get_text_width_height_descent(t.get_text(), t.get_fontproperties(), ismath=False)
            extent = t.get_window_extent(renderer)
            along = extent.height if t.get_rotation() == 90 else extent.width  # the extent along the text
            assert along == pytest.approx(w, rel=0.02), t.get_text()


@pytest.mark.parametrize("lang, note", [("en", "every 2nd entry labelled"), ("zh", "每 2 个标注一个")])
def test_a_long_softmax_row_stays_a_readable_figure(lang, note):
    """A 280-key row (`plot TEXT --kind softmax --query 100` of a long text) was a 198-inch-wide
    figure, 29,910 px at 150 dpi, with 280 labels side by side. It is as wide as the heatmap at most
    (24 in), labels every k-th bar without overlaps, says so, and still draws every bar."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    x = [float(i % 7) for i in range(280)]
    labels = [f"tok{i}" for i in range(280)]
    fig = plot.softmax_temperatures(x, [1.0, 8.0], labels=labels, lang=lang)
    assert fig.get_size_inches()[0] <= 24.0
    ax = fig.axes[0]
    assert len(ax.patches) == 2 * 280
    ticks = ax.get_xticklabels()
    assert [t.get_text() for t in ticks] == labels[::2]
    assert [round(p) for p in ax.get_xticks()] == list(range(0, 280, 2))
    assert ax.get_xlabel() == note
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ticks]
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))  # no label runs into the next
    short = plot.softmax_temperatures([1.0, 2.0, 3.0], [1.0], labels=["a", "b", "c"])
    assert short.axes[0].get_xlabel() == "" and [t.get_text() for t in short.axes[0].get_xticklabels()] == ["a", "b", "c"]
