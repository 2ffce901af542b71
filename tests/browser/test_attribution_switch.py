"""The viewer's attribution switch (issue 27 item 3): choosing norm / rollout / ALTI / value zeroing
makes the head, model and matrix views and the generation view draw that method's matrix, and
the numbers the page reads (Text.weights, the tooltips' rows) are ``model.attribute``'s, computed
here in Python (norm: the per-head ‖α·f(x)‖ divided by each row's sum in float64; the others: the
method's accumulated ``scores`` at each layer, one call per layer). In en and zh; screenshots at
800×600 and 1400×1000 under artifacts/browser/attribution-*.png."""

from __future__ import annotations

import numpy as np
import pytest

from attnscope.i18n import TABLES
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.conftest import wait_ready

pytestmark = pytest.mark.browser

TEXT = "The bank of the river was green."
LONG = " ".join(["the bank"] * 40)  # 82 tokens: past the page's 64
METHODS = ("norm", "rollout", "alti", "value_zeroing")


@pytest.fixture(scope="module")
def pages(minilm, tmp_path_factory):  # noqa: F811 (the conftest's fixture)
    root = tmp_path_factory.mktemp("attr")
    out = {}
    for lang in ("en", "zh"):
        out[lang] = root / f"{lang}.html"
        out[lang].write_text(render(view_data(minilm, TEXT, compare=LONG, attribution=True), lang=lang), encoding="utf-8")
    return out


def expected(model, method: str, layer: int, head: int) -> np.ndarray:
    """What the page must draw, from model.attribute (float64 for the row sums)."""
    if method == "norm":
        h = model.attribute(TEXT, method="norm").details["heads"][layer, head].double().numpy()  # (L, L)
        return h / h.sum(-1, keepdims=True)
    return model.attribute(TEXT, method=method, layer=layer).scores.double().numpy()  # (L, L)


def page_matrix(pg, layer: int, head: int) -> np.ndarray:
    """Text.weights of the text shown, as the views read it, and the matrix view's exact-value rows."""
    w = pg.evaluate(f"() => {{ const t = window.attnscopeViewer.text(); return {{n: t.n, "
                    f"w: Array.from(t.weights({layer}, {head})), row: Array.from(t.steps({layer}, {head}, 2).weights)}}; }}")
    n = w["n"]
    m = np.array(w["w"], dtype=np.float64).reshape(n, n)
    np.testing.assert_allclose(np.array(w["row"]), m[2], rtol=0, atol=1e-7)  # the tooltips' row (raw: float64 of float32)
    return m


def choose(pg, method: str) -> None:
    pg.select_option("[data-testid=attr-select]", method)
    pg.wait_for_function(f"() => location.hash.includes('attr={method}') || '{method}' === 'raw'")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_switch_draws_the_methods_numbers(page, pages, minilm, lang, artifacts):
    words = TABLES["viewer"][lang]
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(pages[lang].as_uri())
    wait_ready(page)
    options = page.eval_on_selector_all("[data-testid=attr-select] option", "os => os.map(o => [o.value, o.textContent])")
    assert options == [[m, words[f"viewer.attr_{m}"]] for m in ("raw",) + METHODS]
    raw = page_matrix(page, 3, 5)
    for method in METHODS:
        choose(page, method)
        for layer, head in ((0, 0), (3, 5), (5, 11)):
            np.testing.assert_allclose(page_matrix(page, layer, head), expected(minilm, method, layer, head),
                                       rtol=0, atol=2e-7)  # float32 storage of the same numbers
        note = page.text_content("[data-testid=attr-note]")
        assert note == words[f"viewer.attr_note_{method}"]
        assert not np.allclose(page_matrix(page, 3, 5), raw)
        for view in ("model", "matrix"):  # the same switch there; the note says what is drawn
            page.click(f"[data-testid=tab-{view}]")
            assert page.get_attribute("[data-testid=attr-note]", "data-method") == method
            np.testing.assert_allclose(page_matrix(page, 3, 5), expected(minilm, method, 3, 5), rtol=0, atol=2e-7)
        page.click("[data-testid=tab-step]")  # the step view keeps the raw computation
        assert page.query_selector("[data-testid=attr-note]") is None
        np.testing.assert_allclose(page_matrix(page, 3, 5), raw, rtol=0, atol=0)
        page.click("[data-testid=tab-head]")
        heads_shown = page.is_visible("[data-testid=heads]")
        assert heads_shown == (method == "norm")  # one matrix a layer: no heads to toggle
        if lang == "en" or method in ("norm", "alti"):
            for w, h in ((800, 600), (1400, 1000)):
                page.set_viewport_size({"width": w, "height": h})
                page.screenshot(path=str(artifacts / f"attribution-{lang}-{method}-head-{w}x{h}.png"))
            page.set_viewport_size({"width": 1400, "height": 1000})
    choose(page, "raw")
    np.testing.assert_array_equal(page_matrix(page, 3, 5), raw)
    # the long text carries none: the note says so and raw weights are drawn
    choose(page, "rollout")
    page.select_option("[data-testid=text-select]", "1")
    note = page.text_content("[data-testid=attr-note]")
    assert note == words["viewer.attr_left_long"].format(n=82, max=64)
    page.click("[data-testid=tab-model]")
    page.screenshot(path=str(artifacts / f"attribution-{lang}-long-model-1400x1000.png"))


def test_screenshots_of_model_and_matrix_views(page, pages, artifacts):
    for lang in ("en", "zh"):
        for w, h in ((800, 600), (1400, 1000)):
            page.set_viewport_size({"width": w, "height": h})
            page.goto(pages[lang].as_uri() + "#view=model&attr=rollout")
            wait_ready(page)
            assert page.input_value("[data-testid=attr-select]") == "rollout"
            page.screenshot(path=str(artifacts / f"attribution-{lang}-rollout-model-{w}x{h}.png"))
            page.click("[data-testid=tab-matrix]")
            page.screenshot(path=str(artifacts / f"attribution-{lang}-rollout-matrix-{w}x{h}.png"))


def test_generation_view_switch_per_token(page, installed_model, tmp_path, artifacts):
    """SmolLM2's generation: for each generated token's step, the layer's row of the chosen method is
    model.attribute's row of that query position (the joined text tokenizes to the same ids); value
    zeroing is left out (30 layers: 465 layer passes > 100) and the note says so."""
    from attnscope.viewer.generation import save_generation_html

    smol = installed_model("smollm2-135m")
    gen = smol.generate("The capital of France is", max_new_tokens=5)
    path = tmp_path / "gen.html"
    save_generation_html(smol, gen, path, lang="zh")
    text = gen.prompt + gen.text
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(path.as_uri() + "#view=generation&step=3&ghead=-1")
    wait_ready(page, 90_000)
    for method in ("rollout", "alti", "norm"):
        choose(page, method)
        assert page.get_attribute("[data-testid=attr-note]", "data-method") == method
        for step, layer in ((3, 7), (1, 29)):
            page.eval_on_selector("[data-testid=gen-slider]", "(e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }",
                                  str(step))
            page.select_option("[data-testid=gen-layer]", str(layer))
            i = gen.n_prompt - 1 + step
            got = np.array([float(x) for x in page.eval_on_selector_all(
                "[data-testid=gen-table] td[data-col=weight]", "els => els.map(e => e.dataset.value)")])
            if method == "norm":  # the mean over the heads of each head's row share
                h = smol.attribute(text, method="norm").details["heads"][layer].double().numpy()  # (H, L, L)
                want = (h / h.sum(-1, keepdims=True)).mean(0)[i, : i + 1]
            else:
                want = smol.attribute(text, method=method, layer=layer).scores[i, : i + 1].double().numpy()
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        if method == "rollout":
            for w, h in ((800, 600), (1400, 1000)):
                page.set_viewport_size({"width": w, "height": h})
                page.screenshot(path=str(artifacts / f"attribution-zh-generation-rollout-{w}x{h}.png"))
            page.set_viewport_size({"width": 1400, "height": 1000})
    page.select_option("[data-testid=attr-select]", "value_zeroing")
    assert page.get_attribute("[data-testid=attr-note]", "data-method") == "raw"
    assert "465" in page.text_content("[data-testid=attr-note]")
