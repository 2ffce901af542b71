"""The viewer inside a notebook output (Trace._repr_html_'s iframe) and on a causal model."""

import pytest

from attnscope import reference as R
from attnscope import viewer
from attnscope.explain.numbers import fmt
from attnscope.viewer.html import render
from attnscope.viewer.run import trace_each, view_data

pytestmark = pytest.mark.browser


def test_repr_html_iframe_runs(page, minilm, artifacts):
    (tr,) = trace_each(minilm, ["Attention is all you need."])
    page.set_content("<h3>a notebook cell</h3>" + viewer.repr_html(tr, height=500))
    frame = page.frame_locator("iframe")
    frame.locator("#attnscope-root[data-ready='1']").wait_for(timeout=30_000)
    frame.locator("[data-testid=q-1]").dblclick()
    s = R.trace_row(tr, 0, 0, 1)
    shown = frame.locator("tr[data-j] td[data-col=weight]").evaluate_all("tds => tds.map(t => t.firstChild.textContent)")
    assert shown == [fmt(x, 4) for x in s["weights"]]
    page.screenshot(path=str(artifacts / "notebook-iframe.png"))


def test_causal_model_masks_future_keys(page, tiny_models, tmp_path):
    model = tiny_models["gpt2"]
    path = tmp_path / "gpt2.html"
    path.write_text(render(view_data(model, "the quick brown fox")), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("#attnscope-root[data-ready='1']")
    page.dblclick("[data-testid=q-1]")
    (tr,) = trace_each(model, ["the quick brown fox"])
    s = R.trace_row(tr, 0, 0, 1)
    col = lambda c: page.eval_on_selector_all(f"tr[data-j] td[data-col={c}]", "tds => tds.map(t => t.firstChild.textContent)")
    assert col("scaled") == [fmt(x, 4) for x in s["scaled"]]
    assert col("scaled")[2:] == ["−∞"] * (len(s["scaled"]) - 2)
    assert col("weight")[2:] == ["0"] * (len(s["scaled"]) - 2)
