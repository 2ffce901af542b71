"""The tuned-lens results (docs/results/tuned-lens.md) say what the stored per-text numbers say
(docs/results/tuned-lens-smollm2.json, written by the page's command): every row of the table
recomputed here from the per-text KL lists — the mean over the held-out texts and a percentile
bootstrap interval (the texts resampled by NumPy's generator, seed and resamples as the page
states, the same resamples for the three columns) — and the verdict's count of points where the
tuned lens is lower."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "tuned-lens.md"
DATA = ROOT / "docs" / "results" / "tuned-lens-smollm2.json"
SEED, RESAMPLES = 0, 1000
ROW = re.compile(r"^\| `([\w.]+)` \| (.+?) \| (.+?) \| (.+?) \|$", re.M)


def cell(values: np.ndarray, idx: np.ndarray) -> str:
    """``mean [2.5 %, 97.5 %]`` of ``values`` (texts,) over the resamples ``idx`` (resamples, texts)."""
    means = values[idx].mean(1)
    return f"{values.mean():.3f} [{np.percentile(means, 2.5):.3f}, {np.percentile(means, 97.5):.3f}]"


def table(data: dict) -> dict[str, tuple[str, str, str]]:
    logit = np.array([t["logit"] for t in data["texts"]], dtype=float)  # (texts, points)
    tuned = np.array([t["tuned"] for t in data["texts"]], dtype=float)
    idx = np.random.default_rng(SEED).integers(0, len(logit), size=(RESAMPLES, len(logit)))
    return {name: (cell(logit[:, p], idx), cell(tuned[:, p], idx), cell(logit[:, p] - tuned[:, p], idx))
            for p, name in enumerate(data["points"])}


def test_the_table_is_the_per_text_numbers():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    rows = {m[0]: m[1:] for m in ROW.findall(page)}
    want = table(data)
    assert list(rows) == list(want) == data["points"]
    for name in want:
        assert rows[name] == want[name], name
    assert f"{len(data['texts'])} held-out texts" in page
    assert f"{sum(t['tokens'] for t in data['texts'])} tokens" in page


def test_the_verdict_counts_the_points_where_the_tuned_lens_is_lower():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    logit = np.array([t["logit"] for t in data["texts"]]).mean(0)[:-1]
    tuned = np.array([t["tuned"] for t in data["texts"]]).mean(0)[:-1]
    lower = int((tuned < logit).sum())
    assert f"lower at {lower} of {len(logit)} points" in page
    higher = [name for name, a, b in zip(data["points"], logit, tuned) if b >= a]
    for name in higher:
        assert f"`{name}`" in page.split("## Verdict")[1]


def test_the_page_gives_the_command_and_settings():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    s = data["settings"]
    assert s["command"] in page
    assert f"{s['train_seconds']:.0f} s" in page or f"{s['train_seconds'] / 60:.0f} min" in page
    assert s["fingerprint"] in page
