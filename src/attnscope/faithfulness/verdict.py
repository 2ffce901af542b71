"""What a faithfulness run shows, read from its numbers (never written in advance).

:func:`verdict` orders the methods (leave-one-out, the reference, and the random control apart) by
each measure — ρ with leave-one-out (higher: closer), AOPC comprehensiveness (higher: the tokens
ranked first carry more of the output), AOPC sufficiency (lower: they suffice alone) — and says for
each order whether the first method is ahead of the second by more than chance: the paired
difference over the texts both ran on, with its bootstrap 95 % interval (ahead when it excludes 0).
It also names the methods no better than chance (ρ's interval reaching 0; comprehensiveness not
above the random ranking's on the same texts), apart from those worse than chance (the interval
wholly below 0: a ranking against leave-one-out's, or tokens that remove less than random ones), and
how well the two main measures agree (Spearman's
ρ between the methods' mean ρ and mean AOPC comprehensiveness). :mod:`.report` writes it in words.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from . import stats
from .evaluate import RANDOM, REFERENCE, TextResult

MEASURES = ("rho", "aopc_comprehensiveness", "aopc_sufficiency")
#: +1: larger is better; −1: smaller is better
DIRECTION = {"rho": 1, "aopc_comprehensiveness": 1, "aopc_sufficiency": -1}


def per_text_value(measure: str, method: str) -> Callable[[TextResult], float]:
    if measure == "rho":
        return lambda r: r.rho[method]
    return lambda r: stats.eraser(r.full, r.deleted[method], r.kept[method])[measure]


def paired(results: Sequence[TextResult], measure: str, a: str, b: str, seed: int) -> dict:
    """a − b per text (the texts both ran on, both values finite), its mean and bootstrap interval."""
    fa, fb = per_text_value(measure, a), per_text_value(measure, b)
    diffs = []
    for r in results:
        if a in r.rho and b in r.rho:
            x, y = fa(r), fb(r)
            if math.isfinite(x) and math.isfinite(y):
                diffs.append(x - y)
    return stats.bootstrap(diffs, seed)


def order(summary: dict, names: Sequence[str], measure: str) -> list[str]:
    """``names`` from the best to the worst mean of ``measure`` (a nan mean last)."""
    def key(m: str) -> float:
        v = summary[m][measure]["mean"]
        return math.inf if math.isnan(v) else -DIRECTION[measure] * v
    return sorted(names, key=key)


def at_or_below(intervals: Sequence[dict], names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The names (in their order) whose interval reaches 0 — or has no bounds (nan) — and those
    whose interval lies wholly below 0; a name above 0 is in neither, nor one of a single text
    (no interval to judge: :func:`one_text`)."""
    reaches, below = [], []
    for m, b in zip(names, intervals):
        if b["n"] == 1:
            continue
        if b["high"] < 0:
            below.append(m)
        elif not b["low"] > 0:
            reaches.append(m)
    return reaches, below


def one_text(intervals: Sequence[dict], names: Sequence[str]) -> list[str]:
    """The names whose numbers come from one text: no interval, so neither above nor at chance."""
    return [m for m, b in zip(names, intervals) if b["n"] == 1]


def verdict(results: Sequence[TextResult], summary: dict, seed: int) -> dict:
    """The orders, the leaders' margins, the methods at chance and the measures' agreement (module
    docstring), as data: ``{"compared", "<measure>": {"order", "lead", "ahead"}, "chance_rho",
    "below_chance_rho", "not_above_random", "below_random", "agreement", "reference_rank"}``."""
    compared = [m for m in summary if m not in (REFERENCE, RANDOM)]
    out: dict = {"compared": compared}
    for measure in MEASURES:
        o = order(summary, compared, measure)
        entry: dict = {"order": o}
        if len(o) >= 2:
            # the lead of the first over the second, signed so that > 0 favours the first
            a, b = (o[0], o[1]) if DIRECTION[measure] > 0 else (o[1], o[0])
            lead = paired(results, measure, a, b, seed)
            entry["lead"] = lead
            entry["ahead"] = bool(lead["low"] > 0)
        out[measure] = entry
    rho = [summary[m]["rho"] for m in compared]
    out["chance_rho"], out["below_chance_rho"] = at_or_below(rho, compared)
    out["one_text_rho"] = one_text(rho, compared)
    if RANDOM in summary:
        vs_random = [paired(results, "aopc_comprehensiveness", m, RANDOM, seed) for m in compared]
        out["not_above_random"], out["below_random"] = at_or_below(vs_random, compared)
        out["one_text_random"] = one_text(vs_random, compared)
    means = [(summary[m]["rho"]["mean"], summary[m]["aopc_comprehensiveness"]["mean"]) for m in compared]
    means = [p for p in means if all(math.isfinite(v) for v in p)]
    out["agreement"] = stats.spearman([p[0] for p in means], [p[1] for p in means]) if len(means) >= 3 else None
    if REFERENCE in summary:
        everyone = [m for m in summary if m != RANDOM]
        out["reference_rank"] = {measure: order(summary, everyone, measure).index(REFERENCE) + 1
                                 for measure in MEASURES[1:]}
    return out
