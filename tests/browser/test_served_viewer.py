"""`attnscope serve` (uvicorn) in Chromium: type a sentence, see its attention, click a token, check
the numbers against attnscope explain; bad input shows the server's message and the page goes on."""

import json
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import wait_ready
from tests.browser.test_exported_file import assert_table_matches

pytestmark = pytest.mark.browser

TEXT = "The river bank was muddy."


def submit(page, text, compare="", token=""):
    page.fill("[data-testid=text-input]", text)
    page.fill("[data-testid=compare-input]", compare)
    page.fill("[data-testid=token-input]", token)
    page.click("[data-testid=submit]")


def test_type_a_sentence_and_check_the_numbers(page, server_url, minilm, artifacts):
    page.goto(server_url)
    submit(page, TEXT, "Money in the bank.", "bank")
    wait_ready(page)
    page.screenshot(path=str(artifacts / "served-head-view.png"))
    page.dblclick("[data-testid=q-3]")
    assert_table_matches(page, minilm, TEXT, 0, 0, 3, 4)
    page.select_option("[data-testid=layer-select]", "2")
    page.select_option("[data-testid=focus-head-select]", "5")
    assert_table_matches(page, minilm, TEXT, 2, 5, 3, 4)
    page.screenshot(path=str(artifacts / "served-step-view.png"), full_page=True)
    with page.expect_download() as dl:
        page.click("[data-testid=export-png]")
    dl.value.save_as(artifacts / "served-export-step.png")
    assert (artifacts / "served-export-step.png").read_bytes()[:4] == b"\x89PNG"
    page.click("[data-testid=tab-context]")
    assert page.locator("[data-testid=compare-table] tr").count() == 1 + 7


def test_bad_input_shows_the_message_and_the_page_goes_on(page, server_url, minilm):
    page.goto(server_url)
    submit(page, "   ")
    msg = page.locator("[data-testid=form-message]")
    msg.locator("text=text is empty").wait_for()
    assert "as-err" in msg.get_attribute("class")
    # no maxlength: with one the browser cut a longer paste to 300 UTF-16 units without a word
    assert page.get_attribute("[data-testid=text-input]", "maxlength") is None
    page.fill("[data-testid=text-input]", "x" * 301)
    page.click("[data-testid=submit]")
    msg.locator("text=the limit is 300").wait_for()
    submit(page, "我喜欢人工智能")
    wait_ready(page)
    assert page.text_content("[data-testid=q-1]") == "我"
    assert msg.text_content() == ""
    # the browser logs each 4xx response; those two are expected, nothing else is
    assert len(page.errors) == 2 and all("status of 422" in e for e in page.errors), page.errors
    page.errors.clear()


def test_raw_http_errors_and_it_keeps_serving(server_url):
    def post(path, body: bytes):
        req = urllib.request.Request(server_url + path, data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
    assert post("api/steps", b"{oops") == (400, {"detail": post("api/steps", b"{oops")[1]["detail"]})
    assert post("api/steps", b"{oops")[1]["detail"].startswith("request body is not valid JSON")
    status, body = post("api/attention", json.dumps({"text": "hi", "layer": 99, "head": 0}).encode())
    assert status == 422 and body["detail"] == "layer 99 is out of range: there are 6 layers (0..5)"
    status, body = post("api/attention", json.dumps({"text": "hi there", "layer": 1, "head": 2}).encode())
    assert status == 200 and len(body["weights"]) == 4
