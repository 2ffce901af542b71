"""One Playwright per test process, and the Chromium contexts and watched tabs drawn from it.

Playwright's sync API refuses to start a second instance while one runs (it sees the first one's
event loop), and several modules open Chromium — the browser tests, the docs site's offline tests,
the notebook export test — each in its own fixture that may land in the same xdist worker. They all
draw their contexts from this one instance (:func:`chromium_context`) and their tabs through
:func:`watched_page`."""

from __future__ import annotations

import atexit
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pytest

_playwright = None


def playwright():
    """The process's Playwright, started on first use and stopped when the process exits."""
    global _playwright
    if _playwright is None:
        from playwright.sync_api import sync_playwright

        _playwright = sync_playwright().start()
        atexit.register(_playwright.stop)
    return _playwright


@contextmanager
def chromium_context(who: str = "the browser tests", env: dict[str, str] | None = None) -> Iterator:
    """A headless Chromium context (:func:`attnscope.testing.headless.launch`) of the process's
    Playwright; closed and its profile folder removed afterwards. Without Chromium the test fails
    with one line, "``who`` need Chromium: …", never a traceback or a skip. Chromium sees this
    machine's fonts less the CJK ones (:mod:`tests.browser.font_sandbox`), so pages draw CJK text
    the same on every machine: with their own fonts, or as boxes. ``env``: the browser's whole
    environment instead."""
    from attnscope.testing.headless import chromium_path, launch
    from tests.browser.font_sandbox import browser_env

    try:
        chromium_path()
    except FileNotFoundError as e:
        pytest.fail(f"{who} need Chromium: {e}", pytrace=False)
    ctx, profile = launch(playwright(), env=browser_env() if env is None else env)
    try:
        yield ctx
    finally:
        ctx.close()
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def watched_page(ctx, ignored: Iterable[str] = ()) -> Iterator:
    """A fresh tab of ``ctx`` that records what the page logs as an error or throws in
    ``page.errors``; when the block ends the tab is closed and those errors must be none, less the
    ones holding a substring of ``page.ignored`` (``ignored`` to start with; a test may add the
    messages its own instruments cause)."""
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    pg.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.errors = errors
    pg.ignored = list(ignored)
    yield pg
    pg.close()
    errors = [e for e in errors if not any(x in e for x in pg.ignored)]
    assert errors == [], errors
