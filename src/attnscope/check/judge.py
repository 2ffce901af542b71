"""Judging: one written number against the exact value and the learner's own earlier numbers
(:func:`judge`), a whole answers set along a chain (:func:`run`), and the :class:`Report`.

The rules are in :mod:`attnscope.check`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import InputError
from ..explain.numbers import Written
from .chain import Chain

VERDICTS = ("correct", "rounding", "carried", "wrong")


@dataclass
class Entry:
    """One judged number."""

    step: str
    row: int                 # 0-based
    col: int                 # 0-based
    row_label: str
    col_label: str
    written: str             # as the learner wrote it
    decimals: int
    value: float
    exact: float
    recomputed: float        # from the learner's own earlier numbers
    verdict: str             # correct | rounding | carried | wrong
    sources: list = field(default_factory=list)  # for carried/rounding: the learner's steps it follows from


@dataclass
class Report:
    """The result of a check. ``ok``: nothing wrong or carried. ``first_wrong``: (step, row label)."""

    source: str
    kind: str
    entries: list
    answered: list           # step names the learner answered, in chain order
    blanks: dict             # step -> number of empty entries
    problem: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(e.verdict in ("wrong", "carried") for e in self.entries)

    def by_verdict(self, verdict: str) -> list:
        return [e for e in self.entries if e.verdict == verdict]

    @property
    def first_wrong(self) -> Optional[tuple]:
        for step in self.answered:
            for e in self.entries:
                if e.step == step and e.verdict == "wrong":
                    return (e.step, e.row_label)
        return None

    def counts(self, step: Optional[str] = None) -> dict:
        out = {v: 0 for v in VERDICTS}
        for e in self.entries:
            if step is None or e.step == step:
                out[e.verdict] += 1
        return out

    def render(self, format: str = "rich", lang: str = "en") -> str:
        from .report import render
        return render(self, format=format, lang=lang)

    def to_dict(self) -> dict:
        from .report import to_dict
        return to_dict(self)


def close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * (1 + 1e-9) + 4e-16 * max(1.0, abs(a), abs(b))


def judge(w: Written, exact: float, recomputed: float, tainted: bool) -> str:
    """The verdict on one written number (see the module doc)."""
    v, half = w.value, 0.5 * w.unit
    if not (math.isfinite(v) and math.isfinite(exact)):
        if v == exact:
            return "correct"
        return "carried" if tainted and v == recomputed else "wrong"
    if close(v, exact, half):
        return "correct"
    if not math.isfinite(recomputed):
        return "wrong"
    if tainted:
        return "carried" if abs(v - recomputed) < w.unit * (1 - 1e-9) else "wrong"
    return "rounding" if close(v, recomputed, half) else "wrong"


def run(chain: Chain, answers: dict, source: str = "answers", problem: Optional[dict] = None) -> Report:
    """Judge ``answers`` ({link name: (rows, cols) object array of Written or None}) along ``chain``."""
    world: dict = {}
    taint: dict = {}
    origins: dict = {}   # step -> the learner's steps whose wrong numbers reach it
    upstream: dict = {}  # step -> the learner's answered steps that feed it
    entries, answered, blanks = [], [], {}
    for lk in chain.links:
        r = lk.recompute(world)
        deps = lk.depends(taint)
        tin = np.zeros(lk.exact.shape, dtype=bool)
        for arr in deps.values():
            tin |= arr
        given = answers.get(lk.name)
        fed = set().union(*(upstream[d] for d in deps))
        if given is None:
            world[lk.name], taint[lk.name] = r, tin
            origins[lk.name] = set().union(*(origins[d] for d, a in deps.items() if a.any()))
            upstream[lk.name] = fed
            continue
        upstream[lk.name] = {lk.name}
        answered.append(lk.name)
        wv, tv = r.copy(), tin.copy()
        bad_here = False
        n_rows, n_cols = given.shape
        blanks[lk.name] = 0
        for i in range(n_rows):
            for j in range(n_cols):
                w = given[i, j]
                if w is None:
                    blanks[lk.name] += 1
                    continue
                verdict = judge(w, float(lk.exact[i, j]), float(r[i, j]), bool(tin[i, j]))
                srcs: list = []
                if verdict == "carried":
                    srcs = sorted(set().union(*(origins[d] for d, a in deps.items() if a[i, j])), key=nearest_first(chain))
                elif verdict == "rounding":
                    srcs = sorted(fed, key=nearest_first(chain))
                entries.append(Entry(lk.name, i, j, lk.rows[i], lk.cols[j], w.text, w.decimals, w.value,
                                     float(lk.exact[i, j]), float(r[i, j]), verdict, srcs))
                wv[i, j] = w.value
                tv[i, j] = verdict in ("wrong", "carried")
                bad_here |= verdict in ("wrong", "carried")
        world[lk.name], taint[lk.name] = wv, tv
        origins[lk.name] = {lk.name} if bad_here else set().union(*(origins[d] for d, a in deps.items() if a.any()))
    if not entries:
        raise InputError(f"{source}: no numbers to check: every answer is empty")
    return Report(source, chain.kind, entries, answered, blanks, problem=problem or {})


def nearest_first(chain: Chain):
    names = chain.names()
    return lambda n: -names.index(n)  # nearest step first
