"""The head view's fast paths draw what a fresh page draws: a layer or head switch keeps the
tokens' elements and redraws only the lines (the same pixels as a page opened at that layer), the
lines of a scrolled band are exactly the full set's lines that cross it (every head's), and the
kernel that computes a head's weights for drawing (two queries × four keys at a time, in Web
Workers) gives the bits of the step view's row-by-row float64 arithmetic, and counts the head's
weights as the head view's digest counts them."""

from __future__ import annotations

import pytest

from tests.browser.conftest import wait_ready
from tests.browser.test_long_texts import settled

pytestmark = pytest.mark.browser

FRAME = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))"
PICTURE = """() => ({note: document.querySelector('[data-testid=head-note]').textContent,
                    lines: document.querySelector('.as-hv canvas').toDataURL()})"""


def picture_at(page, url: str, hash_: str) -> dict:
    page.goto(url + hash_)
    page.reload()  # a new hash alone does not reload the page
    wait_ready(page)
    settled(page)
    page.evaluate(FRAME)
    return page.evaluate(PICTURE)


@pytest.mark.parametrize("patch,hash_", [({"layer": 3}, "#view=head&layer=3"),
                                         ({"layer": 5, "heads": [1, 5]}, "#view=head&layer=5&heads=1,5")])
def test_a_switch_keeps_the_tokens_and_draws_what_a_fresh_page_draws(page, exported, patch, hash_):
    url = exported.as_uri()
    want = picture_at(page, url, hash_)
    page.goto(url + "#view=head&layer=0")
    page.reload()
    wait_ready(page)
    page.evaluate("() => { document.querySelector('[data-testid=q-2]').__kept = 1; }")
    page.evaluate("async p => { await window.attnscopeViewer.set(p); }", patch)
    settled(page)
    page.evaluate(FRAME)
    assert page.evaluate("() => document.querySelector('[data-testid=q-2]').__kept") == 1  # the same element
    assert page.locator("[data-testid=loading]").count() == 0
    got = page.evaluate(PICTURE)
    assert got["note"] == want["note"]
    assert got["lines"] == want["lines"]  # pixel for pixel


def test_a_scrolled_band_draws_every_heads_lines_that_cross_it(page, exported):
    page.goto(exported.as_uri())
    wait_ready(page)
    got = page.evaluate("""() => {
        const v = window.attnscopeViewer, ROW = window.attnscope.util.ROW;
        const count = (lo, hi) => v.headSegments(4, 100, 0, lo, hi).map(g => {
            let c = 0; for (const b of g.buckets) for (let i = 0; i < b.length; i += 4) {
                const y0 = b[i + 1], y1 = b[i + 3];
                if (lo === undefined || !((y0 < lo && y1 < lo) || (y0 > hi && y1 > hi))) c++; }
            return c; });
        const full = count(), lo = 3 * ROW, hi = 6 * ROW;
        // the full set filtered by the band, per head
        const want = v.headSegments(4, 100, 0).map(g => { let c = 0;
            for (const b of g.buckets) for (let i = 0; i < b.length; i += 4)
                if (!((b[i + 1] < lo && b[i + 3] < lo) || (b[i + 1] > hi && b[i + 3] > hi))) c++;
            return c; });
        const band = v.headSegments(4, 100, 0, lo, hi).map(g => g.buckets.reduce((a, b) => a + b.length / 4, 0));
        return {full, want, band};
    }""")
    assert got["band"] == got["want"]
    assert all(c > 0 for c in got["want"])  # every head has lines in the band (the bug drew almost none)
    assert sum(got["full"]) > sum(got["want"])


def test_the_drawing_kernel_has_the_step_views_bits(page, exported):
    page.goto(exported.as_uri())
    wait_ready(page)
    bad = page.evaluate("""() => {
        const A = window.attnscope, v = window.attnscopeViewer, t = v.text(), out = [];
        // the page's own heads: every weight equals its float64 step-view row, rounded to float32
        for (const [l, h] of [[0, 0], [3, 7], [5, 11]]) {
            const W = t.weights(l, h);
            for (let i = 0; i < t.n; i++) { const w = t.steps(l, h, i).weights;
                for (let j = 0; j < t.n; j++) if (Math.fround(w[j]) !== W[i * t.n + j]) out.push([l, h, i, j]); }
        }
        // the bins the kernel counts as it writes are headSummary's own count of its weights
        for (const h of [0, 7]) {
            const bins = new Float64Array(1001), W = A.util.headWeights(t.operand(2, 0, h), t.operand(2, 1, h), t.n, t.d,
                t.cfg.factor, t.cfg.causal, t.window(2), new Float32Array(t.n * t.n), bins);
            const own = A.util.headSummary(W, t.n, 8000), got = A.util.headSummary(W, t.n, 8000, bins.slice());
            if (own.bins.some((x, b) => x !== bins[b])) out.push(["bins", h]);
            if (own.idx.length !== got.idx.length || own.idx.some((x, i) => x !== got.idx[i])) out.push(["idx", h]);
        }
        // synthetic heads: causal, a sliding window, odd and tiny lengths, against a plain loop
        const cases = [[7, 4, false, null], [9, 3, true, null], [13, 8, true, 4], [33, 16, true, 5],
                       [1, 4, false, null], [2, 2, true, null]];
        for (const [n, d, causal, win] of cases) {
            const q = new Float64Array(n * d), k = new Float64Array(n * d), f = 0.3;
            for (let i = 0; i < n * d; i++) {
                q[i] = Math.fround(Math.sin(i * 0.7) * 4); k[i] = Math.fround(Math.cos(i * 1.3) * 4); }
            const W = A.util.headWeights(q, k, n, d, f, causal, win, new Float32Array(n * n));
            for (let i = 0; i < n; i++) {
                const s = []; let m = -Infinity, sum = 0;
                for (let j = 0; j < n; j++) { let x = 0; for (let u = 0; u < d; u++) x += q[i * d + u] * k[j * d + u];
                    s.push((causal && j > i) || (win !== null && i - j >= win) ? -Infinity : x * f); m = Math.max(m, s[j]); }
                const e = s.map(x => Math.exp(x - m)); for (const x of e) sum += x;
                for (let j = 0; j < n; j++) if (Math.fround(e[j] / sum) !== W[i * n + j]) out.push([n, d, i, j]);
            }
        }
        return out;
    }""")
    assert bad == []
