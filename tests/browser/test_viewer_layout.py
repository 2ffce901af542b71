"""The exported viewer's layout at common widths, and the note on unknown tokens (issue #23 item 6):
at 800 px the toolbar is one line (the export buttons wrapped onto a second one); at 1,400 px the
head view takes the width (it used about half); a text the vocabulary mostly does not know ([UNK])
says so, with a model that reads it. Screenshots go to artifacts/browser/."""

import pytest

from attnscope.viewer.html import render
from attnscope.viewer.run import view_data

from .conftest import wait_ready


@pytest.fixture(scope="module")
def pages(minilm, tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    out = {}
    for name, kw in (("bank", dict(texts=["The bank of the river was muddy.", "I deposited money at the bank."],
                                   token="bank")),
                     ("zh", dict(texts=["我喜欢人工智能"]))):
        texts = kw.pop("texts")
        data = view_data(minilm, texts[0], compare=texts[1] if len(texts) > 1 else None, **kw)
        (root / f"{name}.html").write_text(render(data), encoding="utf-8")
        out[name] = (root / f"{name}.html").as_uri()
    return out


def _open(page, url, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    wait_ready(page)


def _box(page, selector):
    return page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                           "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }")


@pytest.mark.parametrize("width", [800, 1024, 1400])
def test_the_toolbar_is_one_line(page, pages, artifacts, width):
    _open(page, pages["bank"], width)
    page.screenshot(path=str(artifacts / f"layout-bank-{width}.png"))
    tabs, png, svg = (_box(page, s) for s in ("[data-testid=tab-head]", "[data-testid=export-png]",
                                             "[data-testid=export-svg]"))
    for b in (png, svg):
        assert b["top"] < tabs["bottom"] and b["bottom"] > tabs["top"], (width, tabs, b)  # the same line
    title = _box(page, ".as-title")
    for lang in ("[data-testid=lang-en]", "[data-testid=lang-zh]"):  # the switch ends the title's line
        b = _box(page, lang)
        assert b["top"] < title["bottom"] and b["bottom"] > title["top"], (width, title, b)
    for row in (".as-bar", ".as-top"):  # neither wraps: one row of controls each
        box = _box(page, row)
        assert box["bottom"] - box["top"] < 2 * (tabs["bottom"] - tabs["top"]), (width, row, box)
    assert page.get_attribute("[data-testid=export-png]", "title") == "Export the view as PNG"


@pytest.mark.parametrize("width", [800, 1400])
def test_the_head_view_takes_the_width(page, pages, width):
    _open(page, pages["bank"], width)
    view = _box(page, "[data-testid=head-view]")
    bar = _box(page, ".as-bar")
    assert view["right"] - view["left"] >= 0.9 * (bar["right"] - bar["left"]), (view, bar)


def test_mostly_unknown_tokens_get_a_note(page, pages, artifacts):
    _open(page, pages["zh"], 800)
    page.screenshot(path=str(artifacts / "layout-zh-800.png"))
    assert page.is_visible("[data-testid=unk-note]")
    note = page.text_content("[data-testid=unk-note]")
    assert note.startswith("4 of the 7 tokens of this text are [UNK]: this model's vocabulary does not know")
    assert "--model multilingual-e5-small" in note


def test_no_note_when_every_token_is_known(page, pages):
    _open(page, pages["bank"], 800)
    assert not page.is_visible("[data-testid=unk-note]")
