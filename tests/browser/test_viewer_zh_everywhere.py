"""Every view of the viewer in Chinese (#25 item 4): the one-text views of a tiny Gemma 3 (rotary
positions, sliding window, Gemma's scale: the step view's notes and the rotation table), the
generation view, the encoder–decoder views of a tiny mT5 (T5's bias) and BART, and the served
page's introduction and form. With the switch on 中文 each view shows no English UI word — the
guard list is built from the strings table (tests/viewer/english_guard.py) — in its text, its
tooltips and attributes, and in the picture its SVG export paints; its Chinese is drawn with the
embedded font (no tofu). Screenshots at 800×600 and 1400×1000 go to artifacts/browser/zh/."""

from __future__ import annotations

import re

import pytest

import attnscope
from attnscope.fonts import CJK_FAMILY
from attnscope.viewer import seq2seq as S
from attnscope.viewer.data import all_text
from attnscope.viewer.generation import generation_data
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from attnscope.viewer.seq2seq_page import render as render_s2s
from tests.browser.cjk_glyphs import cjk_fallbacks
from tests.browser.conftest import wait_ready
from tests.browser.test_viewer_lang import OWN_TEXT
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401
from tests.viewer.english_guard import english_left

pytestmark = pytest.mark.browser

SIZES = ((800, 600), (1400, 1000))
TEXT, OTHER = "我喜欢人工智能。北京是中国的首都。", "我喜欢北京"

#: What the page shows of itself: its text, every attribute a person reads, the open tooltip.
PAGE_WORDS = """() => {
  const root = document.getElementById('attnscope-root'), out = [root.innerText];
  root.querySelectorAll('[title],[placeholder],[aria-label]').forEach(e => ['title', 'placeholder', 'aria-label']
    .forEach(a => { if (e.hasAttribute(a)) out.push(e.getAttribute(a)); }));
  root.querySelectorAll('option').forEach(o => out.push(o.text));
  return out.join('\\n');
}"""
#: The texts of the picture the SVG export paints (its <text> elements; not its embedded font).
SVG_TEXT = """() => window.attnscopeViewer.exportBlob('svg').then(b => b.text()).then(s =>
  Array.from(s.matchAll(/<text[^>]*>([^<]*)<\\/text>/g)).map(m => m[1]).join('\\n'))"""
#: Elements whose own words the embedded font must draw.
UI = (".as-title, .as-tabs button, .as-bar label, .as-export, .as-heads > span, .as-body .as-note, .as-body label, "
      ".as-body th, .as-body td.why, .as-body .as-lab, .as-body button, .as-gctl span, .as-intro p, .as-form span, "
      ".as-form button, [data-testid=side-q], [data-testid=side-k]")


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    from tests.models.decoders import tiny as T
    return attnscope.load(T.gemma3(tmp_path_factory.mktemp("zh-gemma") / "gemma3"))


def _open(page, path, hash_, size=(1400, 1000)):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto("about:blank")
    page.goto(path.as_uri() + hash_)
    wait_ready(page, 60_000)


def _hover_tip(page, where) -> str:
    """The tooltip's text (or the hovered element's title) while the mouse is over ``where``: a
    selector (its centre) or ``(selector, x, y)``."""
    if isinstance(where, tuple):
        page.hover(where[0], position={"x": where[1], "y": where[2]})
    else:
        page.hover(where)
    title = page.evaluate("() => { const e = document.querySelectorAll(':hover'); return e.length ? "
                          "(e[e.length - 1].getAttribute('title') || '') : ''; }")
    return title + page.evaluate("() => document.querySelector('.as-tip').style.display === 'block' ? "
                         "document.querySelector('.as-tip').textContent : ''")


def _check(page, data: str, tips=(), shots: str = "", artifacts=None) -> None:
    """No guard word in the view, its tooltips over ``tips`` or its SVG picture; no tofu; screenshots."""
    seen = page.evaluate(PAGE_WORDS)
    tip_texts = [_hover_tip(page, where) for where in tips]
    assert all(tip_texts), f"no tooltip over {tips}: {tip_texts}"
    tip_text = "\n".join(tip_texts)
    picture = page.evaluate(SVG_TEXT)
    assert picture.strip(), "the export painted no text"
    for what, text in (("page", seen), ("tooltips", tip_text), ("SVG export", picture)):
        assert english_left(text, data) == [], (what, english_left(text, data), text[:600])
    assert re.search(r"[\u4e00-\u9fff]", seen + picture)  # the words are there, in Chinese
    page.ignored.append("'file:' URLs are treated as unique security origins")
    checked, bad = cjk_fallbacks(page, UI, CJK_FAMILY, text_js=OWN_TEXT, skip_undrawn=True)  # hidden bars draw nothing
    assert checked >= 3 and bad == [], bad
    if shots:
        out = artifacts / "zh"
        out.mkdir(exist_ok=True)
        for w, h in SIZES:
            page.set_viewport_size({"width": w, "height": h})
            page.reload()  # opened at that size (the address keeps the view and its state)
            wait_ready(page, 60_000)
            page.screenshot(path=str(out / f"{shots}-{w}.png"))
            # nothing sticks out of the window: wide tables and views scroll in their own boxes
            assert page.evaluate("() => document.documentElement.scrollWidth") <= w, (shots, w)


@pytest.fixture(scope="module")
def gemma_page(gemma, tmp_path_factory):
    d = view_data(gemma, TEXT, compare=OTHER, token="喜")
    path = tmp_path_factory.mktemp("zh-views") / "gemma.html"
    path.write_text(render(d, lang="zh"), encoding="utf-8")
    # the trace's names of the layer outputs (embed.out, layers.0.out) are data, shown on hover
    return path, all_text(d) + " ".join(d["compare"]["layers"]), len(d["texts"][0]["tokens"])


@pytest.mark.parametrize("view, hash_, tips", [
    ("head", "#view=head&layer=0", ("[data-testid=q-3]", "[data-testid=k-2]")),
    ("model", "#view=model", ("[data-testid=thumb-1-2]",)),
    ("matrix", "#view=matrix&layer=0&head=1", ("[data-testid=matrix-canvas]",)),
    # layers 0 and 1 of the tiny Gemma 3 have a sliding window of 6: the caption names it, and the
    # last query's early keys are hidden by it; layer 2 is global
    ("step", "#view=step&layer=0&head=1&query={last}&key=3", ()),
    ("step-global", "#view=step&layer=2&head=0&query={last}", ()),
    ("context", "#view=context", ()),
])
def test_one_text_views_in_chinese(page, gemma_page, artifacts, view, hash_, tips):
    path, data, n = gemma_page
    assert n > 8  # the window hides keys of the last query
    _open(page, path, hash_.format(last=n - 1))
    body = page.inner_text(".as-body")
    if view.startswith("step"):
        assert "旋转位置编码" in body and "第 i 对" in page.inner_text("[data-testid=rotation-table] thead")
        assert "query_pre_attn_scalar" in body  # Gemma's scale, named as the model's config names it
        assert page.locator("[data-testid=rotation-note]").inner_text().startswith("旋转：")
    if view == "step":
        assert "滑动窗口" in body and "在窗口之外" in body
    _check(page, data, tips, f"one-text-{view}", artifacts)


def test_generation_view_in_chinese(page, gemma, tmp_path, artifacts):
    gen = gemma.generate("我喜欢人工智能。", max_new_tokens=8, attentions=True)
    d = generation_data(gemma, gen)
    path = tmp_path / "gen.html"
    path.write_text(render(d, lang="zh"), encoding="utf-8")
    _open(page, path, "#view=generation&step=5&ghead=-1")
    assert page.inner_text("[data-testid=gen-step-label]").startswith("第 6 步 / 8")
    _check(page, all_text(d), ("[data-testid=gen-tok-3]", ("[data-testid=gen-map]", 70, 9)), "generation", artifacts)


@pytest.fixture(scope="module")
def s2s_pages(seq2seq, tmp_path_factory):  # noqa: F811
    out = {}
    pairs = {"mt5": ("我喜欢人工智能", "北京是中国的首都。"), "bart_zh": ("我喜欢人工智能", "你好世界。")}
    for name, (src, tgt) in pairs.items():
        d = S.seq2seq_view_data(seq2seq[name], src, tgt)
        path = tmp_path_factory.mktemp("zh-s2s") / f"{name}.html"
        path.write_text(render_s2s(d, lang="zh"), encoding="utf-8")
        out[name] = (path, S.all_text(d))
    return out


@pytest.mark.parametrize("name, att, view, tips", [
    ("mt5", "encoder", "step", ()), ("mt5", "self", "step", ()),
    ("mt5", "cross", "head", ("[data-testid=q-2]", "[data-testid=k-1]")),
    ("mt5", "cross", "model", ("[data-testid=thumb-0-1]",)), ("bart_zh", "cross", "step", ()),
    ("bart_zh", "self", "head", ("[data-testid=q-3]",)),
])
def test_encoder_decoder_views_in_chinese(page, s2s_pages, artifacts, name, att, view, tips):
    path, data = s2s_pages[name]
    _open(page, path, f"#att={att}&view={view}&layer=1&head=1&query=2")
    assert page.inner_text("[data-testid=att-cross]") == "交叉" and page.inner_text("[data-testid=lang] .on") == "中文"
    _check(page, data, tips, f"s2s-{name}-{att}-{view}", artifacts)
    page.click("[data-testid=lang-en]")  # and back: the English page is the one it was
    assert page.inner_text("[data-testid=att-cross]") == "Cross" and "lang=en" in page.evaluate("() => location.hash")
    assert page.inner_text("[data-testid=attention-note]").startswith(("Encoder:", "Decoder:", "Cross:"))


@pytest.mark.parametrize("seq2seq_model", [False, True])
def test_served_page_intro_and_form_in_chinese(page, artifacts, seq2seq_dirs, seq2seq_model):  # noqa: F811
    from tests.server.live import live_server

    model = ("--model", str(seq2seq_dirs["t5"])) if seq2seq_model else ()
    with live_server("--lang", "zh", *model) as (url, _):
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("[data-testid=form]")
        page.evaluate("() => document.fonts.ready")
        examples = page.evaluate("() => Array.from(document.querySelectorAll('.as-examples button')).map(b => b.textContent)"
                                 ".join(' ')")  # example inputs: data, not the page's words
        seen = page.evaluate(PAGE_WORDS)
        model_name = page.inner_text(".as-intro h1")
        assert english_left(seen, examples + " " + model_name) == [], english_left(seen, examples + model_name)
        assert "显示注意力" in page.inner_text("[data-testid=submit]")
        out = artifacts / "zh"
        out.mkdir(exist_ok=True)
        kind = "s2s" if seq2seq_model else "one-text"
        for w, h in SIZES:
            page.set_viewport_size({"width": w, "height": h})
            page.screenshot(path=str(out / f"served-{kind}-form-{w}.png"))
        if seq2seq_model:
            page.fill("[data-testid=source-input]", "translate English to German: The cat sat.")
            page.fill("[data-testid=target-input]", "Die Katze sass.")
        else:
            page.fill("[data-testid=text-input]", "我喜欢人工智能")
        page.click("[data-testid=submit]")
        wait_ready(page, 60_000)
        assert page.inner_text(".as-title").endswith("个头")
        page.click("[data-testid=lang-en]")  # the switch changes the form's words too
        assert page.inner_text("[data-testid=submit]") == "Show attention"


def test_t5_tokens_read_as_text_and_the_tooltip_names_the_piece(page, seq2seq, tmp_path):  # noqa: F811
    d = S.seq2seq_view_data(seq2seq["t5"], "translate English to German: The cat sat.", "Die Katze sass.")
    path = tmp_path / "t5.html"
    path.write_text(render_s2s(d), encoding="utf-8")
    _open(page, path, "#att=encoder&view=head&layer=0")
    entry = d["texts"][0]
    i = next(i for i, p in enumerate(entry["source_pieces"]) if p.startswith("▁") and len(p) > 1)
    shown = page.inner_text(f"[data-testid=q-{i}]")
    assert shown == entry["source_pieces"][i][1:] and "▁" not in page.inner_text("[data-testid=head-view]")
    assert page.get_attribute(f"[data-testid=q-{i}]", "data-piece") == entry["source_pieces"][i]
    assert f"piece {entry['source_pieces'][i]}" in _hover_tip(page, f"[data-testid=q-{i}]")
