"""The served API docs render offline; links open the view the page names; one decimals range;
the served page introduces itself and never leaves a stale result under an error."""

from __future__ import annotations

import pytest

from attnscope.viewer.data import MAX_DECIMALS
from tests.browser.conftest import wait_ready

pytestmark = pytest.mark.browser

OPS = {"/api/model", "/api/view", "/api/attention", "/api/steps"}


def _offline(page, server_url):
    """Abort every request that leaves the server (a CDN, fonts); return the list of them."""
    left = []

    def route(r):
        if r.request.url.startswith(server_url):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    return left


def test_swagger_docs_render_offline(page, server_url, artifacts):
    left = _offline(page, server_url)
    page.goto(server_url + "docs")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)
    paths = set(page.eval_on_selector_all(".opblock-summary-path", "es => es.map(e => e.dataset.path || e.textContent)"))
    assert OPS <= paths and left == []
    page.click("#operations-default-steps_api_steps_post .opblock-summary")  # opens, with its schema
    page.wait_for_selector("#operations-default-steps_api_steps_post .opblock-body")
    page.screenshot(path=str(artifacts / "served-docs.png"), full_page=False)


@pytest.mark.parametrize("name", ["context", "compare"])
def test_link_names_the_context_view_as_the_page_does(page, exported, name):
    page.goto(exported.as_uri() + f"#view={name}")
    wait_ready(page)
    assert page.get_attribute("#attnscope-root", "data-view") == "context"
    assert "on" in page.get_attribute("[data-testid=tab-context]", "class")
    assert page.text_content("[data-testid=tab-context]") == "Context view"
    assert page.is_hidden("[data-testid=layer-select]")  # every layer is in this view


def test_the_address_follows_the_view_so_it_can_be_shared(page, exported):
    page.goto(exported.as_uri())
    wait_ready(page)
    page.select_option("[data-testid=layer-select]", "3")
    page.dblclick("[data-testid=q-2]")
    page.select_option("[data-testid=decimals-select]", "6")
    url = page.url
    assert url.endswith("#view=step&text=0&layer=3&head=0&query=2&dec=6"), url
    page.goto("about:blank")
    page.goto(url)
    wait_ready(page)
    assert page.get_attribute("#attnscope-root", "data-view") == "step"
    assert page.input_value("[data-testid=query-select]") == "2" and page.input_value("[data-testid=decimals-select]") == "6"


def test_decimals_selector_is_the_one_range(page, exported):
    page.goto(exported.as_uri() + f"#dec={MAX_DECIMALS}")
    wait_ready(page)
    opts = page.eval_on_selector_all("[data-testid=decimals-select] option", "os => os.map(o => +o.value)")
    assert opts == list(range(MAX_DECIMALS + 1))
    assert page.input_value("[data-testid=decimals-select]") == str(MAX_DECIMALS)


def test_served_page_introduces_itself_and_clears_stale_results(page, server_url, artifacts):
    page.goto(server_url)
    intro = page.locator("[data-testid=intro]")
    assert "all-MiniLM-L6-v2" in intro.locator("h1").text_content()
    assert intro.locator("a[href=docs]").count() == 1
    page.click("[data-testid=example-0]")  # an example fills the form and shows its result
    wait_ready(page)
    assert page.input_value("[data-testid=text-input]") == "The bank of the river was muddy."
    assert page.locator("[data-testid=head-view]").count() == 1
    page.screenshot(path=str(artifacts / "served-example.png"))
    page.fill("[data-testid=text-input]", "   ")
    page.fill("[data-testid=compare-input]", "")
    page.click("[data-testid=submit]")
    page.locator("[data-testid=form-message]").locator("text=text is empty").wait_for()
    assert page.locator("[data-testid=head-view]").count() == 0  # the old result is gone
    assert page.get_attribute("#attnscope-root", "data-ready") is None
    assert len(page.errors) == 1 and "status of 422" in page.errors[0]
    page.errors.clear()
