"""The viewer's own words in Chinese (``attnscope view --lang zh``): the tabs, the toolbar and the
notes read from the catalogue (viewer*.toml), the switch in the toolbar changes them in place
(the view and its state stay), and every Chinese label is drawn with the embedded font (no tofu)
in a Chromium without CJK system fonts."""

from __future__ import annotations

import pytest

from attnscope.fonts import CJK_FAMILY
from attnscope.i18n import TABLES
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.cjk_glyphs import cjk_fallbacks
from tests.browser.conftest import wait_ready

EN, ZH = TABLES["viewer"]["en"], TABLES["viewer"]["zh"]

pytestmark = pytest.mark.browser

#: The page's own words: the title, the tabs, the toolbar's labels, the heads bar.
UI = ".as-title, .as-tabs button, .as-bar label, .as-export, .as-heads > span, .as-heads .as-small, .as-warn"


@pytest.fixture(scope="module")
def zh_page(minilm, tmp_path_factory):  # noqa: F811 (the conftest's fixture)
    path = tmp_path_factory.mktemp("lang") / "zh.html"
    path.write_text(render(view_data(minilm, "The bank of the river."), lang="zh"), encoding="utf-8")
    return path


#: What an element draws itself: a <select> its selected option, a <label> its own words (not its select's options).
OWN_TEXT = ("function () { return this.tagName === 'SELECT' ? (this.selectedIndex < 0 ? '' : "
            "this.options[this.selectedIndex].text) : Array.from(this.childNodes).filter(n => n.nodeType === 3)"
            ".map(n => n.textContent).join(''); }")


def labels(page) -> dict[str, str]:
    return page.evaluate("""() => ({
        head: document.querySelector('[data-testid=tab-head]').textContent,
        step: document.querySelector('[data-testid=tab-step]').textContent,
        all: document.querySelector('[data-testid=heads-all]').textContent,
        png: document.querySelector('[data-testid=export-png]').title,
        lang: document.documentElement.lang + '/' + document.getElementById('attnscope-root').lang,
        on: document.querySelector('[data-testid=lang] .on').textContent})""")


def tofu(page) -> list:
    page.ignored.append("'file:' URLs are treated as unique security origins")  # the CSS agent's own reads
    page.evaluate("() => document.fonts.ready")
    checked, bad = cjk_fallbacks(page, UI, CJK_FAMILY, text_js=OWN_TEXT)
    assert checked >= 5, f"only {checked} Chinese labels found"
    return bad


def test_chinese_page_switches_to_english_and_back_without_tofu(page, zh_page, artifacts):
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto(zh_page.as_uri())
    wait_ready(page)
    assert labels(page) == {"head": ZH["viewer.tab_head"], "step": ZH["viewer.tab_step"], "all": ZH["viewer.all"],
                            "png": ZH["viewer.export_png"], "lang": "zh-CN/zh-CN", "on": "中文"}
    assert page.inner_text(".as-title").endswith("· 6 层 × 12 个头")  # all-MiniLM-L6-v2
    assert tofu(page) == []
    page.screenshot(path=str(artifacts / "viewer-zh.png"))

    page.select_option("[data-testid=layer-select]", "2")  # state the switch must keep
    page.click("[data-testid=head-3]")
    page.click("[data-testid=lang-en]")
    assert labels(page) == {"head": EN["viewer.tab_head"], "step": EN["viewer.tab_step"], "all": EN["viewer.all"],
                            "png": EN["viewer.export_png"], "lang": "zh-CN/en", "on": "EN"}
    assert page.inner_text(".as-title").endswith("· 6 layers × 12 heads")
    assert page.input_value("[data-testid=layer-select]") == "2"
    assert "off" in page.get_attribute("[data-testid=head-3]", "class")
    assert "lang=en" in page.evaluate("() => location.hash") and "layer=2" in page.evaluate("() => location.hash")
    assert page.locator(".as-hv .as-tok").count() > 0  # the head view is drawn again

    page.click("[data-testid=lang-zh]")
    assert labels(page)["head"] == ZH["viewer.tab_head"]
    assert "lang=" not in page.evaluate("() => location.hash")  # the page's own default again
    assert page.input_value("[data-testid=layer-select]") == "2"
    assert tofu(page) == []


def test_the_address_opens_the_other_language(page, zh_page):
    page.goto(zh_page.as_uri() + "#view=step&layer=1&lang=en")
    wait_ready(page)
    assert labels(page)["step"] == EN["viewer.tab_step"] and labels(page)["on"] == "EN"


@pytest.mark.parametrize("view, word", [("step", ZH["viewer.query_token"]), ("step", ZH["viewer.col_weight"]),
                                        ("step", "查询 2“bank”，第 0 层，头 0：d_k = 32"),
                                        ("context", ZH["viewer.cmp_none"].strip()),
                                        ("matrix", ZH["viewer.whole_matrix"]),
                                        ("model", ZH["viewer.layer_n"].format(layer=5)), ("head", "左边：每个 token 作为查询")])
def test_each_view_speaks_chinese_without_tofu(page, zh_page, view, word):
    page.goto(zh_page.as_uri() + f"#view={view}&query=2")
    wait_ready(page)
    assert word.strip() in page.inner_text(".as-body")
    page.ignored.append("'file:' URLs are treated as unique security origins")
    checked, bad = cjk_fallbacks(page, ".as-body .as-note, .as-body label, .as-body button, .as-body .as-lab, .as-body select, "
                                 ".as-body th",
                                 CJK_FAMILY, text_js=OWN_TEXT)
    assert checked and bad == []


def test_the_context_view_in_chinese(page, minilm, tmp_path):  # noqa: F811
    path = tmp_path / "cmp.html"
    path.write_text(render(view_data(minilm, "The bank of the river.", compare="Money in the bank.", token="bank"),
                           lang="zh"), encoding="utf-8")
    page.goto(path.as_uri() + "#view=context")
    wait_ready(page)
    body = page.inner_text(".as-body")
    assert "token“bank”（在 A 中位置 2，在 B 中位置 4）" in body and ZH["viewer.cmp_across"] in body
    assert ZH["viewer.cmp_title"].format(token="bank") in page.inner_html(".as-cv svg")
    page.ignored.append("'file:' URLs are treated as unique security origins")
    checked, bad = cjk_fallbacks(page, ".as-cv .as-note, .as-cv th, .as-cv svg text", CJK_FAMILY, text_js=OWN_TEXT)
    assert checked and bad == []
