"""The viewer on a model with ALiBi (tiny BLOOM, 6 heads), in Chromium: the page adds each head's
slope × key position to its scaled scores (config.bias from attnscope.viewer.data), so the step
view's weights are softmax(q·k/√d + slope·j) written out here in NumPy and the model's own, and the
head view's weights (the page's headWeights kernel, which its Web Workers run too) are the model's."""

from __future__ import annotations

import numpy as np

import attnscope
from attnscope.testing.tiny import tiny_bloom_6heads
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.conftest import wait_ready

TEXT = "The quick brown fox jumps over the lazy dog."
SLOPES6 = np.array([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3])  # H = 6 (BLOOM's rule)


def _values(page, selector):
    return np.array([float(x) for x in page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.value)")])


def test_bloom_step_view_adds_the_alibi_term(page, tmp_path):
    model = attnscope.load(tiny_bloom_6heads(tmp_path / "bloom"))
    path = tmp_path / "bloom.html"
    path.write_text(render(view_data(model, TEXT)), encoding="utf-8")
    layer, head, qpos = 1, 4, 7
    tr = model.trace(TEXT, names=[f"layers.{layer}.attn.{s}" for s in ("q", "k", "weights")])
    q, k = (tr[f"layers.{layer}.attn.{s}"][0, head].double().numpy() for s in ("q", "k"))
    n, d = k.shape
    s = np.where(np.arange(n) <= qpos, k @ q[qpos] / np.sqrt(d) + SLOPES6[head] * np.arange(n), -np.inf)
    e = np.exp(s - s.max())
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(path.as_uri() + f"#view=step&layer={layer}&head={head}&query={qpos}")
    wait_ready(page, 90_000)
    shown = _values(page, "[data-testid=step-table] td[data-col=weight]")
    np.testing.assert_allclose(shown, e / e.sum(), rtol=1e-12, atol=1e-15)  # float64 in the page and here
    model_w = tr[f"layers.{layer}.attn.weights"][0, head].double().numpy()
    np.testing.assert_allclose(shown, model_w[qpos], atol=1e-6)
    # the head view's matrix (the page's headWeights kernel, which its Web Workers run too) with the
    # term: every row against the model's weights; without the term it would be far off
    page.goto("about:blank")
    page.goto(path.as_uri() + f"#view=head&layer={layer}")
    wait_ready(page, 90_000)
    got = np.array(page.evaluate("([l, h]) => Array.from(window.attnscopeViewer.texts[0].weights(l, h))",
                                 [layer, head]), dtype=np.float64).reshape(n, n)
    np.testing.assert_allclose(got, model_w, atol=1e-6)
    plain = np.where(np.tril(np.ones((n, n), dtype=bool)), (k @ tr[f"layers.{layer}.attn.q"][0, head].double().numpy().T).T
                     / np.sqrt(d), -np.inf)
    plain = np.exp(plain - plain.max(-1, keepdims=True))
    assert np.abs(plain / plain.sum(-1, keepdims=True) - model_w).max() > 0.05


def test_bloom_step_view_says_its_scaled_column_holds_the_alibi_term(page, tmp_path):
    """The scaled column holds q·k/√d + m·j, but its heading said "scaled s = q·k ÷ √8" and
    nothing on the page named the term: 1.7813 ÷ √8 read 1.6298. The heading adds "+ m·j" and the
    caption gives the head's slope m (BLOOM's rule, SLOPES6), with which the column is the sum."""
    import re

    model = attnscope.load(tiny_bloom_6heads(tmp_path / "bloom"))
    path = tmp_path / "bloom.html"
    path.write_text(render(view_data(model, TEXT)), encoding="utf-8")
    layer, head, qpos = 1, 4, 7
    page.goto(path.as_uri() + f"#view=step&layer={layer}&head={head}&query={qpos}")
    wait_ready(page, 90_000)
    heads = page.eval_on_selector_all("[data-testid=step-table] th", "els => els.map(e => e.textContent)")
    d = model.config.d_head
    assert heads[3] == f"scaled s = q·k ÷ √{d} + m·j"
    caption = page.text_content("[data-testid=step-caption]")
    m = float(re.search(r"ALiBi: head 4 adds m·j to the scaled score of key j, m = ([0-9.e-]+)\. Hover", caption).group(1))
    assert m == SLOPES6[head]
    raw, scaled = (_values(page, f"[data-testid=step-table] td[data-col={c}]") for c in ("raw", "scaled"))
    j = np.arange(qpos + 1)
    np.testing.assert_allclose(scaled[:qpos + 1], raw[:qpos + 1] / np.sqrt(d) + m * j, rtol=1e-14)
