"""Per-layer summary and the test of "local in low layers, global in high layers".

The fourth article says that the lower layers attend locally (neighbouring words, syntax) and the
higher layers globally (long-range, semantic). We test it as a monotone trend of a head's
statistic against its layer index, with Spearman's rank correlation ρ and a permutation p-value:

* ``distance`` (mean attention distance) and ``entropy_norm`` should *rise* with depth, and
  ``to_local`` should *fall*, if the claim holds;
* ``distance_content`` repeats the distance test without the jumps to [CLS]/[SEP], which in BERT
  dominate the middle layers (Clark et al. 2019) and would otherwise pass for "global" attention.

ρ is computed over heads (x = layer index of each head, tied within a layer, average ranks) and,
for reference, over the per-layer means.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Optional

import numpy as np
from rich.cells import cell_len

from ..explain.numbers import counted
from ..i18n import text
from .classify import LABELS

#: Statistics averaged per layer in the summary table.
LAYER_STATS = ("entropy", "entropy_norm", "distance", "distance_content", "to_local", "to_cls", "to_sep",
               "to_punct", "to_self", "to_prev", "to_next")

#: statistic -> the sign of the trend with depth that the claim "local low, global high" predicts.
CLAIM = {"distance": +1, "distance_content": +1, "entropy_norm": +1, "entropy": +1, "to_local": -1}


def say(key: str, lang: str = "en", **fmt) -> str:
    """The analysis report's string ``analysis.KEY`` (attnscope.i18n's catalogue, analysis*.toml) in ``lang``."""
    return text("analysis." + key, lang, **fmt)


def left_out_line(c: dict, lang: str = "en") -> Optional[str]:
    """The console line on what reading left out (``c``: the counters; a seq2seq analysis truncates
    nothing), or None when nothing was."""
    left = []
    if c.get("truncated"):
        left.append(say("out_truncated", lang, texts=counted_in(c["truncated"], "text", lang),
                        tokens=counted_in(c["truncated_tokens"], "token", lang)))
    if c.get("skipped_decode"):
        left.append(say("out_skipped", lang, lines=counted_in(c["skipped_decode"], "undecodable", lang)))
    if c.get("empty"):
        left.append(counted_in(c["empty"], "empty", lang))
    return say("out_left_out", lang, items=say("sep", lang).join(left)) if left else None


def counted_in(n: int, unit: str, lang: str = "en") -> str:
    """``n`` of ``unit`` (``analysis.unit_*``) in ``lang``: ``3 texts``, ``1,024 个 token``."""
    noun = say("unit_" + unit, lang)
    if lang == "en":
        singular, plural = noun.split("|")
        return counted(n, singular, plural)
    return f"{n:,} {noun}"


def fmt_number(x, digits=3) -> str:
    """A report table's number: ``digits`` decimals, "n/a" for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def pad_left(s: str, width: int) -> str:
    """``s`` right-aligned in ``width`` terminal columns (a CJK character takes two)."""
    return " " * max(0, width - cell_len(s)) + s


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-D array, ties given the average of the ranks they span."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sx = x[order]
    # boundaries of runs of equal values in sorted order
    starts = np.flatnonzero(np.r_[True, sx[1:] != sx[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + 1 + e) / 2.0  # mean of ranks s+1..e
    return ranks


def spearman(x, y) -> float:
    """Spearman's ρ: the Pearson correlation of average ranks (NaN if either side is constant)."""
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / den if den > 0 else float("nan")


def permutation_pvalue(x, y, *, n_perm: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value of ρ(x, y) under random pairing.

    Exact (all permutations) for n ≤ 8; otherwise a Monte Carlo estimate with ``n_perm`` random
    permutations, counted as (1 + #{|ρ_perm| ≥ |ρ|}) / (1 + n_perm) so that it is never 0.
    """
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    if den == 0:
        return float("nan")
    obs = abs(float(rx @ ry)) / den
    tol = 1e-12
    n = len(rx)
    if n <= 8:
        perms = np.array(list(itertools.permutations(range(n))))  # (n!, n)
        r = np.abs(ry[perms] @ rx) / den
        return float(np.mean(r >= obs - tol))
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((n_perm, n)), axis=1)  # (n_perm, n) random permutations
    r = np.abs(ry[perms] @ rx) / den
    return float((1 + np.sum(r >= obs - tol)) / (1 + n_perm))


def trend(values: np.ndarray, *, n_perm: int = 10000, seed: int = 0) -> dict:
    """ρ of a (n_layers, n_heads) statistic against the layer index, over heads and over layer means."""
    v = np.asarray(values, dtype=float)
    n_layers, n_heads = v.shape
    layer = np.repeat(np.arange(n_layers), n_heads)
    flat = v.reshape(-1)
    ok = ~np.isnan(flat)
    if ok.sum() < 3:
        return {"rho_heads": float("nan"), "p_heads": float("nan"), "rho_layers": float("nan"),
                "p_layers": float("nan"), "n_heads": int(ok.sum())}
    layer_means = np.array([np.nanmean(r) if (~np.isnan(r)).any() else np.nan for r in v])  # (n_layers,)
    lm_ok = ~np.isnan(layer_means)
    return {
        "rho_heads": spearman(layer[ok], flat[ok]),
        "p_heads": permutation_pvalue(layer[ok], flat[ok], n_perm=n_perm, seed=seed),
        "rho_layers": spearman(np.arange(n_layers)[lm_ok], layer_means[lm_ok]),
        "p_layers": permutation_pvalue(np.arange(n_layers)[lm_ok], layer_means[lm_ok], n_perm=n_perm, seed=seed),
        "n_heads": int(ok.sum()),
    }


def verdict_reading(stat: str, t: Mapping, alpha: float = 0.05, lang: str = "en") -> str:
    """What a trend says about the claim, the report table's "reading": ``supports the claim``, or
    why it says nothing."""
    rho, p = t["rho_heads"], t["p_heads"]
    if math.isnan(rho):
        return say("verdict_none", lang)
    if p >= alpha:
        return say("verdict_flat", lang, rho=rho, p=p)
    agrees = (rho > 0) == (CLAIM.get(stat, +1) > 0)
    return say("verdict_supports" if agrees else "verdict_contradicts", lang)


def verdict(stat: str, t: Mapping, alpha: float = 0.05, lang: str = "en") -> str:
    """One sentence on whether a trend supports the claim "local in low layers, global in high"."""
    rho, p = t["rho_heads"], t["p_heads"]
    reading = verdict_reading(stat, t, alpha, lang)
    if math.isnan(rho) or p >= alpha:
        return say("verdict_stat", lang, stat=stat, reading=reading)
    return say("verdict_trend", lang, stat=stat, direction=say("rises" if rho > 0 else "falls", lang),
               rho=rho, p=p, reading=reading)


def layer_summary(means: Mapping[str, np.ndarray], labels: np.ndarray,
                  importance: Optional[np.ndarray] = None, *, n_perm: int = 10000, seed: int = 0) -> dict:
    """Per-layer means, label counts and trend tests.

    Returns ``{"layers": [{"layer": i, <stat>: mean over heads, "labels": {label: count},
    "importance": mean}...], "trends": {stat: trend(...) + "verdict"}, "claim": str}``.
    """
    n_layers = np.shape(labels)[0]
    layers = []
    for i in range(n_layers):
        row: dict[str, Any] = {"layer": i}
        for s in LAYER_STATS:
            vals = np.asarray(means[s][i], dtype=float)
            row[s] = float(np.nanmean(vals)) if (~np.isnan(vals)).any() else float("nan")
        row["labels"] = {lab: int(np.sum(labels[i] == lab)) for lab in LABELS if np.any(labels[i] == lab)}
        if importance is not None:
            row["importance"] = float(np.nanmean(importance[i])) if (~np.isnan(importance[i])).any() else float("nan")
        layers.append(row)
    trends = {}
    for s in CLAIM:
        t = trend(means[s], n_perm=n_perm, seed=seed)
        t["predicted_sign"] = CLAIM[s]
        t["verdict"] = verdict(s, t)
        trends[s] = t
    return {"layers": layers, "trends": trends, "claim": claim_with_layers(trends, layers)}


def claim_with_layers(trends: Mapping[str, Mapping], layers: list, lang: str = "en") -> str:
    """:func:`claim_sentence`, and, since the trend test asks for a monotone tendency, where the
    most local layer is when it is not the first."""
    claim = claim_sentence(trends, lang=lang)
    content = [r["distance_content"] for r in layers]
    if not all(math.isnan(x) for x in content):
        k = int(np.nanargmin(content))
        if k != 0:
            claim += say("claim_bottom", lang, layer=k, content=content[k], content_0=content[0],
                         entropy_0=layers[0]["entropy_norm"])
    return claim


def claim_sentence(trends: Mapping[str, Mapping], alpha: float = 0.05, lang: str = "en") -> str:
    """Overall reading of "local in low layers, global in high layers" from the trend tests."""
    d, dc = trends["distance"], trends["distance_content"]
    if math.isnan(d["rho_heads"]) and math.isnan(dc["rho_heads"]):  # one layer: no test, not a negative one
        return say("claim_untestable", lang)
    sig = lambda t, sign: not math.isnan(t["rho_heads"]) and t["p_heads"] < alpha and np.sign(t["rho_heads"]) == sign
    if sig(d, +1) and sig(dc, +1):
        return say("claim_supported", lang)
    if sig(d, +1):
        return say("claim_partly_overall", lang)
    if sig(dc, +1):
        return say("claim_partly_content", lang)
    if sig(d, -1) or sig(dc, -1):
        return say("claim_contradicted", lang)
    return say("claim_none", lang)
