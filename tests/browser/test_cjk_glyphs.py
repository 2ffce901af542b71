"""CJK tokens are drawn with the embedded font, in a Chromium without CJK system fonts (the font
sandbox, whatever this machine has), from the first paint on: the exported file and the served
page, every view, after switching text.

Chromium's DevTools protocol tells which font drew each element's glyphs
(``CSS.getPlatformFontsForNode``); a glyph that fell back to a system font (DejaVu Sans draws a
box for 我) shows up there as another family.
"""

from __future__ import annotations

import pytest

from attnscope.fonts import CJK_FAMILY
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.cjk_glyphs import SHOWN_TEXT, cjk_fallbacks, is_cjk
from tests.browser.conftest import wait_ready

pytestmark = pytest.mark.browser

ZH = "我喜欢人工智能"
ZH2 = "银行在河边"  # other characters than ZH: the served page must load their glyphs too


def fallbacks(page, selector: str) -> list[tuple[str, list]]:
    """[(element text, fonts)] for the elements matching ``selector`` that hold CJK characters
    drawn by any font other than the embedded one (checked right now, no waiting)."""
    # DevTools' CSS agent re-reads a file: page's styles and logs "Unsafe attempt to load URL": ours
    page.ignored.append("'file:' URLs are treated as unique security origins")
    checked, bad = cjk_fallbacks(page, selector, CJK_FAMILY, text_js=SHOWN_TEXT)
    assert checked, f"no element with CJK text matches {selector!r}"
    return bad


VIEWS = {
    "head": ".as-hv .as-tok",
    "step": ".as-sv td.tok, .as-sv [data-testid=step-caption], .as-sv select",
    "context": ".as-cv .as-note, .as-cv svg text",
    "model": None,  # no tokens in the model view; its title and tips are Latin
}


def _check_all_views(page, first_query: int = 1):
    assert fallbacks(page, VIEWS["head"]) == []  # first paint, no wait
    page.dblclick(f"[data-testid=q-{first_query}]")
    assert fallbacks(page, VIEWS["step"]) == []


@pytest.fixture(scope="module")
def zh_file(minilm, tmp_path_factory):
    path = tmp_path_factory.mktemp("zh") / "zh.html"
    path.write_text(render(view_data(minilm, ZH + "的银行", compare=ZH2, token="行")), encoding="utf-8")
    return path


def test_exported_file_every_view_every_load(page, zh_file):
    page.goto(zh_file.as_uri())
    for _ in range(4):  # it varied from load to load
        page.reload()
        wait_ready(page)
        _check_all_views(page)
        page.click("[data-testid=tab-context]")
        assert fallbacks(page, VIEWS["context"]) == []
        page.select_option("[data-testid=text-select]", "1")  # the second text's characters
        page.click("[data-testid=tab-head]")
        assert fallbacks(page, VIEWS["head"]) == []


def test_served_page_first_text_and_after_switching(page, server_url):
    page.goto(server_url)
    for text in (ZH, "the bank", ZH2, ZH + ZH2):
        page.fill("[data-testid=text-input]", text)
        page.click("[data-testid=submit]")  # the page is not ready from here until it has drawn the answer
        wait_ready(page)
        if any(map(is_cjk, text)):
            _check_all_views(page)
        page.click("[data-testid=tab-head]")


def test_exported_png_uses_the_embedded_glyphs(page, zh_file):
    """Canvas text (PNG export) cannot be asked for its fonts: compare its glyph widths with the
    embedded font's and with a fallback's."""
    page.goto(zh_file.as_uri())
    wait_ready(page)
    widths = page.evaluate("""async () => {
        await window.attnscopeViewer.exportBlob('png');  // waits for the glyphs as export does
        const c = document.createElement('canvas').getContext('2d');
        const w = f => { c.font = f; return c.measureText('我喜欢人工智能').width; };
        const p = new attnscope.CanvasPainter(c); p.text(0, 0, 'x', {});  // the font the painter sets
        const painter = c.font;
        return {painter: w(painter), ours: w('13px "attnscope CJK"'), fallback: w('13px monospace')};
    }""")
    assert widths["painter"] == widths["ours"] != widths["fallback"], widths


def test_served_page_own_words_use_the_bundled_font(page, server_url):
    """The intro's Chinese example (and what a user types, same font rule) is drawn with the whole bundled font,
    which the server sends when such a character is on screen."""
    page.goto(server_url)
    page.evaluate("() => document.fonts.ready")
    assert fallbacks(page, ".as-examples .as-link") == []  # the platform name of the font inside
