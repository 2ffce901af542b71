"""Fresh hand-calculation exercises in the style of the three-token article.

    >>> from attnscope.exercise import make_exercise
    >>> ex = make_exercise(tokens=3, dim=2, seed=7)
    >>> print(ex.problem().render("markdown"))      # the problem and the questions
    >>> open("answers.yaml", "w").write(ex.answers_file())   # blank answers, for `attnscope check`
    >>> print(ex.solution().render("markdown"))     # the worked solution and the answers

Inputs are small integers (``style="int"``) or one-decimal numbers (``style="decimal"``), drawn
with a seeded generator and redrawn until the arithmetic stays humane: Q, K, V entries within ±6,
raw scores within ±9, no query row of zeros, no row of equal scores (softmax would be uniform), and
distinct tokens. The same seed gives the same numbers in every language; only the labels change.

The three conceptual questions are the first article's quiz (why ÷√d_k; the two operations of
softmax; whose information a token's new vector holds); their answers quote this exercise's own
numbers.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from . import reference as R
from .errors import InputError
from .explain.doc import Formula, Matrix, Para, Step, Sym, VecParam, Worked, t
from .explain.numbers import percent, short
from .explain.places import distinct_labels
from .explain.toy import compute, explain_toy
from .explain.toy_input import ToyProblem
from .i18n import error

TOKENS = {
    "en": ["I", "love", "you", "cats", "eat", "fish", "we", "run"],
    "zh": ["我", "爱", "你", "猫", "吃", "鱼", "我们", "跑"],
}

STEPS = ("Q", "K", "V", "scores", "scaled", "exp", "sums", "weights", "output")

MAX_TRIES = 10000


@dataclass
class Exercise:
    problem_input: ToyProblem
    seed: int
    style: str
    lang: str

    # ------------------------------------------------------------------------------------------
    @property
    def values(self) -> dict:
        return compute(self.problem_input)

    def problem(self) -> Worked:
        """The problem: inputs, the tasks, the questions."""
        p = self.problem_input
        assert p.X is not None  # an exercise gives X and the weights
        L, d = p.L, p.d_k
        intro = [Para(t("ex.intro", L=L, d=d)),
                 Matrix(Sym("X", "X"), p.X, rows=p.tokens, caption=t("toy.x_caption", d=d), exact=True)]
        for k in ("W_Q", "W_K", "W_V"):
            intro.append(Matrix(Sym(k, k), getattr(p, k), exact=True))
        tasks = [Para(t(f"ex.task_{i}")) for i in range(1, 7)]
        tasks.append(Para(t("ex.decimals"), style="note"))
        questions = [Para(t("ex.q1")), Para(t("ex.q2")), Para(t("ex.q3", tok=p.tokens[self._q3_row()]))]
        steps = [Step("tasks", t("ex.step_tasks"), tasks), Step("questions", t("ex.step_questions"), questions)]
        return Worked("exercise", t("ex.title", seed=self.seed, L=L, d=d), intro, steps,
                      values={}, meta={"seed": self.seed, "tokens": L, "dim": d, "style": self.style})

    def solution(self) -> Worked:
        """The worked solution (every step of ``explain``) and the answers to the questions."""
        w = explain_toy(self.problem_input)
        w.title = t("ex.solution_title", seed=self.seed)
        w.intro = self.problem().intro + [b for b in w.intro if isinstance(b, Formula)]
        w.steps.append(Step("answers", t("ex.step_answers"), self._answers()))
        w.meta = dict(w.meta, seed=self.seed, style=self.style)
        return w

    def answers_file(self) -> str:
        """A blank answers file (YAML) in the format ``attnscope check`` reads."""
        p, v = self.problem_input, self.values
        lines = [f"# {_plain(t('ex.file_comment1', seed=self.seed), self.lang)}",
                 f"# {_plain(t('ex.file_comment2'), self.lang)}",
                 "problem:",
                 f"  name: exercise-{self.seed}",
                 f"  tokens: [{', '.join(json.dumps(s, ensure_ascii=False) for s in p.tokens)}]"]  # JSON strings are YAML
        for k in ("X", "W_Q", "W_K", "W_V"):
            lines.append(f"  {k}: {_flow(getattr(p, k))}")
        lines.append("answers:")
        for name in STEPS:  # every step (L, n), but the sums (L,)
            row = "[" + ", ".join("~" for _ in range(v[name].shape[-1])) + "]"
            blank = row if v[name].ndim == 1 else "[" + ", ".join(row for _ in range(v[name].shape[0])) + "]"
            lines.append(f"  {name}: {blank}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------------------------------
    def _q3_row(self) -> int:
        """The token whose output takes most from another token (the article asked about 喜)."""
        w = self.values["weights"]
        off = w - np.diag(np.diag(w))
        return int(np.unravel_index(np.argmax(off), off.shape)[0])

    def _answers(self) -> list:
        p, v = self.problem_input, self.values
        assert p.X is not None  # an exercise gives X and the weights
        d = p.d_k
        # 1: the row whose softmax the scale changes most
        raw_soft = R.softmax(v["scores"])  # each row unscaled
        i = int(np.argmax(np.abs(raw_soft - v["weights"]).max(1)))
        from .explain.scaling import sampled_variance
        var64, _ = sampled_variance(64)  # the scaling lesson's sample: the same number
        # with d_k = 1 the division by √1 leaves the row as it was: there is no "softer row" to show
        a1 = Para(t("ex.a1" if d > 1 else "ex.a1_one", tok=p.tokens[i], s=VecParam(list(v["scores"][i])),
                    p=VecParam(list(raw_soft[i])),
                    root=short(math.sqrt(d)) if math.sqrt(d).is_integer() else math.sqrt(d), dk=d,
                    ps=VecParam(list(v["weights"][i])), var=var64))
        # 2: exp and normalisation, on the row with the widest spread
        j = int(np.argmax(np.ptp(v["scaled"], axis=1)))
        row = v["scaled"][j]
        lo, hi = int(np.argmin(row)), int(np.argmax(row))
        a2 = Para(t("ex.a2", tok=p.tokens[j], s=VecParam(list(row)), e=VecParam(list(v["exp"][j])),
                    gap=float(row[hi] - row[lo]), ratio=float(v["exp"][j][hi] / v["exp"][j][lo]),
                    sum=float(v["sums"][j]), w=VecParam(list(v["weights"][j]))))
        # 3: whose information
        k = self._q3_row()
        order = np.argsort(-v["weights"][k], kind="stable")
        shares = [t("toy.share", pct=percent(v["weights"][k, m]), tok=p.tokens[m]) for m in order]
        # every key whose score equals the row's largest has the largest weight, exactly
        top = [p.tokens[m] for m in order if v["scores"][k, m] == v["scores"][k].max()]
        a3 = Para(t("ex.a3" if len(top) == 1 else "ex.a3_tie", tok=p.tokens[k], shares=shares,
                    top=top[0] if len(top) == 1 else top,
                    o=VecParam(list(v["output"][k])), v=VecParam(list(v["V"][k])),
                    x=VecParam(list(p.X[k]), exact=True)))
        return [Para(t("ex.q1")), a1, Para(t("ex.q2")), a2, Para(t("ex.q3", tok=p.tokens[k])), a3]


def _plain(x, lang: str) -> str:
    from .explain.render.base import Ctx
    return Ctx(lang).text(x)


def _flow(m: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(short(x) for x in r) + "]" for r in m) + "]"


# ----------------------------------------------------------------------------------------------

#: (what, style) -> the values drawn for X or a weight matrix W and their probabilities (None: uniform)
DRAWS = {("X", "int"): ([0.0, 1.0, 2.0], [0.35, 0.45, 0.2]), ("X", "decimal"): ([0.0, 0.5, 1.0, 1.5, 2.0], None),
         ("W", "int"): ([-1.0, 0.0, 1.0, 2.0], [0.15, 0.3, 0.35, 0.2]),
         ("W", "decimal"): ([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5], None)}


def _draw(rng: np.random.Generator, shape, style: str, what: str = "W") -> np.ndarray:
    values, p = DRAWS[what, style]
    return rng.choice(np.array(values), size=shape, p=p)


def _draw_x(rng: np.random.Generator, tokens: int, dim: int, style: str) -> np.ndarray:
    """X (tokens, dim): entries drawn one by one; or, where the tokens take more than half of the
    different non-zero rows, distinct non-zero rows drawn without replacement (each with the
    probability of its entries), since draws one by one almost never give distinct rows there:
    8 tokens in dim 2 found none in 10,000 tries."""
    values, p = DRAWS["X", style]
    rows = [r for r in itertools.product(range(len(values)), repeat=dim) if any(values[i] for i in r)]
    if 2 * tokens <= len(rows):
        return _draw(rng, (tokens, dim), style, "X")
    weight = np.array([math.prod(p[i] if p else 1.0 for i in r) for r in rows])  # (rows,)
    pick = rng.choice(len(rows), size=tokens, replace=False, p=weight / weight.sum())  # (tokens,)
    return np.array([[values[i] for i in rows[k]] for k in pick])  # (tokens, dim)


def _humane(p: ToyProblem) -> bool:
    assert p.X is not None  # an exercise gives X and the weights
    v = compute(p)
    if np.abs(np.concatenate([v["Q"], v["K"], v["V"]], 1)).max() > 6:
        return False
    if np.abs(v["scores"]).max() > 9:
        return False
    if (np.abs(v["Q"]).sum(1) == 0).any() or (np.abs(v["K"]).sum(1) == 0).all():
        return False
    if (np.ptp(v["scores"], axis=1) == 0).any():
        return False
    if len({tuple(r) for r in p.X}) < p.L or (np.abs(p.X).sum(1) == 0).any():
        return False
    if len({tuple(r) for r in v["V"]}) < min(p.L, 2):
        return False
    return True


def labels_from_text(text: str) -> list[str]:
    """The tokens of ``text`` for an exercise: its words when it has spaces, else its characters
    (``我喜欢`` → 我, 喜, 欢), as a Chinese lesson reads one character per token."""
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.core_exercise_text", value=repr(text))
    return text.split() if any(c.isspace() for c in text.strip()) else list(text.strip())


def make_exercise(tokens: int = 3, dim: int = 2, seed: int = 0, style: str = "int", lang: str = "en",
                  labels: Optional[Sequence[str]] = None) -> Exercise:
    """A fresh exercise; see the module doc. ``tokens`` 2..8, ``dim`` 1..4. ``labels`` names the
    tokens (their number is then the number of tokens; the numbers depend only on the seed, the
    count and ``dim``, so the same seed with other labels gives the same arithmetic). Where a label
    comes twice (我, 爱, 我) every label takes its position (0:我, 1:爱, 2:我): each names one row."""
    if labels is not None:
        labels = _check_labels(labels)
        tokens = len(labels)
    for name, value, lo, hi in (("tokens", tokens, 2, 8), ("dim", dim, 1, 4)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
            raise error(InputError, "errors.core_exercise_range", name=name, low=lo, high=hi, value=repr(value))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise error(InputError, "errors.core_exercise_seed", value=repr(seed))
    if style not in ("int", "decimal"):
        raise error(InputError, "errors.core_exercise_style", value=repr(style))
    if lang not in TOKENS:
        raise error(InputError, "errors.core_exercise_lang", code=repr(lang), choices=", ".join(TOKENS))
    rows = len(DRAWS["X", style][0]) ** dim - 1  # the different non-zero rows X can have: one per token
    if tokens > rows:
        raise error(InputError, "errors.core_exercise_few_rows", tokens=tokens, dim=dim, style=style, rows=rows)
    rng = np.random.default_rng(seed)
    if labels is None:
        labels = TOKENS[lang][:tokens]
    for _ in range(MAX_TRIES):
        X = _draw_x(rng, tokens, dim, style)
        W = [_draw(rng, (dim, dim), style) for _ in range(3)]
        p = ToyProblem(X=X, W_Q=W[0], W_K=W[1], W_V=W[2], tokens=list(labels), name=f"exercise-{seed}",
                       source=f"exercise seed {seed}")
        if _humane(p):
            return Exercise(p, int(seed), style, lang)
    raise error(InputError, "errors.core_exercise_none", tokens=tokens, dim=dim, seed=seed)


def _check_labels(labels) -> list[str]:
    if isinstance(labels, str) or not isinstance(labels, (list, tuple)):
        raise error(InputError, "errors.core_exercise_labels", type=type(labels).__name__)
    out = [str(x).strip() for x in labels]
    if not 2 <= len(out) <= 8:
        raise error(InputError, "errors.labels_count", n=len(out))
    if any(not x for x in out):
        raise error(InputError, "errors.label_empty", labels=", ".join(repr(x) for x in out))
    return distinct_labels(out)  # a token that comes twice (我爱我): every row named by its position


__all__ = ["Exercise", "make_exercise", "labels_from_text", "STEPS", "TOKENS"]
