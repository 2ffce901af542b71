"""The encoder–decoder viewer in headless Chromium: the cross view (target queries on the left,
source keys on the right; screenshot kept), the step view of a cross row and of a T5 encoder row
with its bias against the page data's float64 arithmetic in Python, exports, the address, and the
served page with its source and target boxes."""

import re

import numpy as np
import pytest

from attnscope.viewer import data as D
from attnscope.viewer import seq2seq as S
from attnscope.viewer.seq2seq_page import render
from tests.browser.conftest import wait_ready
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401
from tests.server.live import live_server

SOURCE = "translate English to German: The cat sat on the mat."
TARGET = "Die Katze sass auf der Matte."


@pytest.fixture(scope="module")
def t5_page(seq2seq, tmp_path_factory):  # noqa: F811
    d = S.seq2seq_view_data(seq2seq["t5"], SOURCE, TARGET, decimals=6)
    path = tmp_path_factory.mktemp("s2s") / "t5.html"
    path.write_text(render(d), encoding="utf-8")
    return path, d


def python_row(d, att, layer, head, i):
    """The page's row in Python float64 (viewer.seq2seq.page_weights) and its raw q·k and bias."""
    entry, cfg = d["texts"][0], d["config"]
    q, k = D.decode(entry[att]["q"])[layer], D.decode(entry[att]["k"])[layer]
    w = S.page_weights(q, k, cfg["factor"], att, cfg["bias"])[head, i]
    raw = k[head].astype(np.float64) @ q[head, i].astype(np.float64)
    bias = None
    if cfg["bias"] and att in cfg["bias"]:
        b = D.decode(entry[att]["buckets"]).astype(int)[i]
        bias = np.asarray(cfg["bias"][att]["table"])[b, head]
    return w, raw, bias


def column(pg, name):
    return [float(x) for x in pg.eval_on_selector_all(f"[data-testid=step-table] td[data-col={name}]",
                                                       "els => els.map(e => e.getAttribute('data-value'))")]


def test_cross_view_and_a_cross_row(page, t5_page, artifacts):
    path, d = t5_page
    page.goto(path.as_uri())
    wait_ready(page)
    root = page.locator("#attnscope-root")
    assert root.get_attribute("data-attention") == "cross" and root.get_attribute("data-view") == "head"
    entry = d["texts"][0]
    assert page.locator("[data-testid=side-q]").inner_text().startswith("← target")
    assert page.locator("[data-testid=side-k]").inner_text().startswith("source")
    assert page.locator(".as-tok.q").count() == len(entry["target_tokens"])
    assert page.locator(".as-tok.k").count() == len(entry["source_tokens"])
    page.locator("[data-testid=q-4]").hover()
    page.screenshot(path=str(artifacts / "seq2seq-cross-head-view.png"), full_page=True)
    # double-click a target token: the step view of its cross row (q from the target, k, v from the source)
    page.locator("[data-testid=q-4]").dblclick()
    page.wait_for_selector("[data-testid=step-table]")
    assert "target token 4" in page.locator("[data-testid=step-caption]").inner_text()
    layer, head = 0, int(page.locator("[data-testid=focus-head-select]").input_value())
    w, raw, _ = python_row(d, "cross", layer, head, 4)
    assert len(column(page, "weight")) == len(entry["source_tokens"])
    np.testing.assert_allclose(column(page, "weight"), w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(column(page, "raw"), raw, rtol=1e-12, atol=1e-15)
    assert page.locator("td[data-col=bias]").count() == 0  # cross-attention has no position bias
    # the shown digits are the float64 values at the page's 6 decimals
    shown = page.eval_on_selector_all("[data-testid=step-table] td[data-col=weight]", "els => els.map(e => e.textContent)")
    assert shown[0] == f"{w[0]:.6f}" or abs(float(shown[0]) - w[0]) <= 5e-7
    page.select_option("[data-testid=layer-select]", "2")
    page.select_option("[data-testid=focus-head-select]", "3")
    w2, _, _ = python_row(d, "cross", 2, 3, 4)
    np.testing.assert_allclose(column(page, "weight"), w2, rtol=1e-12, atol=1e-15)
    assert re.search(r"att=cross&view=step&layer=2&head=3&query=4", page.evaluate("location.hash"))
    page.screenshot(path=str(artifacts / "seq2seq-cross-step-view.png"), full_page=True)


def test_t5_encoder_row_with_its_bias_and_the_decoder_mask(page, t5_page):
    path, d = t5_page
    page.goto(path.as_uri() + "#att=encoder&view=step&layer=1&head=2&query=5")
    wait_ready(page)
    w, raw, bias = python_row(d, "encoder", 1, 2, 5)
    np.testing.assert_allclose(column(page, "bias"), bias, rtol=0, atol=0)  # float32 table values, exact
    np.testing.assert_allclose(column(page, "raw"), raw, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(column(page, "weight"), w, rtol=1e-12, atol=1e-15)
    deltas = page.eval_on_selector_all("td[data-col=delta]", "els => els.map(e => +e.textContent)")
    assert deltas == [j - 5 for j in range(len(d["texts"][0]["source_tokens"]))]
    # the decoder's self-attention: later target tokens are hidden, weight 0
    page.click("[data-testid=att-self]")
    page.select_option("[data-testid=query-select]", "3")
    weights = column(page, "weight")
    assert all(x == 0 for x in weights[4:]) and abs(sum(weights) - 1) < 1e-12
    assert page.locator("tr.masked").count() == len(weights) - 4


def test_model_view_and_exports(page, t5_page, artifacts):
    path, d = t5_page
    page.goto(path.as_uri() + "#att=cross&view=model")
    wait_ready(page)
    n_dec, H = d["config"]["n_decoder_layers"], d["config"]["n_heads"]
    assert page.locator("[data-testid=model-view] canvas").count() == n_dec * H
    page.screenshot(path=str(artifacts / "seq2seq-cross-model-view.png"), full_page=True)
    for kind in ("png", "svg"):
        with page.expect_download() as dl:
            page.click(f"[data-testid=export-{kind}]")
        target = artifacts / f"seq2seq-export.{kind}"
        dl.value.save_as(str(target))
        assert target.stat().st_size > 2000
        assert dl.value.suggested_filename == f"attnscope-cross-model-layer0.{kind}"
    page.locator("[data-testid=thumb-1-2]").click()
    assert page.locator("#attnscope-root").get_attribute("data-view") == "head"
    assert page.locator(".as-hbtn:not(.off)").count() == 1


def test_served_page_source_and_target(page, seq2seq_dirs, artifacts):  # noqa: F811
    with live_server("--model", str(seq2seq_dirs["bart"])) as (url, _):
        page.ignored.append("status of 422")  # the refusal below, logged by the browser
        page.goto(url)
        page.fill("[data-testid=source-input]", SOURCE)
        page.click("[data-testid=submit]")  # no target: one sentence from the server, nothing drawn
        page.wait_for_selector("[data-testid=form-message].as-err")
        assert "target is empty" in page.locator("[data-testid=form-message]").inner_text()
        page.fill("[data-testid=target-input]", TARGET)
        page.click("[data-testid=submit]")
        wait_ready(page)
        assert page.locator(".as-tok.k").count() > page.locator(".as-tok.q").count() > 3
        page.screenshot(path=str(artifacts / "seq2seq-served.png"), full_page=True)
