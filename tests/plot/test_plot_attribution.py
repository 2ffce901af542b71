"""``plot --attribution`` (issue 27 item 3) draws model.attribute's matrices: the array each
imshow holds equals what ``model.attribute`` gives, computed here without the plotting code (norm:
the per-head ‖α·f(x)‖ of ``details["heads"]`` divided by each row's sum in float64; rollout, ALTI,
value zeroing: ``scores`` of ``attribute(text, method, layer=l)``, one call per layer); titles,
axes and colour bars in en and zh; the command line writes the file and refuses bad input in one line."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attnscope.attribution.shown import SHOWN
from attnscope.cli import main
from attnscope.cli.plot import ATTRIBUTIONS
from attnscope.i18n import text
from attnscope.plot.attribution import attribution_grid, attribution_heatmap

TEXT = "The bank of the river was green."


def expected(model, method: str, layer: int, head: int) -> np.ndarray:
    if method == "norm":
        h = model.attribute(TEXT, method="norm").details["heads"][layer, head].double().numpy()  # (L, L)
        return h / h.sum(-1, keepdims=True)
    return model.attribute(TEXT, method=method, layer=layer).scores.double().numpy()  # (L, L)


def drawn(ax) -> np.ndarray:
    return np.asarray(ax.images[0].get_array(), dtype=np.float64)


@pytest.mark.parametrize("method", SHOWN)
def test_heatmap_draws_the_methods_matrix(minilm, method):  # noqa: F811 (conftest's fixture)
    fig = attribution_heatmap(minilm, TEXT, method, layer=3, head=5)
    ax = fig.axes[0]
    np.testing.assert_allclose(drawn(ax), expected(minilm, method, 3, 5), rtol=0, atol=2e-7)  # float32 of the same
    assert [t.get_text() for t in ax.get_xticklabels()][:3] == ["[CLS]", "the", "bank"]
    if method != "norm":  # one matrix a layer: the head does not matter
        np.testing.assert_array_equal(drawn(attribution_heatmap(minilm, TEXT, method, layer=3, head=0).axes[0]), drawn(ax))


def test_grids(minilm):  # noqa: F811
    fig = attribution_grid(minilm, TEXT, "norm")
    H = minilm.config.n_heads
    assert len(fig.axes) == minilm.config.n_layers * H + 1  # + the colour bar
    np.testing.assert_allclose(drawn(fig.axes[4 * H + 7]), expected(minilm, "norm", 4, 7), rtol=0, atol=2e-7)
    fig = attribution_grid(minilm, TEXT, "alti")
    assert len(fig.axes) == minilm.config.n_layers + 1
    for layer in (0, 5):
        np.testing.assert_allclose(drawn(fig.axes[layer]), expected(minilm, "alti", layer, 0), rtol=0, atol=2e-7)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_words_in_both_languages(minilm, lang):  # noqa: F811
    ax = attribution_heatmap(minilm, TEXT, "rollout", layer=2, lang=lang).axes[0]
    name = text("plot.attr_name_rollout", lang)
    assert ax.get_title() == text("plot.attr_title_layer", lang, model=minilm.name, method=name, layer=2)
    assert ax.get_ylabel() == text("plot.attr_row_axis", lang) and ax.get_xlabel() == text("plot.attr_col_axis", lang)
    fig = attribution_grid(minilm, TEXT, "norm", lang=lang)
    assert fig.get_suptitle() == text("plot.attr_grid_heads", lang, model=minilm.name,
                                      method=text("plot.attr_name_norm", lang), n=10)
    assert fig.axes[-1].get_ylabel() == text("plot.attr_colorbar_norm", lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_short_texts_title_is_not_cut(minilm, lang):  # noqa: F811
    """'我喜欢你' is 6 tokens: the figure (6.9 in) was narrower than the accumulated methods'
    titles ('sentence-transformers/all-MiniLM-L6-v2 · rollout up to layer 5 (from layer 0; no
    heads)'), drawn cut at both sides; the norm's too on a one-character text. Now smaller, whole."""
    import io
    for method, text_ in [(m, "我喜欢你") for m in SHOWN] + [("norm", "好")]:
        fig = attribution_heatmap(minilm, text_, method, layer=5, head=3, lang=lang)
        fig.savefig(io.BytesIO(), format="png")  # lays the figure out
        box = fig.axes[0].title.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, (method, text_)


def test_command_line(tmp_path, capsys, monkeypatch):
    assert ATTRIBUTIONS == SHOWN
    out = tmp_path / "r.png"
    assert main(["plot", TEXT, "--attribution", "rollout", "--layer", "2", "--lang", "zh", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")
    assert main(["plot", TEXT, "--attribution", "norm", "--kind", "grid", "-o", str(tmp_path / "g.svg")]) == 0
    monkeypatch.chdir(tmp_path)
    for argv, msg in [(["--kind", "hist"], "--attribution draws --kind heatmap or grid, not --kind hist"),
                      (["--head", "12"], "head 12 is out of range: there are 12 heads (0..11)"),
                      (["--layer", "6"], "layer 6 is out of range: there are 6 layers (0..5)")]:
        capsys.readouterr()
        assert main(["plot", TEXT, "--attribution", "norm", *argv, "-o", "x.png"]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_texts_attribution_axes_say_which_tokens_are_labelled(monkeypatch, lang):
    """A 200-token text labels every 2nd token of `plot TEXT --attribution rollout`; head_heatmap's
    axes said so and the attribution heatmap's did not ("input token (column)" over 100 labels of
    200 columns). Its axes now end with the same note (the matrix stubbed: only the labels count)."""
    import attnscope.plot.attribution as pa

    n = 200
    monkeypatch.setattr(pa, "attribution_matrix", lambda *a, **k: (np.full((n, n), 1 / n), [f"t{i}" for i in range(n)]))
    ax = attribution_heatmap(SimpleNamespace(name="m"), "x", "rollout", layer=0, lang=lang).axes[0]
    note = text("plot.every", lang, ordinal="2nd" if lang == "en" else 2)
    assert ax.get_xlabel() == text("plot.attr_col_axis", lang) + note
    assert ax.get_ylabel() == text("plot.attr_row_axis", lang) + note
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{i}:t{i}" for i in range(0, n, 2)]
