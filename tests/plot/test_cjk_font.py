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


def _cjk(ch: str) -> bool:
    """Han (URO, extension A, compatibility), kana, Hangul syllables and compatibility jamo."""
    o = ord(ch)
    return any(a <= o <= b for a, b in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x3040, 0x30FF),
                                         (0x31F0, 0x31FF), (0xAC00, 0xD7A3), (0x3130, 0x318F)))


def test_every_cjk_character_multilingual_e5_reads_is_drawn():
    """The font covered GB 2312, Big5 level 1, … and MiniLM's vocabulary, not the model that reads
    Chinese: 280 of the characters of multilingual-e5's pieces were tofu in its figures (啰, a common
    character; Cantonese 嘅 咗 佢 冇 啲 喺; names such as 喆 堃)."""
    from attnscope.models.e5_file import read_e5
    from attnscope.models.packages import package_model_path
    pieces = read_e5(package_model_path("multilingual-e5-small"), weights=False).pieces
    chars = {c for p in pieces for c in p if _cjk(c)}
    assert len(chars) > 9000
    assert sorted(c for c in chars if not fonts.has_glyph(c)) == []
    with rc_context(fonts.matplotlib_rc()), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = Figure()
        fig.add_subplot().set_xticks(range(4), ["啰嗦", "佢哋嘅", "喆堃", "冇咗"])
        fig.savefig(io.BytesIO(), format="png")
    assert [str(w.message) for w in caught if "missing from font" in str(w.message)] == []
