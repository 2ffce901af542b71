"""Headless Debian Chromium through Playwright (sync API), an exported page, and a live server.

Screenshots and exported images are kept under artifacts/browser/ (git-ignored) for inspection.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.viewer.fixtures import OTHER, TEXT, full_trace, minilm, tiny_models, trace  # noqa: F401

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "browser"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def browser_context():
    from playwright.sync_api import sync_playwright

    from attnscope.viewer.headless import launch
    with sync_playwright() as p:
        ctx, profile = launch(p)
        try:
            yield ctx
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser_context):
    """A fresh tab; the test fails if the page logs an error or throws."""
    pg = browser_context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    pg.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.errors = errors
    yield pg
    pg.close()
    assert errors == [], errors


def wait_ready(pg, timeout: float = 30_000) -> None:
    pg.wait_for_selector("#attnscope-root[data-ready='1']", timeout=timeout)


@pytest.fixture(scope="session")
def exported(minilm, tmp_path_factory) -> Path:
    """The page `attnscope view TEXT --compare OTHER --token bank` writes (same code path)."""
    path = tmp_path_factory.mktemp("page") / "attention.html"
    path.write_text(render(view_data(minilm, TEXT, compare=OTHER, token="bank")), encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url():
    """`attnscope serve` as a real uvicorn process on a free port."""
    port = _free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "attnscope", "serve", "--port", str(port), "--max-chars", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"attnscope serve exited: {proc.stdout.read().decode(errors='replace')}")
            if time.monotonic() > deadline:
                raise RuntimeError("attnscope serve did not come up in 90 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
