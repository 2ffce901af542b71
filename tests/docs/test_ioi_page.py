"""docs/results/ioi.md against its stored numbers (docs/results/ioi/results.json): the sweeps' tables
re-ranked here from the raw per-sender values, the circuit's classes re-derived from the sweeps,
faithfulness re-divided, the interval rows and the experiment file that made them. The guide page
that points at it is docs/guide/circuits.md."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscope.patching.experiment_file import read_experiment

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "ioi.md"
STORED = ROOT / "docs" / "results" / "ioi" / "results.json"
FILE = ROOT / "docs" / "results" / "ioi" / "experiment.toml"


@pytest.fixture(scope="module")
def res():
    return json.loads(STORED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page():
    return PAGE.read_text(encoding="utf-8")


def ranked(sweep, k=10):
    """The k senders with the most negative patched − clean, from the raw (layers, heads) values."""
    v = np.array([[np.nan if x is None else x for x in row] for row in sweep["values"]], dtype=float)
    effect = v - sweep["clean"]
    flat = np.where(np.isnan(effect), np.inf, effect).ravel()
    order = np.argsort(flat, kind="stable")[:k]
    H = v.shape[1]
    return [(f"{i // H}.{i % H}", float(flat[i]), float(flat[i] / sweep["clean"])) for i in order]


def test_the_file_on_the_page_made_the_numbers(res):
    assert read_experiment(FILE) == res["experiment"]
    assert res["prompts"]["n"] >= 100 and res["model"] == "smollm2-135m"


def test_the_sweep_tables_are_the_stored_values_ranked(res, page):
    for sweep in res["sweeps"]:
        rows = ranked(sweep)
        assert [r[0] for r in rows] == [t["head"] for t in sweep["top"]]
        for head, effect, rel in rows:
            assert f"| {head} | {effect:+.3f} | {100 * rel:+.1f} % |" in page, head
        n_senders = sum(x is not None for row in sweep["values"] for x in row)
        assert n_senders == sweep["senders"]


def test_the_circuit_is_the_sweeps_strongest_and_its_metrics_are_on_the_page(res, page):
    exp = res["experiment"]["circuit"]["classes"]
    by_name = {s["name"]: s for s in res["sweeps"]}
    for name, spec in exp.items():
        want = sorted(tuple(int(x) for x in h.split(".")) for h, _, _ in ranked(by_name[spec["from"]], spec["top"]))
        assert [tuple(h) for h in res["circuit"]["classes"][name]] == want
    c = res["circuit"]
    assert c["faithfulness"]["value"] == pytest.approx(c["F(C)"]["value"] / c["F(M)"]["value"], rel=1e-12)
    assert c["gap"]["value"] == pytest.approx(c["F(M)"]["value"] - c["F(C)"]["value"], rel=1e-12)
    for key in ("F(M)", "F(C)", "faithfulness", "gap"):
        d = c[key]
        assert d["low"] <= d["value"] <= d["high"] or math.isclose(d["low"], d["high"])
        assert f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]" in page, key
    for k in c["completeness"]:
        s = k["score"]
        assert s["value"] == pytest.approx(abs(k["F(C∖K)"] - k["F(M∖K)"]), abs=1e-9)
        assert f"{s['value']:.3f} [{s['low']:.3f}, {s['high']:.3f}]" in page, k["K"]
    for m in c["minimality"]:
        s = m["score"]
        assert f"| {m['head']} | {m['class']} | {m['K']} | {s['value']:.3f} [{s['low']:.3f}, {s['high']:.3f}]" in page
