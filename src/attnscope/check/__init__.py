"""Check a learner's hand calculation of attention, step by step.

    >>> import attnscope
    >>> report = attnscope.check("answers.yaml")       # or check(example="three-tokens-article")
    >>> report.ok, report.first_wrong
    >>> print(report.render("markdown", lang="zh"))

An answers file has two sections: ``problem`` (what was calculated) and ``answers`` (the learner's
numbers). The problem is a built-in example (``example: three-tokens``), a toy input (X, W_Q,
W_K, W_V, …; see :class:`attnscope.explain.ToyProblem`), given raw scores of one row (``scores``,
``tokens``, ``d_k``, optional ``values``) or one row of a real model (``text``, ``layer``,
``head``, ``token`` or ``position``, optional ``model`` folder). Answers may contain any of
Q, K, V, scores, scaled, exp, sums, weights, output (and projected with W_O); for one row: scores,
scaled, exp, sum, weights, output (its first n dimensions). Entries or rows left empty (``null``,
``~``) are not judged.

How an entry is judged (``d`` = the number of decimals the learner wrote it with, ``u = 10**-d``):

* **correct** — within u/2 of the exact value, i.e. it is the exact value rounded to d decimals
  (half-up; a value exactly half-way may be rounded either way). ``0.71`` is a correct √2/2,
  ``0.707`` too, ``0.7`` too, ``0.70`` is not.
* **rounding** (accepted) — not correct, but within u/2 of what follows from the learner's own
  earlier numbers, which are all correct at their own precision: the learner computed right from
  rounded inputs (``exp`` written with 2 decimals, their sum a little off). Reported as a hint to
  keep more decimals.
* **carried** — wrong, but within one unit u of what follows from the learner's own earlier numbers,
  at least one of which is wrong: the mistake was made earlier; this entry repeats it.
* **wrong** — none of the above: a new mistake. The first step that has one is "where the
  calculation went wrong".

Judging happens in float64: digits past its ~16 significant ones cannot be told apart, so an answer
written with 29 decimals is judged at float64's precision (and shown against at most 17 decimals).
A number beyond float64's range (``1e400``) is an error; ``inf``/``-inf`` stand for masked scores.

Numbers are read with the decimals as written in the file (``0.710`` has 3). Python floats passed
to :func:`check` are read by their shortest form (``0.40`` is the float 0.4: 1 decimal); pass
strings (``"0.40"``) to keep trailing zeros.

Exit status of ``attnscope check``: 0 when nothing is wrong or carried, 1 otherwise (2 for a
malformed file, as every attnscope error).
"""

from __future__ import annotations

import sys as _sys
import types as _types

import math
import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Optional

import numpy as np

from ..errors import InputError
from ..explain import inputs
from ..explain.numbers import Written, counted, parse_written
from .chain import Chain, Link, row_chain, toy_chain

VERDICTS = ("correct", "rounding", "carried", "wrong")

#: Built-in answers files: the articles' own numbers.
EXAMPLES = {
    "three-tokens-article": "three_tokens_article.yaml",
    "xi-row-article": "xi_row_article.yaml",
}

#: Spellings accepted for the answer keys.
ALIASES = {
    "q": "Q", "k": "K", "v": "V",
    "scores": "scores", "score": "scores", "raw": "scores", "qkt": "scores", "s": "scores",
    "scaled": "scaled", "scaledscores": "scaled",
    "exp": "exp", "exps": "exp", "e": "exp", "exponentials": "exp",
    "sums": "sums", "sum": "sum", "rowsums": "sums",
    "weights": "weights", "softmax": "weights", "probabilities": "weights", "probs": "weights", "a": "weights",
    "output": "output", "outputs": "output", "out": "output", "o": "output", "z": "output",
    "projected": "projected", "y": "projected",
}


# ----------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------

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

    def render(self, format: str = "rich", lang: str = "en", decimals: Optional[int] = None) -> str:
        from .report import render
        return render(self, format=format, lang=lang)

    def to_dict(self) -> dict:
        from .report import to_dict
        return to_dict(self)


# ----------------------------------------------------------------------------------------------
# judging
# ----------------------------------------------------------------------------------------------

def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * (1 + 1e-9) + 4e-16 * max(1.0, abs(a), abs(b))


def judge(w: Written, exact: float, recomputed: float, tainted: bool) -> str:
    """The verdict on one written number (see the module doc)."""
    v, half = w.value, 0.5 * w.unit
    if not (math.isfinite(v) and math.isfinite(exact)):
        if v == exact:
            return "correct"
        return "carried" if tainted and v == recomputed else "wrong"
    if _close(v, exact, half):
        return "correct"
    if not math.isfinite(recomputed):
        return "wrong"
    if tainted:
        return "carried" if abs(v - recomputed) < w.unit * (1 - 1e-9) else "wrong"
    return "rounding" if _close(v, recomputed, half) else "wrong"


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
                    srcs = sorted(set().union(*(origins[d] for d, a in deps.items() if a[i, j])), key=_order(chain))
                elif verdict == "rounding":
                    srcs = sorted(fed, key=_order(chain))
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


def _order(chain: Chain):
    names = chain.names()
    return lambda n: -names.index(n)  # nearest step first


# ----------------------------------------------------------------------------------------------
# reading answers
# ----------------------------------------------------------------------------------------------

def _written(x, where: str):
    """A Written (or None for a blank) from a parsed value."""
    x = inputs.number(x, where, allow_none=True, allow_inf=True)
    if x is None or isinstance(x, Written):
        return x
    return parse_written(repr(float(x)))


def parse_answers(raw: Any, chain: Chain, source: str) -> dict:
    """The ``answers`` mapping → {link name: object array of Written/None}, shapes checked."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}, key answers: expected a mapping such as 'weights: [[…], …]', "
                         f"got {inputs._kind(raw)}")
    names = chain.names()
    out = {}
    for key, value in raw.items():
        canon = ALIASES.get(str(key).lower().replace("_", "").replace("-", "").replace(" ", ""), None)
        if canon == "sums" and "sums" not in names and "sum" in names:
            canon = "sum"
        if canon == "sum" and "sum" not in names and "sums" in names:
            canon = "sums"
        if canon not in names:
            raise InputError(f"{source}, answers: unknown key {key!r}; this problem's steps are {', '.join(names)}")
        if canon in out:
            raise InputError(f"{source}, answers: {key!r} given twice (as {canon})")
        where = f"{source}, key {key}"
        out[canon] = _parse_link(value, chain.link(canon), where)
    if not out:
        raise InputError(f"{source}, key answers: empty; write at least one of {', '.join(names)}")
    return out


def _parse_link(value, lk: Link, where: str) -> np.ndarray:
    n_rows, n_cols = lk.exact.shape
    if value is None:
        return np.full((n_rows, n_cols), None, dtype=object)
    if lk.vector == "row":
        if n_cols == 1 and not isinstance(value, (list, tuple)):
            value = [value]
        cells = inputs.vector(value, where, allow_none=True, allow_inf=True, raw=True,
                              size=None if lk.max_cols else n_cols, max_size=n_cols if lk.max_cols else None)
        arr = np.array([[_written(c, f"{where}, entry {j + 1}") for j, c in enumerate(cells)]], dtype=object)
        return arr
    if lk.vector == "col":
        cells = inputs.vector(value, where, allow_none=True, allow_inf=True, raw=True, size=n_rows)
        return np.array([[_written(c, f"{where}, row {i + 1}")] for i, c in enumerate(cells)], dtype=object)
    if not isinstance(value, (list, tuple)):
        raise InputError(f"{where}: expected {counted(n_rows, 'row')} of {counted(n_cols, 'number')}, got {inputs._kind(value)}")
    if len(value) != n_rows:
        raise InputError(f"{where}: expected {counted(n_rows, 'row')} (one per token), got {len(value)}")
    rows = [[None] * n_cols if r is None else r for r in value]
    for i, r in enumerate(rows):
        if not isinstance(r, (list, tuple)):
            raise InputError(f"{where}, row {i + 1}: expected a row of {counted(n_cols, 'number')}, got {inputs._kind(r)}")
        if len(r) != n_cols:
            raise InputError(f"{where}, row {i + 1}: expected {counted(n_cols, 'number')}, got {len(r)}")
    return np.array([[_written(c, f"{where}, row {i + 1}, column {j + 1}") for j, c in enumerate(r)]
                     for i, r in enumerate(rows)], dtype=object)


def problem_chain(spec: Any, source: str, answers_raw: Optional[dict] = None) -> tuple:
    """(Chain, description dict) of the ``problem`` section."""
    from ..explain import toy_problem
    from ..explain.toy import ToyProblem
    where = f"{source}, key problem"
    if not isinstance(spec, dict):
        raise InputError(f"{where}: expected a mapping (example: three-tokens, or X/W_Q/W_K/W_V, or scores, "
                         f"or text/layer/head/token), got {inputs._kind(spec)}")
    spec = inputs.plain(spec)
    if "example" in spec:
        extra = [k for k in spec if k != "example"]
        if extra:
            raise InputError(f"{where}: 'example' stands alone; remove {', '.join(map(repr, extra))}")
        p = toy_problem(example=spec["example"])
        return toy_chain(p), {"kind": "toy", "example": spec["example"], "tokens": p.tokens}
    if "text" in spec:
        from ..explain.row import model_row_data
        allowed_keys = {"text", "model", "layer", "head", "token", "position"}
        extra = [k for k in spec if k not in allowed_keys]
        if extra:
            raise InputError(f"{where}: unknown key {extra[0]!r}; a model row has text, layer, head, token "
                             "or position, and optionally model")
        from ..errors import AttnscopeError
        try:
            d = model_row_data(spec["text"], spec.get("model"), spec.get("layer", 0), spec.get("head", 0),
                               spec.get("token"), spec.get("position"))
        except AttnscopeError as e:
            raise type(e)(f"{where}: {e}") from None
        desc = {"kind": "model", "model": d["model"].name, "text": spec["text"], "layer": d["layer"],
                "head": d["head"], "position": d["qpos"], "token": d["tokens"][d["qpos"]], "tokens": d["tokens"]}
        return row_chain(d["raw"], d["tokens"], d["factor"], d["allowed"], d["V"], meta=desc, source=where), desc
    if "scores" in spec:
        import math as _m
        allowed_keys = {"scores", "tokens", "d_k", "dk", "values", "V", "query", "factor"}
        extra = [k for k in spec if k not in allowed_keys]
        if extra:
            raise InputError(f"{where}: unknown key {extra[0]!r}; a row of given scores has scores, tokens, "
                             "d_k (or factor), and optionally values and query")
        raw = inputs.vector(spec["scores"], f"{where}.scores")
        S = len(raw)
        toks = inputs.labels(spec["tokens"], f"{where}.tokens", S) if "tokens" in spec else [f"k{j + 1}" for j in range(S)]
        dk = spec.get("d_k", spec.get("dk"))
        if dk is not None:
            if isinstance(dk, bool) or not isinstance(dk, (int, float)) or dk <= 0 or float(dk) != int(dk):
                raise InputError(f"{where}.d_k: expected a positive integer, got {dk!r}")
            factor = 1 / _m.sqrt(int(dk))
        elif "factor" in spec:
            factor = float(inputs.number(spec["factor"], f"{where}.factor"))
        else:
            raise InputError(f"{where}: give d_k (the scores are divided by √d_k) or factor")
        V = None
        vkey = "values" if "values" in spec else ("V" if "V" in spec else None)
        if vkey:
            V = inputs.matrix(spec[vkey], f"{where}.{vkey}", rows=S)
        desc = {"kind": "scores", "tokens": toks, "d_k": dk, "scores": raw.tolist()}
        return row_chain(raw, toks, factor, None, V, meta=desc, source=where), desc
    p = ToyProblem.from_mapping(spec, source=f"{source}, problem")
    return toy_chain(p), {"kind": "toy", "tokens": p.tokens, "name": p.name}


def check(answers: Any = None, problem: Any = None, *, example: Optional[str] = None) -> Report:
    """Judge a learner's numbers.

    Args:
        answers: path of a YAML/JSON/TOML answers file (with ``problem`` and ``answers``), or a
            mapping — either the whole file ({"problem": …, "answers": …}) or just the answers
            (then give ``problem``).
        problem: the problem mapping when ``answers`` holds only the answers.
        example: a built-in answers file ("three-tokens-article", "xi-row-article").
    Returns:
        :class:`Report`.
    """
    if example is not None:
        if answers is not None:
            raise InputError("give an answers file or an example, not both")
        if example not in EXAMPLES:
            raise InputError(f"unknown example {example!r}; choose one of {', '.join(sorted(EXAMPLES))}")
        answers = example_path(example)
    source = "answers"
    if isinstance(answers, (str, os.PathLike)):
        source = str(answers)
        data = inputs.load_mapping(source, keep_text=True)
    elif isinstance(answers, dict):
        data = answers if problem is None else {"problem": problem, "answers": answers}
    else:
        raise InputError(f"answers must be a file path or a mapping, got {type(answers).__name__}")
    if problem is not None and isinstance(answers, (str, os.PathLike)):
        data = dict(data, problem=problem)
    for key in ("problem", "answers"):
        if key not in data:
            raise InputError(f"{source}: missing key {key!r}; an answers file has 'problem' (what is calculated) "
                             f"and 'answers' (your numbers)")
    extra = [k for k in data if k not in ("problem", "answers", "title", "note", "notes", "source", "lang")]
    if extra:
        raise InputError(f"{source}: unknown top-level key {extra[0]!r}; expected problem and answers")
    chain, desc = problem_chain(data["problem"], source)
    given = parse_answers(data["answers"], chain, source)
    return run(chain, given, source=source if example is None else f"example {example}", problem=desc)


def example_path(name: str) -> str:
    return str(resources.files("attnscope") / "data" / EXAMPLES[name])


__all__ = ["check", "Report", "Entry", "judge", "run", "EXAMPLES", "VERDICTS", "parse_answers",
           "problem_chain", "example_path"]


class _Callable(_types.ModuleType):
    """Lets the package be called: ``attnscope.check(...)`` is :func:`check`, while
    ``attnscope.check.<submodule>`` imports keep working."""

    def __call__(self, *args, **kwargs):
        return check(*args, **kwargs)


_sys.modules[__name__].__class__ = _Callable
