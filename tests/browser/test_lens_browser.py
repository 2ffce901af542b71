"""The viewer's lens view (issue 28 item 1) in Chromium: every cell of the grid (point × position)
shows logit_lens's top token with its probability, and the tooltip lists the top 5, the final
prediction's probability and rank there and KL(final ‖ here) at the page's decimals, as
attnscope.explain's fmt writes them — on a tiny random GPT-2 and on SmolLM2 (real_model), en and
zh (no English UI word left on the Chinese page). A text past the limit says so in a sentence; a
link opens the view; PNG and SVG export paint the grid. Screenshots at 800×600 and 1400×1000
under artifacts/browser/lens-*.png."""

from __future__ import annotations

import re

import numpy as np
import pytest

import attnscope
from attnscope.explain.numbers import fmt
from attnscope.i18n import TABLES
from attnscope.lens import logit_lens
from attnscope.viewer.html import render
from attnscope.viewer.lens_view import add_lens
from attnscope.viewer.run import view_data
from tests.browser.conftest import wait_ready
from tests.viewer.english_guard import english_left

pytestmark = pytest.mark.browser

TEXT = "The quick brown fox jumps over the lazy dog."
SHORT = "the lazy dog"
SIZES = ((800, 600), (1400, 1000))
CELLS = """() => [...document.querySelectorAll('[data-testid=lens-cell]')].map(c =>
  [+c.dataset.point, +c.dataset.pos, +c.dataset.id, +c.dataset.p, c.textContent])"""


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    from attnscope.testing.tiny import BUILDERS
    return attnscope.load(BUILDERS["gpt2"](tmp_path_factory.mktemp("lens-browser") / "gpt2"))


def write(model, text, path, lang, compare=None, max_tokens=None):
    data = view_data(model, text, compare=compare, lens=max_tokens is None)
    if max_tokens is not None:
        add_lens(data, model, [text] if compare is None else [text, compare], max_tokens=max_tokens)
    path.write_text(render(data, lang=lang), encoding="utf-8")
    return path


def open_lens(page, path, size=(1400, 1000)):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto("about:blank")
    page.goto(path.as_uri() + "#view=lens")
    wait_ready(page, 60_000)
    assert page.get_attribute("#attnscope-root", "data-view") == "lens"


def check_grid(page, model, text, lang, cells_to_hover):
    """Every cell against logit_lens; the tooltips of ``cells_to_hover`` [(point, position)] line by line."""
    r = logit_lens(model, text, k=5)
    words = TABLES["viewer"][lang]
    P, L = r.kl.shape
    cells = page.evaluate(CELLS)
    tokens = page.evaluate("() => window.attnscopeViewer.text().tokens")
    assert len(cells) == P * L
    assert sorted((c[0], c[1]) for c in cells) == [(p, i) for p in range(P) for i in range(L)]
    rows = page.eval_on_selector_all("[data-testid=lens-grid] tbody tr", "rs => rs.map(r => +r.dataset.point)")
    assert rows == list(range(P - 1, -1, -1))  # the last layer's output on top
    for p, i, tid, prob, shown in cells:
        assert tid == int(r.top_ids[p, i, 0])
        assert prob == float(np.float32(r.top_probs[p, i, 0]))  # the float32 the page carries, whole
        word = r.decode(tid)
        if word.strip() and "\n" not in word and "\t" not in word:
            assert shown == word
    for p, i in cells_to_hover:
        page.hover(f"[data-testid=lens-cell][data-point='{p}'][data-pos='{i}']")
        tip = page.text_content(".as-tip").split("\n")
        point = words["viewer.lens_embed"] if p == 0 else words["viewer.lens_attn" if p % 2 else "viewer.lens_out"].format(
            layer=(p - 1) // 2)
        assert tip[0] == words["viewer.lens_tip_where"].format(point=point, pos=i, token=f"“{tokens[i]}”".replace("\n", "↵"))
        assert tip[1] == words["viewer.lens_tip_top"].format(k=5)
        for rank in range(5):
            q = float(np.float32(r.top_probs[p, i, rank]))
            assert tip[2 + rank] == f"  {rank + 1}. “{r.decode(int(r.top_ids[p, i, rank]))}”  {fmt(q, 4)}".replace("\n", "↵")
        target = r.decode(int(r.target_ids[i]))
        assert tip[7] == words["viewer.lens_tip_target"].format(
            token=f"“{target}”".replace("\n", "↵"), p=fmt(float(np.float32(r.target_prob[p, i])), 4),
            rank=int(r.target_rank[p, i]))
        assert tip[8] == words["viewer.lens_tip_kl"].format(kl=fmt(float(np.float32(r.kl[p, i])), 4))
    return r


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_grid_is_logit_lens(page, gpt2, tmp_path, lang, artifacts):
    path = write(gpt2, TEXT, tmp_path / f"{lang}.html", lang)
    open_lens(page, path)
    r = check_grid(page, gpt2, TEXT, lang, [(0, 0), (3, 5), (len(logit_lens(gpt2, TEXT).points) - 1, 4)])
    words = TABLES["viewer"][lang]
    assert page.text_content("[data-testid=lens-about]") == words["viewer.lens_note"].format(k=5)
    assert page.text_content("[data-testid=tab-lens]") == words["viewer.tab_lens"]
    page.select_option("[data-testid=decimals-select]", "6")  # the tooltip follows the page's decimals
    page.hover("[data-testid=lens-cell][data-point='2'][data-pos='3']")
    assert page.text_content(".as-tip").split("\n")[8] == words["viewer.lens_tip_kl"].format(
        kl=fmt(float(np.float32(r.kl[2, 3])), 6))
    if lang == "zh":  # no English UI word on the Chinese page, its tooltip or its SVG picture
        data_words = " ".join(r.tokens + [r.decode(int(i)) for i in r.top_ids.flatten()] + [gpt2.name])
        seen = page.evaluate("() => document.getElementById('attnscope-root').innerText") + page.text_content(".as-tip")
        assert english_left(seen, data_words) == []
    svg = page.evaluate("() => window.attnscopeViewer.exportBlob('svg').then(b => b.text())")
    painted = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert words["viewer.lens_paint"].format(model=gpt2.name) in painted
    assert sum(1 for s in painted if s) >= r.kl.numel()  # one label a cell, plus the axes
    png = page.evaluate("() => window.attnscopeViewer.exportBlob('png').then(b => b.size)")
    assert png > 1000
    for w, h in SIZES:
        page.set_viewport_size({"width": w, "height": h})
        page.mouse.move(5, 5)
        page.screenshot(path=str(artifacts / f"lens-tiny-{lang}-{w}x{h}.png"))


def test_past_the_limit_the_view_says_so(page, gpt2, tmp_path):
    path = write(gpt2, TEXT, tmp_path / "limit.html", "en", compare=SHORT, max_tokens=8)
    open_lens(page, path)
    n = len(view_data(gpt2, TEXT)["texts"][0]["tokens"])
    note = page.text_content("[data-testid=lens-note]")
    assert note == TABLES["viewer"]["en"]["viewer.lens_left_long"].format(n=n, max=8)
    assert page.query_selector("[data-testid=lens-grid]") is None
    page.select_option("[data-testid=text-select]", "1")  # the short text has its grid
    check_grid(page, gpt2, SHORT, "en", [(1, 2)])
    page.click("[data-testid=tab-head]")  # the other views as before
    assert page.get_attribute("#attnscope-root", "data-view") == "head"
    assert "view=lens" not in page.evaluate("() => location.hash")


def test_an_encoder_page_has_no_lens_tab(page, minilm, tmp_path):  # noqa: F811 (the conftest's fixture)
    path = tmp_path / "enc.html"
    path.write_text(render(view_data(minilm, "the bank of the river", lens=True)), encoding="utf-8")
    page.goto(path.as_uri() + "#view=lens")
    wait_ready(page)
    assert page.query_selector("[data-testid=tab-lens]") is None
    assert page.get_attribute("#attnscope-root", "data-view") == "head"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_smollm2_grid(page, installed_model, tmp_path, lang, artifacts):
    smol = installed_model("smollm2-135m")
    text = "The capital of France is"
    path = write(smol, text, tmp_path / f"smol-{lang}.html", lang)
    open_lens(page, path)
    r = check_grid(page, smol, text, lang, [(60, 4), (58, 4), (0, 1)])
    assert [p.name for p in r.points][-1] == "layers.29.out" and r.kl.shape == (61, 5)
    for w, h in SIZES:
        page.set_viewport_size({"width": w, "height": h})
        page.hover("[data-testid=lens-cell][data-point='58'][data-pos='4']")
        page.screenshot(path=str(artifacts / f"lens-smollm2-{lang}-{w}x{h}.png"))
