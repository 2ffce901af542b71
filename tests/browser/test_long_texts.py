"""Long texts in the browser: a text the server holds (attnscope serve, read on demand) shows the
numbers of attnscope explain in the step view, the head view's lines, the model view's thumbnails
and the matrix view's exact weights; a 2 000-token text's matrix is max-pooled, says so, zooms and
hovers exact values; the single-file page's matrix view shows its own float64 weights; a held
text's layer switch keeps the head view's tokens and draws what a view built anew draws."""

import re

import numpy as np
import pytest

from attnscope import reference as R
from attnscope.viewer.run import view_names
from tests.browser.conftest import wait_ready
from tests.browser.test_exported_file import assert_table_matches
from tests.browser.test_served_viewer import submit
from tests.server.live import live_server

pytestmark = pytest.mark.browser

TEXT = "我喜欢人工智能 the bank of the river, and every token looks at the tokens before it."


def settled(page, timeout: float = 60_000) -> None:
    """The view has its data from the server and is drawn."""
    page.wait_for_selector("#attnscope-root[data-ready='1']:not([data-loading])", timeout=timeout)


@pytest.fixture(scope="module")
def held_url():
    """`attnscope serve` that holds every text (--ship-up-to 0), as it holds long ones."""
    with live_server("--ship-up-to", "0", timeout=400) as (url, _):
        yield url


def reference_weights(model, text, layer):
    tr = model.trace([text], names=view_names(model.config))
    return R.trace_weights(tr, layer, recorded=False)  # (H, n, n) float64 from the traced q, k


def test_held_text_step_view_equals_explain(page, held_url, minilm, artifacts):
    page.goto(held_url)
    submit(page, TEXT)
    wait_ready(page)
    assert page.evaluate("() => !!window.attnscopeViewer.text().remote")
    page.dblclick("[data-testid=q-3]")
    settled(page)
    assert_table_matches(page, minilm, TEXT, 0, 0, 3, 4)
    page.select_option("[data-testid=layer-select]", "4")
    settled(page)
    page.select_option("[data-testid=focus-head-select]", "9")
    settled(page)
    assert_table_matches(page, minilm, TEXT, 4, 9, 3, 4)
    page.screenshot(path=str(artifacts / "held-step-view.png"))


def canvas_ink(page, selector: str) -> int:
    """Pixels of a canvas that are not white or transparent."""
    return page.eval_on_selector(selector, """c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let k = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250)) k++;
        return k; }""")


def test_held_text_head_model_and_matrix_views(page, held_url, minilm, artifacts):
    page.goto(held_url)
    submit(page, TEXT)
    wait_ready(page)
    assert canvas_ink(page, "[data-testid=head-view] canvas") > 1000  # the server's lines
    W = reference_weights(minilm, TEXT, 0)
    page.hover("[data-testid=q-5]")
    tip = page.locator(".as-tip").text_content()
    best = int(np.argmax(W[0, 5]))
    assert f"head 0: max {W[0, 5, best]:.4f} → {best} " in tip, tip
    # model view: a layer's thumbnails are read when they come into sight
    page.click("[data-testid=tab-model]")
    page.wait_for_function("() => window.attnscopeViewer.text().thumbLayers[0] && window.attnscopeViewer.text().thumbLayers[5]")
    assert canvas_ink(page, "[data-testid=thumb-5-3]") > 0
    # matrix view: hover a cell, the tip has the server's exact float64 weight
    page.click("[data-testid=tab-matrix]")
    settled(page)
    page.select_option("[data-testid=matrix-head-select]", "7")
    settled(page)
    i, j = 6, 2
    hover_cell(page, i, j)
    page.wait_for_function("() => /exact/.test(document.querySelector('.as-tip').textContent)")
    tip = page.locator(".as-tip").text_content()
    assert f"query {i} " in tip and f"key {j} " in tip, tip
    exact = float(re.search(r"exact (\S+)", tip).group(1))
    assert exact == pytest.approx(W[7, i, j], rel=1e-14, abs=1e-17)
    page.screenshot(path=str(artifacts / "held-matrix-view.png"))


GEOMETRY = """() => { const m = window.attnscopeViewer.matrixLast.g;
    const r = document.querySelector('[data-testid=matrix-canvas]').getBoundingClientRect();
    return {x: r.left, y: r.top, W: m.W, H: m.H, z: m.z}; }"""


def hover_cell(page, i: int, j: int) -> None:
    """Move the mouse over the matrix view's cell (query i, key j)."""
    g = page.evaluate(GEOMETRY)
    z = g["z"]
    x = g["x"] + 128 + (j - z[2] + 0.5) * g["W"] / (z[3] - z[2])
    y = g["y"] + 26 + (i - z[0] + 0.5) * g["H"] / (z[1] - z[0])
    page.mouse.move(x, y)


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory):
    """A tiny random Llama with 4 096 positions and a text of about 2 000 tokens."""
    from transformers import LlamaConfig, LlamaForCausalLM

    import attnscope
    from tests.models.decoders.tiny import _COMMON, VOCAB, _save, randomise
    folder = tmp_path_factory.mktemp("llama-4k")
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=8, **dict(_COMMON, max_position_embeddings=4096))
    m = LlamaForCausalLM(cfg)
    randomise(m, 21)
    _save(m, folder, VOCAB)
    model = attnscope.load(folder)
    words = "Every token looks at the tokens before it and decides how much to listen.".split()
    text = " ".join(words[i % len(words)] for i in range(700))
    n = len(model.encode(text).tokens[0])
    assert 1900 <= n <= 4096
    return folder, model, text, n


def test_a_2000_token_matrix_is_max_pooled_says_so_and_zooms(page, long_llama, artifacts):
    folder, model, text, n = long_llama
    page.set_viewport_size({"width": 1280, "height": 900})
    with live_server("--model", str(folder), "--max-chars", "20000", timeout=400) as (url, _):
        page.goto(url)
        submit(page, text)
        wait_ready(page, timeout=120_000)
        assert page.evaluate("() => window.attnscopeViewer.text().n") == n
        page.screenshot(path=str(artifacts / "long-head-view.png"))
        page.click("[data-testid=tab-matrix]")
        settled(page)
        rows = int(page.get_attribute("[data-testid=matrix-canvas]", "data-rows"))
        assert rows < n
        note = page.text_content("[data-testid=matrix-note]")
        assert f"queries 0–{n - 1}" in note and "Downsampled: each pixel holds up to" in note and "max-pooling" in note
        page.screenshot(path=str(artifacts / "long-matrix-view.png"))
        # the hovered pixel's exact value is the largest weight of the cells it covers
        from tests.viewer.test_held import reference  # NumPy float64, rotate_half
        tr = model.trace([text], names=view_names(model.config))
        W = reference(tr, ("q_proj", "k_proj", 8 ** -0.5, True, [None, None], [10000.0, 10000.0]), 0)[0][0]
        page.mouse.move(*pixel_center(page, 0.7, 0.3))
        page.wait_for_function("() => /exact/.test(document.querySelector('.as-tip').textContent)")
        tip = page.locator(".as-tip").text_content()
        m = re.search(r"queries (\d+)–(\d+) × keys (\d+)–(\d+)", tip)
        q0, q1, k0, k1 = (int(x) for x in m.groups())
        exact = float(re.search(r"exact (\S+)", tip).group(1))
        assert exact == pytest.approx(W[q0:q1 + 1, k0:k1 + 1].max(), rel=1e-12)
        # drag a rectangle: the view zooms into it, one cell per weight
        a, b = pixel_center(page, 0.50, 0.45), pixel_center(page, 0.53, 0.48)
        page.mouse.move(*a)
        page.mouse.down()
        page.mouse.move(*b, steps=4)
        page.mouse.up()
        settled(page)
        note = page.text_content("[data-testid=matrix-note]")
        z = page.evaluate("() => window.attnscopeViewer.state.zoom")
        assert z and z[1] - z[0] < 200 and "One cell per weight" in note, (z, note)
        page.screenshot(path=str(artifacts / "long-matrix-zoom.png"))
        page.click("[data-testid=matrix-reset]")
        settled(page)
        assert page.evaluate("() => window.attnscopeViewer.state.zoom") is None


def pixel_center(page, fy: float, fx: float) -> tuple[float, float]:
    """Client coordinates of a point at fractions (fy down, fx across) of the matrix's cells."""
    g = page.evaluate(GEOMETRY)
    return g["x"] + 128 + fx * g["W"], g["y"] + 26 + fy * g["H"]


def test_the_single_file_matrix_view_shows_the_pages_float64_weights(page, exported, minilm, artifacts):
    from tests.viewer.fixtures import TEXT as FILE_TEXT
    page.goto(exported.as_uri() + "#view=matrix&layer=2&head=4")
    wait_ready(page)
    assert page.get_attribute("#attnscope-root", "data-view") == "matrix"
    note = page.text_content("[data-testid=matrix-note]")
    assert "Layer 2, head 4" in note and "One cell per weight" in note
    W = reference_weights(minilm, FILE_TEXT, 2)
    hover_cell(page, 3, 1)
    tip = page.locator(".as-tip").text_content()
    assert float(re.search(r"exact (\S+)", tip).group(1)) == pytest.approx(W[4, 3, 1], rel=1e-14)
    assert float(page.get_attribute("[data-testid=matrix-canvas]", "data-vmax")) == pytest.approx(W[4].max(), rel=1e-6)
    page.screenshot(path=str(artifacts / "file-matrix-view.png"))


def test_a_held_texts_layer_switch_keeps_the_tokens_and_draws_what_a_fresh_view_draws(page, held_url):
    page.goto(held_url)
    submit(page, TEXT)
    wait_ready(page)
    settled(page)
    frame = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))"
    picture = """() => ({note: document.querySelector('[data-testid=head-note]').textContent,
                        lines: document.querySelector('.as-hv canvas').toDataURL()})"""
    page.evaluate("() => { document.querySelector('[data-testid=q-2]').__kept = 1; }")
    page.evaluate("async () => { await window.attnscopeViewer.set({layer: 4, heads: [0, 3, 9]}); }")  # read from the server
    settled(page)
    page.evaluate(frame)
    assert page.evaluate("() => document.querySelector('[data-testid=q-2]').__kept") == 1  # the same elements
    kept = page.evaluate(picture)
    page.evaluate("async () => { const v = window.attnscopeViewer; await v.set({view: 'step'}); await v.set({view: 'head'}); }")
    settled(page)
    page.evaluate(frame)
    assert page.evaluate("() => document.querySelector('[data-testid=q-2]').__kept") is None  # built anew
    fresh = page.evaluate(picture)
    assert kept == fresh  # the note (threshold, window) and the lines, pixel for pixel
    assert canvas_ink(page, "[data-testid=head-view] canvas") > 1000  # and there are lines
