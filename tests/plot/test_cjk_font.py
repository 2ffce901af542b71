"""CJK token labels render with glyphs (no "missing glyph" warnings) in PNG, SVG and PDF."""

import io
import warnings

import pytest
from matplotlib import rc_context
from matplotlib.figure import Figure

from attnscope import fonts, plot

LABELS = ["[CLS]", "我", "喜欢", "人工智能", "カタカナ", "한국어", "。"]


def _draw(fmt: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = Figure()
        ax = fig.add_subplot()
        ax.set_xticks(range(len(LABELS)), LABELS)
        ax.set_title("注意力 attention")
        fig.savefig(io.BytesIO(), format=fmt)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_bundled_font_draws_cjk_labels(fmt):
    with rc_context(fonts.matplotlib_rc()):
        assert _draw(fmt) == []


def test_without_it_the_same_labels_are_tofu():
    # The check above can fail: DejaVu Sans alone has none of these glyphs.
    with rc_context({"font.family": ["DejaVu Sans"]}):
        missing = _draw("png")
    assert any("我" in m or "25105" in m for m in missing)


def test_heatmap_of_a_chinese_model_has_no_missing_glyphs(tiny_models):
    tr = tiny_models["bert-chinese"].trace("我喜欢人工智能")
    assert tr.tokens[0] == ["[CLS]", "我", "喜", "欢", "人", "工", "智", "能", "[SEP]"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for fmt in ("png", "svg", "pdf"):
            plot.head_heatmap(tr, 0, 1).savefig(io.BytesIO(), format=fmt)
    assert [str(w.message) for w in caught if "missing from font" in str(w.message)] == []


def test_font_covers_common_cjk_and_ships_its_licence():
    for ch in "我喜欢人工智能的是國語漢字カナひらがな한국어":
        assert fonts.has_glyph(ch), ch
    assert fonts.CJK_FONT_PATH.stat().st_size < 4_000_000
    assert "SIL OPEN FONT LICENSE" in (fonts.CJK_FONT_PATH.parent / "OFL.txt").read_text()


def test_subset_for_a_page_keeps_only_the_needed_glyphs():
    from fontTools.ttLib import TTFont
    data = fonts.subset_font("[CLS] 我喜欢 bank")
    cmap = TTFont(io.BytesIO(data)).getBestCmap()
    assert {chr(c) for c in cmap} == set("我喜欢")
    assert fonts.subset_font("only ascii") is None
    assert fonts.font_face_css("ascii") == ""
