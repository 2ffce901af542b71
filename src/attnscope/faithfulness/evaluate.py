"""Judge attribution methods against the model itself, text by text (issue 27 item 4).

For one text and one model, :func:`evaluate_text` computes every method's attribution of the
model's output and scores it two ways:

* **agreement with leave-one-out**: Spearman's ρ between the method's scores and leave-one-out's
  (the change of the target when the token is removed, :mod:`attnscope.attribution.occlusion`);
* **deletion and insertion** (ERASER): the tokens the method ranks first are removed from the
  text (comprehensiveness), or kept alone (sufficiency), for each bin of :data:`.stats.ERASER_BINS`,
  and the target is read again.

What is scored: the **output** of the model, the target of :mod:`attnscope.attribution.target`
resolved once on the whole text and held fixed (a decoder: the logit of its top next-token
prediction at the last position; an encoder: its pooled embedding's length along the text's own
embedding direction). Output methods give one score per token for that target. Token-to-token
methods give a matrix (row = output position): the row of the position the target reads is used —
a decoder's **last row**, an encoder's row 0 under [CLS] pooling, and under mean pooling (MiniLM) the
**mean of all rows** (the pooled embedding is the mean of every position's output, so the share of
token j in it is the mean of its shares in the rows).

Which tokens: only the text's own tokens are ranked, removed and kept; the tokenizer's special
tokens ([CLS], [SEP], <bos>) stay in place in every variant (the model always sees a well-formed
input) and are left out of ρ. Removing is done on the token ids (later tokens move up one position,
nothing is re-tokenised), as leave-one-out does. The ``random`` control ranks the tokens in a
seeded random order.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import torch

from ..attribution import get_method
from ..attribution.target import model_kind, outputs, read, resolve_target
from ..attribution.weights import text_ids
from ..errors import InputError
from ..i18n import error
from . import stats

Tensor = torch.Tensor

#: the ground truth, and the control that ranks at random
REFERENCE = "leave_one_out"
RANDOM = "random"
#: texts run together in one forward pass at most
CHUNK = 32


@dataclass
class TextResult:
    """One text's numbers: per method ``rho`` (nan: a constant ranking), ``deleted``/``kept`` (the target
    per bin) and ``seconds``; ``full`` the target of the whole text; ``truth`` leave-one-out's scores
    ``(n_content,)`` (empty when not known: a text every method took over from a run that kept none)."""

    index: int
    where: str
    n_tokens: int
    n_content: int
    full: float
    rho: dict = field(default_factory=dict)
    deleted: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    truth: list = field(default_factory=list)


def output_row(model, a) -> Tensor:
    """The scores ``(L,)`` of the model's output in an attribution (module docstring: which row)."""
    if a.kind == "output":
        return a.scores
    if model_kind(model) == "encoder":
        if getattr(model, "pooling", "mean") == "cls":
            return a.scores[0]  # (L,)
        return a.scores.mean(dim=0)  # (L,): mean pooling (and max pooling, stated as an approximation)
    return a.scores[-1]  # (L,): the last position reads the next token


#: token-to-token methods that take ``rows=`` (compute only those output rows): given the row read
ROWS_METHODS = ("flow",)


def rows_read(model) -> Optional[list[int]]:
    """The rows :func:`output_row` reads: a decoder's last, row 0 under [CLS] pooling, all (None) under
    mean pooling."""
    if model_kind(model) == "encoder":
        return [0] if getattr(model, "pooling", "mean") == "cls" else None
    return [-1]


def row_choice(model) -> str:
    """The words for :func:`output_row`'s choice on ``model`` (for the report)."""
    if model_kind(model) == "encoder":
        pooling = getattr(model, "pooling", "mean")
        if pooling == "cls":
            return "row 0 ([CLS] pooling)"
        # max pooling takes each feature from its own position: no row of the matrix is its output
        return "the mean of all rows (an approximation of max pooling)" if pooling == "max" else \
            "the mean of all rows (mean pooling)"
    return "the last row (the position that predicts the next token)"


class Scorer:
    """The target of one text, read for any edit of its token ids (deletions, insertions)."""

    def __init__(self, model, text: str) -> None:
        self.model = model
        self.tokens, self.ids = text_ids(model, text)  # ids (L,)
        specials = model.tokenizer.special_tokens() if model.tokenizer is not None else set()
        self.content = [i for i, t in enumerate(self.tokens) if t not in specials]
        one = self.ids.unsqueeze(0)  # (1, L)
        self.target = resolve_target(model, one, torch.ones_like(one), torch.zeros_like(one), None)
        self.full = float(self.values([self.ids.tolist()])[0])

    def values(self, rows: Sequence[list[int]]) -> list[float]:
        """The target of each id sequence (lengths may differ: grouped by length, no padding)."""
        out: list[float] = [0.0] * len(rows)
        by_len: dict[int, list[int]] = {}
        for i, r in enumerate(rows):
            by_len.setdefault(len(r), []).append(i)
        with torch.no_grad():
            for group in by_len.values():
                for s in range(0, len(group), CHUNK):
                    part = group[s:s + CHUNK]
                    ids = torch.tensor([rows[i] for i in part], dtype=torch.long, device=self.ids.device)  # (n, L′)
                    v = read(self.target, outputs(self.model, ids, torch.ones_like(ids), torch.zeros_like(ids)))  # (n,)
                    for i, x in zip(part, v.tolist()):
                        out[i] = float(x)
        return out

    def variants(self, order: Sequence[int], counts: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
        """For each count m: the ids without the first m content tokens of ``order`` (positions into
        :attr:`content`), and the ids of the specials and those m tokens only (in text order)."""
        ids = self.ids.tolist()
        deleted, kept = [], []
        for m in counts:
            top = {self.content[k] for k in order[:m]}
            deleted.append([t for i, t in enumerate(ids) if i not in top])
            kept.append([t for i, t in enumerate(ids) if i in top or i not in self.content])
        return deleted, kept


def ranking(scores: np.ndarray) -> list[int]:
    """Positions of ``scores`` from the highest to the lowest (ties: the earlier position first)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def evaluate_text(model, index: int, where: str, text: str, methods: Sequence[str], options: dict,
                  bins: Sequence[float], seed: int, truth: Optional[Sequence[float]] = None) -> Optional[TextResult]:
    """Every method of ``methods`` on one text (see the module docstring); None when the text has
    fewer than 4 content tokens. ``options``: per method, keyword arguments for ``model.attribute``.
    ``truth``: leave-one-out's scores of the content tokens ``(n,)`` from an earlier run of the same
    text (``--reuse``), taken instead of computing them again (leave-one-out is deterministic; the
    caller checks that the text's target still reads as then); ignored unless it has one per token."""
    sc = Scorer(model, text)
    n = len(sc.content)
    if n < 4:
        return None
    res = TextResult(index, where, len(sc.tokens), n, sc.full)
    counts = stats.removal_counts(n, bins)
    if truth is not None and len(truth) == n:
        loo_scores = np.asarray(truth, dtype=np.float64)  # (n,)
    else:
        t0 = time.perf_counter()
        loo = get_method(REFERENCE).compute(model, text, layer=None, target=None)
        loo_scores = loo.scores.detach().double().cpu().numpy()[sc.content]  # (n,)
        res.seconds[REFERENCE] = time.perf_counter() - t0
    res.truth = [float(x) for x in loo_scores]
    orders: dict[str, list[int]] = {}
    for name in methods:
        t0 = time.perf_counter()
        if name == REFERENCE:
            s = loo_scores
        elif name == RANDOM:
            s = np.random.default_rng([seed, index]).permutation(n).astype(np.float64)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # integrated gradients' completeness warning: kept in details
                opts = dict(options.get(name, {}))
                if name in ROWS_METHODS:  # attention flow: one max-flow problem per pair, only the rows read
                    opts.setdefault("rows", rows_read(model))
                a = model.attribute(text, method=name, **opts)
            s = output_row(model, a).detach().double().cpu().numpy()[sc.content]  # (n,)
            if "relative_gap" in a.details:
                res.details[name] = {"relative_gap": float(a.details["relative_gap"])}
        if not np.isfinite(s).all():
            raise error(InputError, "errors.faithfulness_not_finite", method=name, where=where)
        res.seconds[name] = res.seconds.get(name, 0.0) + time.perf_counter() - t0
        res.rho[name] = stats.spearman(s, loo_scores)
        orders[name] = ranking(s)
    # every method's variants of this text in one list, read in batches of equal length
    t0 = time.perf_counter()
    rows: list[list[int]] = []
    for name in methods:
        d, k = sc.variants(orders[name], counts)
        rows += d + k
    unique = {tuple(r): None for r in rows}
    got = dict(zip(unique, sc.values([list(r) for r in unique])))
    for i, name in enumerate(methods):
        base = i * 2 * len(counts)
        res.deleted[name] = [got[tuple(r)] for r in rows[base:base + len(counts)]]
        res.kept[name] = [got[tuple(r)] for r in rows[base + len(counts):base + 2 * len(counts)]]
    res.details["removal_seconds"] = time.perf_counter() - t0
    res.details["counts"] = counts
    return res
