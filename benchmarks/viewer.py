"""Viewer benchmark: file size and time to first render in headless Chromium, 128 and 512 tokens.

    python benchmarks/viewer.py [--tokens 128 512] [--repeat 3]

For each length, the default model (all-MiniLM-L6-v2, 6 layers × 12 heads) traces an English text
of exactly that many tokens; ``attnscope view``'s code writes the page; Chromium (Debian's, via
Playwright) opens it from disk. Printed per length (median of --repeat page loads):

* size: the HTML file; ``vs JSON``: its ratio to the reference encoding that viewers such as
  bertviz use, every attention weight as JSON text with 4 decimals (computed here, same trace);
* build: Python time to make the page (trace excluded);
* first render: from navigation start to the first frame after the head view is drawn (all 12
  heads of layer 0), as ``performance.now()`` in the page; ``decode`` is the part spent inflating
  the data;
* layer switch / step view: one interaction each (draw all heads of layer 5; open the step table of
  the last token), until the next frame is on screen.

The machine is shared (2 cores): absolute times are noisy; the ratios and sizes are stable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("attention lets every token look at every other token and mix their values by weights that "
         "come from a softmax of scaled dot products between queries and keys so the same word gets "
         "a different vector in a different sentence which is what context awareness means").split()


def text_of(model, n_tokens: int) -> str:
    """An English text that the model's tokenizer turns into exactly ``n_tokens`` tokens."""
    from attnscope.errors import InputError

    def count(words: int) -> int:
        try:
            return len(model.encode(" ".join(WORDS[i % len(WORDS)] for i in range(words))).tokens[0])
        except InputError:  # longer than the model's positions
            return 10 ** 9

    lo, hi = 1, n_tokens  # every word is at least one token
    while lo < hi:  # fewest words reaching n_tokens
        mid = (lo + hi) // 2
        if count(mid) >= n_tokens:
            hi = mid
        else:
            lo = mid + 1
    text = " ".join(WORDS[i % len(WORDS)] for i in range(lo))
    got = len(model.encode(text).tokens[0])
    if got != n_tokens:
        raise SystemExit(f"could not make a text of {n_tokens} tokens (got {got})")
    return text


def json_weights_size(model, text: str) -> int:
    """Bytes of all weights (layers × heads × n × n) as JSON text with 4 decimals."""
    tr = model.trace(text, names=["layers.*.attn.weights"])
    rows = [[[[round(float(x), 4) for x in row] for row in tr[f"layers.{i}.attn.weights"][0, h].tolist()]
             for h in range(model.config.n_heads)] for i in range(model.config.n_layers)]
    return len(json.dumps(rows, separators=(",", ":")).encode())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright
    from rich.console import Console
    from rich.table import Table

    import attnscope
    from attnscope.testing.headless import launch
    from attnscope.viewer import data as vdata
    from attnscope.viewer.html import render
    from attnscope.viewer.run import trace_each

    console = Console()
    model = attnscope.load()
    table = Table(title=f"attnscope viewer · {model.name} ({model.config.n_layers} layers × {model.config.n_heads} heads)")
    for col in ("tokens", "size MB", "JSON weights MB", "size vs JSON", "build s", "first render ms",
                "decode ms", "layer switch ms", "step view ms"):
        table.add_column(col, justify="right")
    tmp = Path(tempfile.mkdtemp(prefix="attnscope-bench-"))
    with sync_playwright() as p:
        ctx, _ = launch(p)
        for n in args.tokens:
            with console.status(f"{n} tokens: tracing and writing the page"):
                text = text_of(model, n)
                traces = trace_each(model, [text])
                t0 = time.perf_counter()
                page_html = render(vdata.build(traces))
                build_s = time.perf_counter() - t0
                path = tmp / f"view-{n}.html"
                path.write_text(page_html, encoding="utf-8")
                ref = json_weights_size(model, text)
            size = path.stat().st_size
            first, decode, switch, step = [], [], [], []
            for r in range(args.repeat):
                with console.status(f"{n} tokens: page load {r + 1}/{args.repeat}"):
                    page = ctx.new_page()
                    page.goto(path.as_uri())
                    page.wait_for_selector("#attnscope-root[data-ready='1']", timeout=120_000)
                    m = page.evaluate("""async () => {
                        const v = window.attnscopeViewer;
                        const frame = () => new Promise(r => requestAnimationFrame(r));
                        const timed = async patch => {
                            const t = performance.now(); v.set(patch); await frame(); return performance.now() - t;
                        };
                        const sw = await timed({layer: 5});
                        const st = await timed({view: 'step', query: v.text().n - 1});
                        return {first: v.firstRender, decode: v.decodeMs, sw, st};
                    }""")
                    page.close()
                first.append(m["first"])
                decode.append(m["decode"])
                switch.append(m["sw"])
                step.append(m["st"])
            med = statistics.median
            table.add_row(str(n), f"{size / 1e6:.2f}", f"{ref / 1e6:.2f}", f"{size / ref:.3f}", f"{build_s:.2f}",
                          f"{med(first):.0f}", f"{med(decode):.0f}", f"{med(switch):.0f}", f"{med(step):.0f}")
        ctx.close()
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
