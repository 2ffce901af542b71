"""Make the docs' pictures of the viewer and the figures (docs/img/), from the default model.

    python tools/make_viewer_screenshots.py

Drives Debian's Chromium headless through Playwright, as the browser tests do.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import attnscope
from attnscope import plot
from attnscope.testing.headless import launch
from attnscope.viewer.html import render
from attnscope.viewer.run import trace_each, view_data

OUT = Path(__file__).resolve().parents[1] / "docs" / "img"
TEXT = "The bank of the river was muddy."
OTHER = "I deposited money at the bank."


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    model = attnscope.load()
    (tr,) = trace_each(model, [TEXT])
    plot.head_heatmap(tr, layer=2, head=4).savefig(OUT / "plot-heatmap.png", dpi=80)
    plot.heads_grid(tr).savefig(OUT / "plot-grid.png", dpi=60)
    plot.score_histograms().savefig(OUT / "plot-histograms.png", dpi=70)
    plot.softmax_temperatures([15.3, 22.7, 18.2, 2.1, 1.8, 3.2, 2.9, 5.6, 4.1], (1.0, 8.0, 16.0),
                              labels=["我", "喜", "欢", "人", "工", "智", "能", "[CLS]", "[SEP]"]).savefig(
        OUT / "plot-softmax.png", dpi=70)

    page_file = Path(tempfile.mkdtemp(prefix="attnscope-shots-")) / "attention.html"
    page_file.write_text(render(view_data(model, TEXT, compare=OTHER, token="bank")), encoding="utf-8")
    with sync_playwright() as p:
        ctx, _ = launch(p)
        page = ctx.new_page()
        page.set_viewport_size({"width": 1100, "height": 760})
        page.goto(page_file.as_uri())
        page.wait_for_selector("#attnscope-root[data-ready='1']")
        page.select_option("[data-testid=layer-select]", "2")
        page.hover("[data-testid=q-2]")
        page.screenshot(path=str(OUT / "viewer-head.png"))
        page.mouse.move(1000, 700)
        page.click("[data-testid=tab-model]")
        page.wait_for_timeout(200)
        page.screenshot(path=str(OUT / "viewer-model.png"))
        page.click("[data-testid=tab-head]")
        page.dblclick("[data-testid=q-2]")
        page.select_option("[data-testid=focus-head-select]", "4")
        page.screenshot(path=str(OUT / "viewer-step.png"))
        page.click("[data-testid=tab-context]")
        page.screenshot(path=str(OUT / "viewer-context.png"))

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "attnscope", "serve", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/"
            for _ in range(300):
                try:
                    urllib.request.urlopen(url + "healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            page.goto(url)
            page.fill("[data-testid=text-input]", "我喜欢人工智能, and attention is all you need.")
            page.click("[data-testid=submit]")
            page.wait_for_selector("#attnscope-root[data-ready='1']")
            page.select_option("[data-testid=layer-select]", "1")
            page.click("[data-testid=heads-none]")
            for h in (0, 3, 9):
                page.click(f"[data-testid=head-{h}]")
            page.screenshot(path=str(OUT / "viewer-served.png"))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        ctx.close()
    for f in sorted(OUT.glob("*.png")):
        print(f"{f.relative_to(OUT.parent.parent)}: {f.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
