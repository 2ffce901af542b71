"""Headless Debian Chromium through Playwright (sync API), an exported page, and a live server.

Screenshots and exported images are kept under artifacts/browser/ (git-ignored) for inspection.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.playwright_once import chromium_context, watched_page
from tests.server.live import live_server
from tests.viewer.fixtures import OTHER, TEXT, full_trace, minilm, tiny_models, trace  # noqa: F401

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "browser"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def pytest_collection_modifyitems(session, config, items):
    """No Chromium: one clear line saying how to get it, instead of one traceback per browser test,
    and never a skip. Without xdist the run stops at once; an xdist worker cannot stop the run, so
    one test that opens the browser fails with that line and the other browser tests are left out."""
    from attnscope.testing.headless import chromium_path
    browser = [i for i in items if "browser_context" in getattr(i, "fixturenames", ())]
    if not browser:
        return
    try:
        chromium_path()
    except FileNotFoundError as e:
        if not hasattr(config, "workerinput"):
            pytest.exit(f"the browser tests need Chromium: {e}", returncode=1)
        left_out = browser[1:]
        items[:] = [i for i in items if i not in left_out]
        config.hook.pytest_deselected(items=left_out)


@pytest.fixture(scope="session")
def browser_context():
    with chromium_context("the browser tests") as ctx:
        yield ctx


@pytest.fixture
def page(browser_context):
    """A fresh tab; the test fails if the page logs an error or throws."""
    with watched_page(browser_context) as pg:  # pg.ignored: substrings of messages a test's own instruments cause
        yield pg


def wait_ready(pg, timeout: float = 30_000) -> None:
    pg.wait_for_selector("#attnscope-root[data-ready='1']", timeout=timeout)


@pytest.fixture(scope="session")
def exported(minilm, tmp_path_factory) -> Path:  # noqa: F811 (the imported fixture)
    """The page `attnscope view TEXT --compare OTHER --token bank` writes (same code path)."""
    path = tmp_path_factory.mktemp("page") / "attention.html"
    path.write_text(render(view_data(minilm, TEXT, compare=OTHER, token="bank")), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def server_url():
    """`attnscope serve` as a real uvicorn process on a free port."""
    with live_server("--max-chars", "300") as (url, _):
        yield url
