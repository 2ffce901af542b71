"""The exported HTML file in headless Chromium, from disk, offline: click a token, read the step
table, and compare every number with attnscope explain's at the displayed decimals; switch layer,
head, text and decimals; export PNG and SVG; the model and context views."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET

import pytest

from attnscope import reference as R
from attnscope.explain.numbers import fmt
from attnscope.explain.row import model_row_data, row_values
from attnscope.viewer.context import context_comparison
from attnscope.viewer.run import trace_each
from tests.browser.conftest import wait_ready
from tests.viewer.fixtures import OTHER, TEXT

pytestmark = pytest.mark.browser


def open_page(page, exported):
    page.goto(exported.as_uri())
    wait_ready(page)


def expected_row(minilm, text, layer, head, query):
    d = model_row_data(text, minilm, layer, head, position=query, operands="trace")
    return d["tokens"], row_values(d["raw"], d["factor"], d["allowed"], d["V"])


def shown_table(page):
    """{column: [cell text per key]} of the step table, plus the Σ and the weighted sum."""
    return page.evaluate("""() => {
        const col = c => [...document.querySelectorAll(`tr[data-j] td[data-col=${c}]`)].map(td => td.firstChild.textContent);
        return {raw: col('raw'), scaled: col('scaled'), exp: col('exp'), weight: col('weight'),
                tokens: [...document.querySelectorAll('tr[data-j] td.tok')].map(td => td.textContent),
                sum: document.querySelector('td[data-col=sum]').textContent,
                out: [...document.querySelectorAll('.as-out span[data-col=out]')].map(s => s.textContent),
                exact: [...document.querySelectorAll('tr[data-j] td[data-col=weight]')].map(td => +td.dataset.value)};
    }""")


def assert_table_matches(page, minilm, text, layer, head, query, dec):
    toks, ref = expected_row(minilm, text, layer, head, query)
    got = shown_table(page)
    assert got["tokens"] == toks
    assert got["raw"] == [fmt(x, dec) for x in ref["scores"]]
    assert got["scaled"] == [fmt(x, dec) for x in ref["scaled"]]
    assert got["exp"] == [fmt(x, dec) for x in ref["exp"]]
    assert got["weight"] == [fmt(x, dec) for x in ref["weights"]]
    assert got["sum"] == fmt(ref["sum"], dec)
    assert got["out"] == [fmt(x, dec) for x in ref["output"]]
    # hover values are the float64 numbers themselves
    assert got["exact"] == pytest.approx(ref["weights"].tolist(), rel=1e-14, abs=1e-17)


def test_click_a_token_and_read_the_step_table(page, exported, minilm, artifacts):
    open_page(page, exported)
    page.screenshot(path=str(artifacts / "file-head-view.png"))
    page.click("[data-testid=q-2]")
    assert "sel" in page.get_attribute("[data-testid=q-2]", "class")
    page.hover("[data-testid=k-5]")
    tip = page.locator(".as-tip")
    assert tip.is_visible() and "exact" in tip.text_content()
    page.dblclick("[data-testid=q-2]")
    assert page.get_attribute("#attnscope-root", "data-view") == "step"
    assert_table_matches(page, minilm, TEXT, 0, 0, 2, 4)
    # switch layer and head
    page.select_option("[data-testid=layer-select]", "3")
    page.select_option("[data-testid=focus-head-select]", "7")
    assert_table_matches(page, minilm, TEXT, 3, 7, 2, 4)
    page.select_option("[data-testid=decimals-select]", "6")
    assert_table_matches(page, minilm, TEXT, 3, 7, 2, 6)
    page.select_option("[data-testid=query-select]", "13")
    assert_table_matches(page, minilm, TEXT, 3, 7, 13, 6)
    page.screenshot(path=str(artifacts / "file-step-view.png"), full_page=True)
    # the second text
    page.select_option("[data-testid=text-select]", "1")
    page.select_option("[data-testid=query-select]", "6")
    page.select_option("[data-testid=layer-select]", "5")
    assert_table_matches(page, minilm, OTHER, 5, 7, 6, 6)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("view", ["head", "model", "step", "context"])
def test_export_png_and_svg(page, exported, artifacts, view):
    open_page(page, exported)
    page.select_option("[data-testid=layer-select]", "1")
    if view == "step":
        page.dblclick("[data-testid=q-3]")
    else:
        page.click(f"[data-testid=tab-{view}]")
    with page.expect_download() as dl:
        page.click("[data-testid=export-png]")
    d = dl.value
    assert d.suggested_filename.startswith(f"attnscope-{view}-layer1") and d.suggested_filename.endswith(".png")
    png = artifacts / f"export-{view}.png"
    d.save_as(png)
    w, h = _png_size(png.read_bytes())
    assert w >= 600 and h >= 280
    with page.expect_download() as dl:
        page.click("[data-testid=export-svg]")
    svg = artifacts / f"export-{view}.svg"
    dl.value.save_as(svg)
    root = ET.parse(svg).getroot()  # well-formed
    texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert ("all-MiniLM-L6-v2" in texts) == (view in ("model", "step"))  # title of those views
    assert "layer 1" in texts or view in ("model", "context")
    if view in ("head", "step"):
        assert "我" in texts and "river" in texts
    if view == "model":
        assert len(list(root.iter("{http://www.w3.org/2000/svg}image"))) == 6 * 12


def test_model_view_opens_a_head(page, exported, artifacts):
    open_page(page, exported)
    page.click("[data-testid=tab-model]")
    page.wait_for_timeout(100)
    page.screenshot(path=str(artifacts / "file-model-view.png"))
    page.hover("[data-testid=thumb-4-3]")
    assert "layer 4 · head 3" in page.locator(".as-tip").text_content()
    page.click("[data-testid=thumb-4-3]")
    assert page.get_attribute("#attnscope-root", "data-view") == "head"
    assert page.input_value("[data-testid=layer-select]") == "4"
    on = page.eval_on_selector_all(".as-hbtn", "bs => bs.map(b => !b.classList.contains('off'))")
    assert on == [h == 3 for h in range(12)]


def test_context_view_shows_the_cosines(page, exported, minilm, artifacts):
    open_page(page, exported)
    page.click("[data-testid=tab-context]")
    page.screenshot(path=str(artifacts / "file-context-view.png"))
    ref = context_comparison(*trace_each(minilm, [TEXT, OTHER]), token="bank")
    for series in ("across", "drift_a", "drift_b"):
        cells = f"[data-testid=compare-table] td[data-col={series}]"
        shown = page.eval_on_selector_all(cells, "tds => tds.map(t => t.textContent)")
        assert shown == [fmt(x, 4, as_int=False) for x in ref[series]]  # 1.0000, never 1, among 0.9876
    # the chart's value axis: round ticks (0.2, 0.4, …; it read 0.33 and 0.78 from quarters of 1 - min),
    # evenly spaced up to 1.00, the lowest at or below the lowest cosine
    ticks = page.eval_on_selector_all("[data-testid=context-view] svg text[text-anchor=end]",
                                      "ts => ts.map(t => [t.textContent, +t.getAttribute('y')])")
    values = [float(t) for t, _ in ticks]
    step = round(values[1] - values[0], 6)
    lowest = min(min(ref[s]) for s in ("across", "drift_a", "drift_b"))
    assert step in (0.02, 0.05, 0.1, 0.2, 0.25, 0.5) and 2 <= len(values) <= 6, ticks
    assert all(abs(round(v / step) * step - v) < 1e-9 for v in values) and values[-1] == 1.0
    assert values[0] <= lowest < values[0] + step
    ys = [y for _, y in ticks]
    assert all(abs((ys[i + 1] - ys[i]) - (ys[1] - ys[0])) < 0.01 for i in range(len(ys) - 1))


def test_a_link_opens_a_given_state(page, exported, minilm):
    page.goto(exported.as_uri() + "#view=step&layer=2&head=4&query=10&dec=3")
    wait_ready(page)
    assert page.get_attribute("#attnscope-root", "data-view") == "step"
    assert_table_matches(page, minilm, TEXT, 2, 4, 10, 3)
    page.goto(exported.as_uri() + "#view=head&layer=99&heads=1,5,x&query=500")  # bad values are ignored
    page.reload()
    wait_ready(page)
    assert page.input_value("[data-testid=layer-select]") == "0"
    on = page.eval_on_selector_all(".as-hbtn", "bs => bs.map(b => !b.classList.contains('off'))")
    assert on == [h in (1, 5) for h in range(12)]


def test_head_view_lines_use_the_models_weights(page, exported, minilm):
    open_page(page, exported)
    (tr,) = trace_each(minilm, [TEXT])
    for layer, head in ((0, 0), (3, 7), (5, 11)):
        got = page.evaluate("([l, h]) => Array.from(window.attnscopeViewer.texts[0].weights(l, h))", [layer, head])
        want = R.trace_weights(tr, layer)[head].ravel()  # float64 from the traced q, k
        assert got == pytest.approx(want.tolist(), abs=1e-7)  # stored as float32 for drawing
    # the tooltip of a key gives the exact weight from the hovered query
    page.hover("[data-testid=q-4]")
    page.hover("[data-testid=k-9]")
    page.hover("[data-testid=q-4]")
    page.click("[data-testid=q-4]")
    page.hover("[data-testid=k-9]")
    tip = page.locator(".as-tip").text_content()
    w = R.trace_row(tr, 0, 2, 4)["weights"][9]
    line = next(x for x in tip.split("\n") if x.startswith("head 2: "))
    shown, exact = line.split(" = ")[1].split("   exact ")
    assert shown == fmt(w, 4) and float(exact) == pytest.approx(float(w), rel=1e-14)
