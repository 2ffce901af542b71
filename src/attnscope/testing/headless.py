"""Launch Debian's Chromium headless through Playwright (for the browser tests and the benchmark).

Playwright cannot download its own browsers here, so it drives the system ``chromium``
(``ATTNSCOPE_CHROMIUM`` overrides the path) with flags that keep it off the network and quiet.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]


#: The one line to show when there is no Chromium.
MISSING = ("chromium not found: run `make test` (it installs Debian's chromium when it may), or "
           "`sudo apt-get install -y chromium`, or set ATTNSCOPE_CHROMIUM to a Chromium executable")


def chromium_path() -> str:
    """The Chromium executable: $ATTNSCOPE_CHROMIUM when set, else /usr/bin/chromium or
    ``chromium`` on PATH. FileNotFoundError with :data:`MISSING` when there is none."""
    env = os.environ.get("ATTNSCOPE_CHROMIUM")
    if env:  # a path the user chose is never silently replaced by another browser
        if Path(env).is_file():
            return env
        raise FileNotFoundError(f"ATTNSCOPE_CHROMIUM={env} is not a file; {MISSING}")
    for p in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if p and Path(p).exists():
            return p
    raise FileNotFoundError(MISSING)


def launch(playwright, user_data_dir: str | None = None, env: dict[str, str] | None = None):
    """A persistent Chromium context (a browser with one profile in a temp folder).

    ``env``: the browser's whole environment (default: this process's), e.g. with a
    ``FONTCONFIG_FILE`` of its own. Returns ``(context, profile_dir)``; close the context, then
    remove the folder.
    """
    profile = user_data_dir or tempfile.mkdtemp(prefix="attnscope-chromium-")
    extra = {} if env is None else {"env": env}
    ctx = playwright.chromium.launch_persistent_context(
        profile, executable_path=chromium_path(), headless=True, args=FLAGS, accept_downloads=True,
        viewport={"width": 1280, "height": 900}, device_scale_factor=1, **extra)
    return ctx, profile
