"""The attribution switch of the page ``attnscope serve`` shows (issue 27 item 3): type a text,
choose raw / norm / rollout / ALTI / value zeroing, and the numbers the page draws (Text.weights,
the tooltips' rows and the head view's key tooltip) are model.attribute's for the typed text,
computed here in Python (norm: each head's ‖α·f(x)‖ over its row sum in float64; the others:
``attribute(text, method, layer=l).scores``). The method stays on for the next text typed; a
text past 64 tokens and value zeroing past its budget (SmolLM2: 30 layers) are said in the page.
In en and zh; screenshots at 800×600 and 1400×1000 under artifacts/browser/served-attr-*.png."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnscope.i18n import TABLES
from tests.browser.conftest import wait_ready
from tests.server.live import live_server

pytestmark = pytest.mark.browser

TEXT = "The bank of the river was green."
NEXT = "我喜欢人工智能 the bank"
LONG = " ".join(["the bank"] * 33)  # 68 tokens with [CLS] and [SEP]: past the switch's 64, within 300 characters
METHODS = ("norm", "rollout", "alti", "value_zeroing")


def expected(model, text: str, method: str, layer: int, head: int) -> np.ndarray:
    """What the page must draw, from model.attribute (float64 for the row sums)."""
    if method == "norm":
        h = model.attribute(text, method="norm").details["heads"][layer, head].double().numpy()  # (L, L)
        return h / h.sum(-1, keepdims=True)
    return model.attribute(text, method=method, layer=layer).scores.double().numpy()  # (L, L)


def page_matrix(pg, layer: int, head: int) -> np.ndarray:
    """Text.weights of the text shown, as the views read it; its row 2 is the tooltips' row."""
    w = pg.evaluate("([l, h]) => { const t = window.attnscopeViewer.text(); return {n: t.n, "
                    "w: Array.from(t.weights(l, h)), row: Array.from(t.steps(l, h, 2).weights)}; }", [layer, head])
    m = np.array(w["w"], dtype=np.float64).reshape(w["n"], w["n"])
    np.testing.assert_allclose(np.array(w["row"]), m[2], rtol=0, atol=1e-7)  # raw: the float64 row of float32 cells
    return m


def submit(pg, text: str) -> None:
    pg.fill("[data-testid=text-input]", text)
    pg.fill("[data-testid=compare-input]", "")
    pg.fill("[data-testid=token-input]", "")
    pg.click("[data-testid=submit]")
    wait_ready(pg, 90_000)


def key_tip(pg, layer: int, head: int, q: int, k: int) -> float:
    """The head view's tooltip over key k with query q selected: head ``head``'s exact number."""
    pg.select_option("[data-testid=layer-select]", str(layer))
    if "sel" not in (pg.get_attribute(f"[data-testid=q-{q}]", "class") or ""):
        pg.click(f"[data-testid=q-{q}]")
    pg.hover(f"[data-testid=k-{k}]")
    tip = pg.text_content(".as-tip")
    line = next(x for x in tip.split("\n") if re.match(rf"(head |头 ){head}[:：]", x))
    return float(re.search(r"(?:exact|精确值) (\S+)$", line).group(1))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_type_a_text_and_switch_methods(page, server_url, minilm, lang, artifacts):
    words = TABLES["viewer"][lang]
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(server_url)
    submit(page, TEXT)
    if lang == "zh":
        page.click("[data-testid=lang-zh]")
    options = page.eval_on_selector_all("[data-testid=attr-select] option", "os => os.map(o => [o.value, o.textContent])")
    assert options == [[m, words[f"viewer.attr_{m}"]] for m in ("raw",) + METHODS]
    raw = page_matrix(page, 3, 5)
    for method in METHODS:
        page.select_option("[data-testid=attr-select]", method)
        assert page.get_attribute("[data-testid=attr-note]", "data-method") == method
        assert page.text_content("[data-testid=attr-note]") == words[f"viewer.attr_note_{method}"]
        for layer, head in ((0, 0), (3, 5), (5, 11)):
            np.testing.assert_allclose(page_matrix(page, layer, head), expected(minilm, TEXT, method, layer, head),
                                       rtol=0, atol=2e-7)  # float32 in the answer
        assert not np.allclose(page_matrix(page, 3, 5), raw)
        head = 5 if method == "norm" else 0  # one matrix a layer: every head's line reads it
        want = expected(minilm, TEXT, method, 3, head)[4, 2]
        assert key_tip(page, 3, head, 4, 2) == pytest.approx(want, abs=2e-7)
        if method in ("norm", "alti"):
            for w, h in ((800, 600), (1400, 1000)):
                page.set_viewport_size({"width": w, "height": h})
                page.screenshot(path=str(artifacts / f"served-attr-{lang}-{method}-{w}x{h}.png"))
            page.set_viewport_size({"width": 1400, "height": 1000})
    # the next text typed keeps the method, with its own matrices
    page.click("[data-testid=tab-matrix]")
    submit(page, NEXT)
    assert page.input_value("[data-testid=attr-select]") == "value_zeroing"
    assert page.get_attribute("[data-testid=attr-note]", "data-method") == "value_zeroing"
    np.testing.assert_allclose(page_matrix(page, 2, 0), expected(minilm, NEXT, "value_zeroing", 2, 0), rtol=0, atol=2e-7)
    page.screenshot(path=str(artifacts / f"served-attr-{lang}-value_zeroing-matrix-1400x1000.png"))
    page.select_option("[data-testid=attr-select]", "raw")
    assert page.query_selector("[data-testid=attr-note]") is None
    assert not np.allclose(page_matrix(page, 2, 0), expected(minilm, NEXT, "value_zeroing", 2, 0))
    # past the limit: the page says so and draws the raw weights
    page.select_option("[data-testid=attr-select]", "rollout")
    submit(page, LONG)
    n = len(minilm.encode(LONG).tokens[0])
    assert n == 68 and page.text_content("[data-testid=attr-note]") == words["viewer.attr_left_long"].format(n=n, max=64)
    assert page.get_attribute("[data-testid=attr-note]", "data-method") == "raw"


def test_value_zeroing_past_its_budget_is_said(page, installed_model, artifacts):
    """SmolLM2 served: value zeroing needs 465 layer passes (30 layers) > 100, left out in a
    sentence; ALTI is there and is model.attribute's."""
    with live_server("--model", "smollm2-135m", "--lang", "zh", timeout=180) as (url, _):
        page.set_viewport_size({"width": 800, "height": 600})
        page.goto(url)
        submit(page, "The capital of France is")
        words = TABLES["viewer"]["zh"]
        page.select_option("[data-testid=attr-select]", "value_zeroing")
        note = page.text_content("[data-testid=attr-note]")
        assert note == words["viewer.attr_left_costly_served"].format(passes=465, limit=100)
        page.screenshot(path=str(artifacts / "served-attr-zh-smollm2-costly-800x600.png"))
        page.select_option("[data-testid=attr-select]", "alti")
        smol = installed_model("smollm2-135m")
        np.testing.assert_allclose(page_matrix(page, 29, 0), expected(smol, "The capital of France is", "alti", 29, 0),
                                   rtol=0, atol=1e-6)
