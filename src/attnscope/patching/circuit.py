"""Wang et al.'s circuit metrics — faithfulness, completeness, minimality — with bootstrap intervals.

A circuit C is a set of heads (grouped in named classes: "name movers", "S-inhibition" …). F(S)
is the mean metric (IOI: logit difference IO − S) over the clean prompts when every head *outside*
S is mean-ablated (:mod:`attnscope.patching.ablation`); M is the whole model (nothing ablated), and
``S∖K`` removes the heads of K from S (they are ablated too).

* **faithfulness**: F(C) / F(M), and the gap F(M) − F(C): how much of the model's behaviour the
  circuit alone gives.
* **completeness**: for subsets K of C, ``|F(C∖K) − F(M∖K)|`` — a complete circuit loses as much
  as the model when K is knocked out. K is taken as: ∅, each class, C itself, and
  ``random_subsets`` random subsets (each head of C in with probability ½, ``seed``-ed). Wang et
  al. also searched K greedily; that is not done here. The largest value is the headline.
* **minimality**: for each v in C, ``|F(C∖(K∪{v})) − F(C∖K)|`` for K = ∅ and K = the rest of v's
  class, the larger kept (reported also relative to F(C)): each head should matter for some K.

Each number comes with a 95 % percentile bootstrap interval over prompts (``n_boot`` resamples of
the prompts with replacement, ``seed``-ed): the per-prompt metrics of every ablation are kept, so
the resamples cost no model run. K is chosen on the full set and held fixed in the resamples.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import torch

from ..errors import InputError
from ..i18n import error
from .ablation import ablated_metric, all_heads, checked_heads, head_means
from .pair import require_lm
from .path import Head
from .prompts import groups_of

Tensor = torch.Tensor


def bootstrap(stat: Callable[..., Tensor], per_prompt: Sequence[Tensor], n_boot: int = 1000,
              seed: int = 0) -> tuple[float, float, float]:
    """``(value, low, high)``: ``stat`` of the prompt means of ``per_prompt`` (each ``(N,)``, the same
    prompts), and the 2.5 % and 97.5 % quantiles of ``stat`` over ``n_boot`` resamples of the prompts."""
    N = int(per_prompt[0].shape[0])
    value = float(stat(*[p.double().mean()[None] for p in per_prompt])[0])
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(N, (n_boot, N), generator=g)  # (n_boot, N)
    vals = stat(*[p.double()[idx].mean(1) for p in per_prompt])  # (n_boot,)
    low, high = torch.quantile(vals, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return value, float(low), float(high)


def _label(heads) -> str:
    return " ".join(f"{l}.{h}" for l, h in sorted(heads)) or "∅"


@dataclass
class CircuitReport:
    """What :func:`circuit_metrics` measured; ``to_json()`` for results.json."""

    classes: dict
    f_model: tuple
    f_circuit: tuple
    faithfulness: tuple
    gap: tuple
    completeness: list
    minimality: list
    n_prompts: int
    n_boot: int
    runs: int

    def to_json(self) -> dict:
        def iv(t):
            return {"value": t[0], "low": t[1], "high": t[2]}
        return {"classes": {k: [list(h) for h in v] for k, v in self.classes.items()}, "prompts": self.n_prompts,
                "bootstrap": self.n_boot, "runs": self.runs, "F(M)": iv(self.f_model), "F(C)": iv(self.f_circuit),
                "faithfulness": iv(self.faithfulness), "gap": iv(self.gap),
                "completeness": [dict(c, score=iv(c["score"]), relative=iv(c["relative"])) for c in self.completeness],
                "minimality": [dict(m, score=iv(m["score"]), relative=iv(m["relative"])) for m in self.minimality]}


def check_classes(model, circuit) -> dict[str, list[Head]]:
    """``{class: [(layer, head)]}`` from a dict or one list (one class "circuit"); each head once."""
    classes = circuit if isinstance(circuit, dict) else {"circuit": circuit}
    out: dict[str, list[Head]] = {}
    seen: set = set()
    for name, heads in classes.items():
        hs = sorted(checked_heads(model, heads))
        for h in hs:
            if h in seen:
                raise error(InputError, "errors.circuit_head_twice", head=f"{h[0]}.{h[1]}")
            seen.add(h)
        out[str(name)] = hs
    if not seen:
        raise error(InputError, "errors.circuit_empty")
    return out


@torch.no_grad()
def circuit_metrics(model, prompts, circuit: Union[dict, Sequence[Head]], *, means: Optional[list] = None,
                    n_boot: int = 1000, seed: int = 0, random_subsets: int = 4) -> CircuitReport:
    """Faithfulness, completeness and minimality of ``circuit`` (``{class: [(layer, head)]}`` or a
    list of heads) on ``prompts``, every head outside the evaluated set mean-ablated with ``means``
    (default :func:`~attnscope.patching.ablation.head_means` of the corrupted prompts)."""
    for what, count, low in (("n_boot", n_boot, 10), ("random_subsets", random_subsets, 0)):
        if isinstance(count, bool) or not isinstance(count, int) or count < low:
            raise error(InputError, "errors.circuit_count", what=what, value=repr(count), low=low)
    require_lm(model)
    n = sum(int(g.clean.shape[0]) for g in groups_of(prompts))
    if n < 2:  # one prompt resamples to itself: a zero-width "95 % interval"
        raise error(InputError, "errors.circuit_one_prompt", n=n)
    classes = check_classes(model, circuit)
    C = {h for hs in classes.values() for h in hs}
    everything = all_heads(model)
    means = head_means(model, prompts) if means is None else means
    cache: dict[frozenset, Tensor] = {}

    def F(kept: set, removed: set) -> Tensor:
        """Per-prompt metric with every head outside ``kept ∖ removed`` ablated, (N,)."""
        ablate = frozenset((everything - kept) | removed)
        if ablate not in cache:
            cache[ablate] = ablated_metric(model, prompts, ablate, means)
        return cache[ablate]

    def boot(stat, *arrays):
        return bootstrap(stat, arrays, n_boot, seed)

    fm, fc = F(everything, set()), F(C, set())
    report_f_model, report_f_circuit = boot(lambda a: a, fm), boot(lambda a: a, fc)
    faith = boot(lambda c, m: c / m, fc, fm)
    gap = boot(lambda c, m: m - c, fc, fm)

    subsets: list[tuple[str, set]] = [("∅", set())] + [(f"class {k}", set(v)) for k, v in classes.items()]
    subsets.append(("C", set(C)))
    rng = random.Random(seed)
    order = sorted(C)
    for i in range(random_subsets):
        subsets.append((f"random {i + 1}", {h for h in order if rng.random() < 0.5}))
    completeness = []
    for name, K in subsets:
        a, b = F(C, K), F(everything, K)
        completeness.append({"K": name, "heads": _label(K), "F(C∖K)": float(a.mean()), "F(M∖K)": float(b.mean()),
                             "score": boot(lambda x, y: (x - y).abs(), a, b),
                             "relative": boot(lambda x, y, m: (x - y).abs() / m.abs(), a, b, fm)})

    minimality = []
    class_of = {h: k for k, hs in classes.items() for h in hs}
    for v in order:
        best = None
        for name, K in (("∅", set()), (f"rest of {class_of[v]}", set(classes[class_of[v]]) - {v})):
            a, b = F(C, K | {v}), F(C, K)
            score = abs(float(a.mean()) - float(b.mean()))
            if best is None or score > best[0]:
                best = (score, name, K, a, b)
        assert best is not None
        _, name, K, a, b = best
        minimality.append({"head": f"{v[0]}.{v[1]}", "class": class_of[v], "K": name, "heads": _label(K),
                           "score": boot(lambda x, y: (x - y).abs(), a, b),
                           "relative": boot(lambda x, y, c: (x - y).abs() / c.abs(), a, b, fc)})
    return CircuitReport(classes=classes, f_model=report_f_model, f_circuit=report_f_circuit, faithfulness=faith,
                         gap=gap, completeness=completeness, minimality=minimality, n_prompts=int(fm.shape[0]),
                         n_boot=n_boot, runs=len(cache))
