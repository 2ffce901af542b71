"""One Playwright per test process. Playwright's sync API refuses to start a second instance while
one runs (it sees the first one's event loop), and several modules open Chromium — the browser
tests, the docs site's offline tests, the notebook export test — each in its own fixture that may
land in the same xdist worker. They all draw their contexts from this one instance."""

from __future__ import annotations

import atexit

_playwright = None


def playwright():
    """The process's Playwright, started on first use and stopped when the process exits."""
    global _playwright
    if _playwright is None:
        from playwright.sync_api import sync_playwright

        _playwright = sync_playwright().start()
        atexit.register(_playwright.stop)
    return _playwright
