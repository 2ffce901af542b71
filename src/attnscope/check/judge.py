"""Judging: one written number against the exact value and the learner's own earlier numbers
(:func:`judge`), a whole answers set along a chain (:func:`run`), and the :class:`Report`.

The rules are in :mod:`attnscope.check`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext
from typing import Optional, Union

import numpy as np

from .. import exact as E
from ..explain.numbers import Written
from .chain import Chain, Link

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
    exact_value: Optional[Decimal] = None        # the exact value (for the report's digits)
    number: Optional[Written] = None             # the written number itself
    convention: Optional[str] = None             # exp and sums of a row with a large score: "shifted" | "plain"


@dataclass
class Report:
    """The result of a check. ``ok``: nothing wrong or carried, and no entry left empty in a step the
    learner answered (a blank counts as missing, never as right). ``first_wrong``: (step, row label)."""

    source: str
    kind: str
    entries: list
    answered: list           # step names the learner answered, in chain order
    blanks: dict             # step -> number of empty entries
    problem: dict = field(default_factory=dict)
    conventions: list = field(default_factory=list)  # rows whose exponentials could be written two ways

    @property
    def ok(self) -> bool:
        return self.missing == 0 and not any(e.verdict in ("wrong", "carried") for e in self.entries)

    @property
    def missing(self) -> int:
        """Entries left empty (``null``, ``~``, a blank row) in the steps the learner answered."""
        return sum(self.blanks.values())

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


def judge(w: Written, exact, recomputed, tainted: bool, slack: Union[float, Decimal] = 0.0) -> str:
    """The verdict on one written number (see the module doc of :mod:`attnscope.check`).

    ``exact``: the true value; ``recomputed``: what follows from the learner's own earlier numbers;
    ``tainted``: one of those numbers is wrong or carried. ``slack``: extra room for "correct" (a
    model's float32 error). Comparisons are exact (Decimal; a float is read by its shortest form):
    within half a unit of the last written digit, a value exactly half-way either way, nothing
    else is rounded in the learner's favour — a carried value too must be what their own numbers
    give, to half a unit.
    """
    v, x, r = w.exact, E.dec(exact), E.dec(recomputed)
    if not (v.is_finite() and x.is_finite()):
        if v == x:
            return "correct"
        return "carried" if tainted and v == r else "wrong"
    half = Decimal(5).scaleb(-w.decimals - 1)
    with localcontext(E.CTX):
        if abs(v - x) <= half + E.dec_binary(slack):
            return "correct"
        if not r.is_finite():
            return "wrong"
        follows = abs(v - r) <= half
    if tainted:
        return "carried" if follows else "wrong"
    return "rounding" if follows else "wrong"


#: The ways of writing a row's exponentials (and their sum): e^(s' − m) (m the row's largest score;
#: what explain shows when m is large, the stable softmax elsewhere) and e^s' itself.
CONVENTIONS = ("shifted", "plain")


def _row_factors(chain: Chain, world: dict, lk: Optional[Link] = None) -> dict:
    """row → ({way: (factor of the exact values, of the learner's own)}, m), the way explain shows
    first: the factors from the chain's exponentials to each way. A row whose largest score m is
    large is shown as e^(s' − m) ("shifted"; "plain" is e^s' = e^m · e^(s' − m)); any other row as
    e^s' ("plain"; "shifted" is e^(s' − m) = e^-m · e^s', the stable softmax). m_own is the learner's
    largest scaled score, when they wrote the scaled scores. A link of one head of a multi-head
    chain brings its own shift and scaled link (``Link.shift``, ``Link.scaled``)."""
    shift = chain.shift if lk is None or lk.shift is None else lk.shift
    if shift is None:
        return {}
    name = "scaled" if lk is None else lk.scaled
    scaled = world.get(name)
    own = E.exp_shift(scaled) if scaled is not None else shift
    one = (E.ONE, E.ONE)
    out = {}
    for i, (m, mw) in enumerate(zip(shift, own)):
        if m != 0 or mw != 0:
            out[i] = ({"shifted": one, "plain": (E.CTX.exp(m), E.CTX.exp(mw))}, m)
            continue
        top, top_own = (max((x for x in r[i] if x.is_finite()), default=E.ZERO)
                        for r in (chain.link(name).exact, scaled if scaled is not None else chain.link(name).exact))
        if top != 0 or top_own != 0:
            out[i] = ({"plain": one, "shifted": (E.CTX.exp(-top), E.CTX.exp(-top_own))}, top)
    return out


def _row_verdicts(lk: Link, i: int, given: np.ndarray, r: np.ndarray, tin: np.ndarray, factor) -> list:
    """[(column, verdict, exact, recomputed)] of row i's written entries, with the exact and
    recomputed values multiplied by ``factor`` = (exact's, the learner's) — (1, 1) for e^(s' − m)."""
    slack = lk.slack if lk.slack is not None else np.zeros(lk.exact.shape)
    out = []
    with localcontext(E.CTX):
        for j, w in enumerate(given[i]):
            if w is not None:
                x, rr = E.dec(lk.exact[i, j]) * factor[0], E.dec(r[i, j]) * factor[1]
                room = E.dec_binary(float(slack[i, j])) * factor[0]  # Decimal: e^1000 is no float64
                out.append((j, judge(w, x, rr, bool(tin[i, j]), room), x, rr))
    return out


def run(chain: Chain, answers: dict, source: str = "answers", problem: Optional[dict] = None) -> Report:
    """Judge ``answers`` ({link name: (rows, cols) object array of Written or None}) along ``chain``."""
    world: dict = {}
    taint: dict = {}
    origins: dict = {}   # step -> the learner's steps whose wrong numbers reach it
    upstream: dict = {}  # step -> the learner's answered steps that feed it
    conv: dict = {}      # (scaled link, row) -> (convention, the step it was read from, m)
    entries, answered, blanks = [], [], {}
    for lk in chain.links:
        try:
            r = lk.recompute(world)
        except (InvalidOperation, DivisionByZero):  # from a learner's ±∞ (∞/∞): nothing follows from their numbers
            r = np.full(lk.exact.shape, Decimal("NaN"), dtype=object)
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
        exact_link = lk.exact.dtype == object  # Decimal values (a link of another kind keeps float64)
        wv, tv = (np.array(r, dtype=object) if exact_link else np.array(r, dtype=np.float64)), tin.copy()
        bad_here = False
        blanks[lk.name] = int(sum(w is None for w in given.ravel()))
        factors = _row_factors(chain, world, lk) if lk.by_shift else {}
        for i in range(given.shape[0]):
            factor, m = factors.get(i, ({"shifted": (E.ONE, E.ONE)}, None))
            shown = next(iter(factor))  # the way explain shows this row
            c = shown
            if i in factors and any(w is not None for w in given[i]):
                if (lk.scaled, i) not in conv:  # the way under which more of the row holds up (a tie: explain's)
                    held = {k: sum(v in ("correct", "rounding") for _, v, _, _ in _row_verdicts(lk, i, given, r, tin, f))
                            for k, f in factor.items()}
                    conv[(lk.scaled, i)] = (max(factor, key=lambda k: held[k]), lk.name, m, shown)
                c = conv[(lk.scaled, i)][0]
            named = i in factors and (shown == "shifted" or c != shown)  # a small row's e^s' goes without saying
            for j, verdict, x, rr in _row_verdicts(lk, i, given, r, tin, factor[c]):
                w = given[i, j]
                srcs: list = []
                if verdict == "carried":
                    srcs = sorted(set().union(*(origins[d] for d, a in deps.items() if a[i, j])), key=nearest_first(chain))
                elif verdict == "rounding":
                    srcs = sorted(fed, key=nearest_first(chain))
                entries.append(Entry(lk.name, i, j, lk.rows[i], lk.cols[j], w.text, w.decimals, w.value, float(x),
                                     float(rr), verdict, srcs, exact_value=x, number=w,
                                     convention=c if named else None))
                with localcontext(E.CTX):
                    own = w.exact / factor[c][1]  # kept the way the chain recomputes it
                wv[i, j] = own if exact_link else float(own)
                tv[i, j] = verdict in ("wrong", "carried")
                bad_here |= verdict in ("wrong", "carried")
        world[lk.name], taint[lk.name] = wv, tv
        origins[lk.name] = {lk.name} if bad_here else set().union(*(origins[d] for d, a in deps.items() if a.any()))
    conventions = [{"step": step, "row": i, "row_label": chain.link(step).rows[i], "convention": c, "m": m, "shown": shown}
                   for (_, i), (c, step, m, shown) in sorted(conv.items()) if shown == "shifted" or c != shown]
    return Report(source, chain.kind, entries, answered, blanks, problem=problem or {}, conventions=conventions)


def nearest_first(chain: Chain):
    names = chain.names()
    return lambda n: -names.index(n)  # nearest step first
