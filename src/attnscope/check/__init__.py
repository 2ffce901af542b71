"""Check a learner's hand calculation of attention, step by step.

    >>> import attnscope
    >>> report = attnscope.check("answers.yaml")       # or check(example="three-tokens-article")
    >>> report.ok, report.first_wrong
    >>> print(report.render("markdown", lang="zh"))

An answers file has two sections: ``problem`` (what was calculated) and ``answers`` (the learner's
numbers). The problem is a built-in example (``example: three-tokens``), a toy input (X, W_Q,
W_K, W_V, …; see :class:`attnscope.explain.ToyProblem`), given raw scores of one row (``scores``,
``tokens``, ``d_k``, optional ``values``) or one row of a real model (``text``, ``layer``,
``head``, ``token`` or ``position``, optional ``model`` folder), or an attention rollout row
(``text``, ``token``, ``attribution: rollout``; its steps ``mixed[l]``, ``product[l]``, ``rollout``:
:mod:`.rollout`). Answers may contain any of
Q, K, V, scores, scaled, exp, sums, weights, output (and projected with W_O); for one row: scores,
scaled, exp, sum, weights, output (its first n dimensions). Entries or rows left empty (``null``,
``~``, a blank line) are not judged, and they count as **missing**, never as right: a report with a
missing entry is not ``ok`` (exit status 1) and says how many there are. Leave out a step's key
altogether to skip that step.

How an entry is judged (``d`` = the number of decimals the learner wrote it with, ``u = 10**-d``;
``1.7705e44`` has d = −40, i.e. five significant digits):

* **correct** — within u/2 of the exact value, i.e. it is the exact value rounded to d decimals
  (half-up; a value exactly half-way may be rounded either way). ``0.71`` is a correct √2/2,
  ``0.707`` too, ``0.7`` too, ``0.70`` is not.
* **rounding** (accepted) — not correct, but within u/2 of what follows from the learner's own
  earlier numbers, which are all correct at their own precision: the learner computed right from
  rounded inputs (``exp`` written with 2 decimals, their sum a little off). Reported as a hint to
  keep more decimals.
* **carried** — wrong, but within u/2 of what follows from the learner's own earlier numbers, at
  least one of which is wrong: the earlier mistake explains it (the same half unit as rounding;
  a truncated 0.305 where their own numbers give 0.3058 is a new mistake, not carried).
* **wrong** — none of the above: a new mistake. The first step that has one is "where the
  calculation went wrong".

Judging is exact: the exact values come from :mod:`attnscope.exact` (a toy's linear steps exactly,
exp and the softmax to 100 digits), a written number is read as the decimal it is, and what follows
from the learner's numbers is recomputed the same way. A number beyond float64's range (``1e400``)
is an error; ``inf``/``-inf`` stand for masked scores.

Exponentials: where a row's largest scaled score m is beyond ±50, the worked calculation shows
e^(s' − m); e^s' itself (1.7705e44 for e^101.885) is right as well. Elsewhere it shows e^s', and
e^(s' − m) (the stable softmax, m ≠ 0) is right as well. Each such row is judged in the
way the learner wrote it (the one under which more of the row holds up, from the first of exp or
the sums they wrote), and the report says which it was.

Rows, columns and entries are counted from 0, as in ``explain``'s tables, the trace and
``--position`` (the report says so; its JSON has ``index_base: 0``). An answers file names no
indices: its rows are lists in order; a problem's ``position`` counts from 0.

Numbers are read with the decimals as written in the file (``0.710`` has 3). Python floats passed
to :func:`check` are read by their shortest form (``0.40`` is the float 0.4: 1 decimal), ints as
integers (``1``: 0 decimals), NumPy arrays as the lists they hold; pass strings (``"0.40"``) to keep
trailing zeros.

Exit status of ``attnscope check``: 0 when nothing is wrong, carried or missing, 1 otherwise (2 for
a malformed file, as every attnscope error).
"""

from __future__ import annotations

from .answers import ALIASES, parse_answers
from .chain import Chain, Link, row_chain, toy_chain
from .judge import VERDICTS, Entry, Report, judge, run
from .problem import EXAMPLES, check, example_path, problem_chain

__all__ = ["check", "Report", "Entry", "judge", "run", "EXAMPLES", "VERDICTS", "ALIASES", "parse_answers",
           "problem_chain", "example_path", "Chain", "Link", "row_chain", "toy_chain"]
