"""The faithfulness results (docs/results/faithfulness.md and each run's report.md under
docs/results/faithfulness-*/) say what the stored per-text numbers say: every mean in the tables
recomputed here from results.json's per_text lists (ρ; comprehensiveness and sufficiency as
f(x) − f(variant) averaged over the bins), every interval by a percentile bootstrap written here
(the texts resampled by NumPy's generator from the run's seed), every "best first" order of the
verdict sorted here, and the page quoting the reports' rows as they are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted((ROOT / "docs" / "results").glob("faithfulness-*/results.json"))
PAGE = ROOT / "docs" / "results" / "faithfulness.md"
ROW = re.compile(r"^\| `(\w+)` \| (\d+) \| (.+?) \| (.+?) \| (.+?) \| (.+?) \|$", re.M)
CELL = re.compile(r"^(-?\d+\.\d{3}) \[(-?\d+\.\d{3}), (-?\d+\.\d{3})\]$")


def per_method(res: dict, name: str) -> dict:
    """Per-text ρ, AOPC comprehensiveness and sufficiency of ``name`` on the texts it ran on."""
    pt = res["per_text"]
    m = pt["methods"][name]
    ran = [i for i, d in enumerate(m["deleted"]) if d is not None]
    full = np.array(pt["full"], dtype=float)
    return {
        "rho": [m["rho"][i] for i in ran if m["rho"][i] is not None],
        "aopc_comprehensiveness": [float(np.mean([full[i] - x for x in m["deleted"][i]])) for i in ran],
        "aopc_sufficiency": [float(np.mean([full[i] - x for x in m["kept"][i]])) for i in ran],
        "texts": len(ran),
    }


def interval(values, seed: int, resamples: int) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    means = np.array([v[row].sum() / len(v) for row in idx])
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def shown(x: float) -> str:
    return f"{x:.3f}"


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_report_tables_are_the_per_text_numbers(path):
    res = json.loads(path.read_text(encoding="utf-8"))
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    rows = {m[0]: m for m in ROW.findall(report)}
    assert set(rows) == set(res["methods"])
    for name in res["methods"]:
        got = per_method(res, name)
        row = rows[name]
        assert int(row[1]) == got["texts"]
        for col, measure in ((2, "rho"), (3, "aopc_comprehensiveness"), (4, "aopc_sufficiency")):
            if name == "leave_one_out" and measure == "rho":
                assert row[col] == "—"
                continue
            cell = CELL.match(row[col])
            assert cell, row[col]
            want = interval(got[measure], res["seed"], res["resamples"])
            assert cell.groups() == tuple(shown(x) for x in want), (name, measure)


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_verdict_orders_are_sorted_from_the_numbers(path):
    res = json.loads(path.read_text(encoding="utf-8"))
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    compared = [m for m in res["methods"] if m not in ("leave_one_out", "random")]
    for measure, label, sign in (("rho", "ρ with leave-one-out", -1), ("aopc_comprehensiveness", "AOPC comprehensiveness", -1),
                                 ("aopc_sufficiency", "AOPC sufficiency", 1)):
        means = {m: float(np.mean(per_method(res, m)[measure])) for m in compared}
        want = sorted(compared, key=lambda m: sign * means[m])
        line = re.search(rf"^- \*\*{re.escape(label)}\*\* \([^)]*\), best first: (.*?)\.(?: |$)", report, re.M)
        assert line, label
        assert re.findall(r"`(\w+)`", line.group(1)) == want


def test_the_page_quotes_the_reports():
    page = PAGE.read_text(encoding="utf-8")
    for path in RUNS:
        report = (path.parent / "report.md").read_text(encoding="utf-8")
        res = json.loads(path.read_text(encoding="utf-8"))
        assert res["command"] in page, f"the page does not give the command of {path.parent.name}"
        for line in ROW.finditer(report):
            assert line.group(0) in page, line.group(0)


def named(report: str, start: str) -> list[str]:
    """The methods of the verdict line that starts with ``start`` ([] when there is no such line)."""
    line = re.search(rf"^- {re.escape(start)}.*?: (`.*)\.$", report, re.M)
    return re.findall(r"`(\w+)`", line.group(1)) if line else []


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_verdict_names_the_methods_at_and_below_chance(path):
    """ρ's interval reaching 0 is "no better than chance", wholly below 0 "worse than chance"; the
    same against the random ranking's comprehensiveness (paired on the texts both ran on)."""
    res = json.loads(path.read_text(encoding="utf-8"))
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    compared = [m for m in res["methods"] if m not in ("leave_one_out", "random")]
    seed, n = res["seed"], res["resamples"]
    rho = {m: interval(per_method(res, m)["rho"], seed, n) for m in compared}
    pt, full = res["per_text"], res["per_text"]["full"]

    def comp(m: str, i: int) -> float:
        return float(np.mean([full[i] - x for x in pt["methods"][m]["deleted"][i]]))
    rand = pt["methods"]["random"]["deleted"]
    vs_random = {m: interval([comp(m, i) - comp("random", i) for i, d in enumerate(pt["methods"][m]["deleted"])
                              if d is not None and rand[i] is not None], seed, n) for m in compared}
    for at, below, want in (("No better than chance by ρ", "Worse than chance by ρ", rho),
                            ("Comprehensiveness not above the random", "Comprehensiveness below the random", vs_random)):
        assert named(report, at) == [m for m in compared if want[m][1] <= 0 <= want[m][2]], at
        assert named(report, below) == [m for m in compared if want[m][2] < 0], below
