"""Experiment "variance": Var(q·k) = d_k for unit-variance entries, and 1 after ÷√d_k.

The third article's argument: if the entries of q and k are independent with mean 0 and
variance 1, each product q_i k_i has variance 1, so the sum q·k over d_k terms has variance d_k;
dividing by √d_k brings it back to 1. This experiment samples q and k for d_k = 2 … 1024 and three
entry distributions with unit variance (normal, uniform on [-√3, √3], random signs ±1), and
compares the sampled variance with d_k, with the standard error that the theory also gives
(exact for the unbiased s² of N independent q·k):

    Var(s²) = (μ₄ − d_k² (N − 3)/(N − 1)) / N,   μ₄ = E[(q·k)⁴] = d_k m₄² + 3 d_k (d_k − 1)

where m₄ = E[q_i⁴] (3, 9/5, 1 for the three distributions), so the relative standard error of
s²/d_k is √((2 + (m₄² − 3)/d_k + 2/(N − 1)) / N); the last term keeps it above 0 for random
signs at d_k = 1, where q·k = ±1. It also repeats the article's own experiment: Q and K of
shape (n, 256), the n² scores of Q Kᵀ unscaled and scaled, as two histograms.
"""

from __future__ import annotations

import math
import time
from typing import Optional, Sequence

import torch

from .. import i18n
from ..errors import ConfigError
from ..i18n import error
from .base import (
    ExperimentResult,
    check_int_list,
    check_names,
    check_positive_int,
    check_seed,
    fmt_num,
    in_figure_rc,
    md_table,
    progress_bar,
)

#: d_k = 2, 4, …, 1024.
DEFAULT_D_KS = tuple(2 ** i for i in range(1, 11))
#: Unit-variance, zero-mean entry distributions and their fourth moments E[x⁴].
DISTRIBUTIONS = {"normal": 3.0, "uniform": 9.0 / 5.0, "rademacher": 1.0}
HIST_D_K = 256  # the article's histogram
MAX_SAMPLES = 10**7  # dot products per (distribution, d_k): 80 MB of float64 each
MAX_HIST_N = 5000  # the histograms' n × n scores, unscaled and scaled: 200 MB of float64 each


def sample_entries(dist: str, shape: Sequence[int], generator: torch.Generator,
                   dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Independent entries with mean 0 and variance 1 from ``dist``."""
    if dist == "normal":
        return torch.randn(*shape, generator=generator, dtype=dtype)
    if dist == "uniform":  # U(-a, a) has variance a²/3
        return (torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1) * math.sqrt(3.0)
    if dist == "rademacher":
        return torch.randint(0, 2, tuple(shape), generator=generator).to(dtype) * 2 - 1
    raise ValueError(dist)


def relative_standard_error(d_k: int, n: int, m4: float = 3.0) -> float:
    """Standard error of s²/d_k when s² is the variance of n sampled dot products (see module doc)."""
    return math.sqrt((2.0 + (m4 * m4 - 3.0) / d_k + 2.0 / (n - 1)) / n)


def sample_dot_products(dist: str, d_k: int, n: int, generator: torch.Generator,
                        chunk: int = 8192) -> torch.Tensor:
    """n independent q·k with q, k of dimension d_k (float64), sampled in chunks to bound memory."""
    out = []
    chunk = max(1, min(chunk, 2**26 // d_k))  # ≤ 512 MiB per (m, d_k) draw; unchanged for d_k ≤ 8192
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        q = sample_entries(dist, (m, d_k), generator)  # (m, d_k)
        k = sample_entries(dist, (m, d_k), generator)  # (m, d_k)
        out.append((q * k).sum(-1))  # (m,)
    return torch.cat(out)


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, d_ks: Optional[Sequence[int]] = None,
        samples: Optional[int] = None, distributions: Optional[Sequence[str]] = None,
        hist_n: Optional[int] = None, lang: str = "en") -> ExperimentResult:
    """Sampled Var(q·k) and Var(q·k/√d_k) against the theory, over d_k.

    Args:
        quick: fewer samples (for CI).
        seed: seeds the one torch.Generator everything is drawn from.
        d_ks: dimensions to test (default 2, 4, …, 1024).
        samples: dot products per (distribution, d_k) (default 40 000; quick 4 000).
        distributions: entry distributions (default all of :data:`DISTRIBUTIONS`).
        hist_n: rows of the article's Q and K (n × 256; n² scores; default 1000, quick 300).
        lang: language of the report and the figures' titles and axes ("en" or "zh").
    Returns:
        ExperimentResult with table ``variance`` (one row per distribution and d_k) and
        figures ``variance`` and ``histograms``.
    """
    t0 = time.perf_counter()
    seed = check_seed(seed)
    lang = i18n.check_lang(lang)
    d_ks = check_int_list("d_k", DEFAULT_D_KS if d_ks is None else d_ks, low=1, high=65536)
    n = check_positive_int("samples", samples if samples is not None else (4000 if quick else 40000), high=MAX_SAMPLES)
    if n < 2:
        raise error(ConfigError, "errors.experiment_samples", n=n)
    dists = check_names("distribution", tuple(DISTRIBUTIONS) if distributions is None else distributions,
                        tuple(DISTRIBUTIONS))
    hist_n = check_positive_int("hist_n", hist_n if hist_n is not None else (300 if quick else 1000),
                                high=MAX_HIST_N)
    if hist_n < 2:
        raise error(ConfigError, "errors.experiment_hist_n", n=hist_n)
    params = {"quick": quick, "seed": seed, "d_ks": list(d_ks), "samples": n,
              "distributions": list(dists), "hist_n": hist_n, "hist_d_k": HIST_D_K}

    g = torch.Generator().manual_seed(seed)
    rows: list[dict] = []
    bar = progress_bar(total=len(dists) * len(d_ks), desc="variance", enabled=progress, unit="d_k")
    for dist in dists:
        m4 = DISTRIBUTIONS[dist]
        for d in d_ks:
            dots = sample_dot_products(dist, d, n, g)  # (n,)
            var = float(dots.var())  # unbiased, mean estimated
            se = relative_standard_error(d, n, m4)
            ratio = var / d  # = Var(q·k / √d_k)
            rows.append({"distribution": dist, "d_k": d, "samples": n, "var_unscaled": var,
                         "theory_unscaled": float(d), "var_scaled": ratio, "theory_scaled": 1.0,
                         "rel_se": se, "z": (ratio - 1.0) / se,
                         "mean_unscaled": float(dots.mean()), "max_abs_unscaled": float(dots.abs().max())})
            bar.update(1)
    bar.close()
    t_sweep = time.perf_counter() - t0

    # The article's experiment: Q, K (n, 256) ~ N(0, 1); all n² scores of Q Kᵀ.
    Q = torch.randn(hist_n, HIST_D_K, generator=g, dtype=torch.float64)  # (n, d_k)
    K = torch.randn(hist_n, HIST_D_K, generator=g, dtype=torch.float64)  # (n, d_k)
    unscaled = Q @ K.T  # (n, n)
    scaled = unscaled / math.sqrt(HIST_D_K)  # (n, n)
    hist = {"d_k": HIST_D_K, "n": hist_n, "var_unscaled": float(unscaled.var()),
            "var_scaled": float(scaled.var()), "std_unscaled": float(unscaled.std()),
            "max_abs_unscaled": float(unscaled.abs().max()), "max_abs_scaled": float(scaled.abs().max())}

    worst = max(rows, key=lambda r: abs(r["z"]))
    data = {"rows": rows, "histogram": hist,
            "max_abs_z": abs(worst["z"]),
            "max_rel_error_scaled": max(abs(r["var_scaled"] - 1.0) for r in rows)}
    figures = {"variance": variance_figure(rows, lang), "histograms": histogram_figure(unscaled, scaled, lang)}
    timing = {"sweep_s": t_sweep, "total_s": time.perf_counter() - t0}
    result = ExperimentResult("variance", params, data, tables={"variance": rows}, figures=figures,
                              timing=timing)
    result.report = report(result, lang)
    return result


@in_figure_rc
def variance_figure(rows: list[dict], lang: str = "en"):
    """Sampled Var(q·k) (log-log) against d_k, with the lines d_k and 1."""
    from matplotlib.figure import Figure

    T = lambda key, **kw: i18n.text("experiments.var." + key, lang, **kw)  # noqa: E731
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    dists = list(dict.fromkeys(r["distribution"] for r in rows))
    d_all = sorted({r["d_k"] for r in rows})
    ax1.plot(d_all, d_all, "k--", lw=1, label=T("fig_theory_dk"))
    ax2.axhline(1.0, color="k", ls="--", lw=1, label=T("fig_theory_1"))
    markers = dict(zip(DISTRIBUTIONS, "osd"))
    for dist in dists:
        rs = [r for r in rows if r["distribution"] == dist]
        ds = [r["d_k"] for r in rs]
        ax1.plot(ds, [r["var_unscaled"] for r in rs], markers.get(dist, "o"), ms=5, alpha=0.8, label=dist)
        ax2.errorbar(ds, [r["var_scaled"] for r in rs], yerr=[2 * r["rel_se"] for r in rs],
                     fmt=markers.get(dist, "o"), ms=5, alpha=0.8, capsize=2, label=T("fig_se", dist=dist))
    ax1.set(xscale="log", yscale="log", xlabel="d_k", ylabel=T("fig_y_unscaled"), title=T("fig_unscaled"))
    ax2.set(xscale="log", xlabel="d_k", ylabel=T("fig_y_scaled"), title=T("fig_scaled"))
    for ax in (ax1, ax2):
        ax.set_xticks(d_all, [str(d) for d in d_all], fontsize=7)
        ax.minorticks_off()
        ax.legend(fontsize=7)
    return fig


@in_figure_rc
def histogram_figure(unscaled: torch.Tensor, scaled: torch.Tensor, lang: str = "en"):
    """The article's two histograms (d_k = 256): unscaled and scaled scores, variance in the title."""
    from matplotlib.figure import Figure

    T = lambda key, **kw: i18n.text("experiments.var." + key, lang, **kw)  # noqa: E731
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    ax1.hist(unscaled.flatten().numpy(), bins=50, color="tab:red", alpha=0.8)
    ax1.set_title(T("hist_unscaled", d_k=HIST_D_K, var=float(unscaled.var())))
    ax2.hist(scaled.flatten().numpy(), bins=50, color="tab:blue", alpha=0.8)
    ax2.set_title(T("hist_scaled", var=float(scaled.var())))
    for ax in (ax1, ax2):
        ax.set_xlabel(T("score"))
        ax.set_ylabel(T("count"))
    return fig


def report(result: ExperimentResult, lang: str = "en") -> str:
    """The Markdown report in ``lang``; the numbers are the same in every language."""
    d, p = result.data, result.params
    T = lambda key, **kw: i18n.text("experiments." + key, lang, **kw)  # noqa: E731
    h = d["histogram"]
    lines = [T("var.title"), "", T("var.setup", samples=p["samples"], seed=p["seed"]), T("var.theory"), ""]
    for dist in dict.fromkeys(r["distribution"] for r in d["rows"]):  # one table per distribution
        lines += [T("var.entries", dist=dist), "",
                  md_table(["d_k", "Var(q·k)", T("var.col_theory"), "Var(q·k/√d_k)", "SE", "z"],
                           [[r["d_k"], fmt_num(r["var_unscaled"], 4), r["d_k"], fmt_num(r["var_scaled"], 4),
                             fmt_num(r["rel_se"], 2), f"{r['z']:+.2f}"] for r in d["rows"] if r["distribution"] == dist]),
                  ""]
    lines += [
        T("var.overall", cells=len(d["rows"]), max_abs_z=d["max_abs_z"], max_rel=d["max_rel_error_scaled"]),
        "",
        T("var.hist_head", d_k=h["d_k"], n=h["n"]),
        "",
        T("var.hist_text", var_unscaled=h["var_unscaled"], max_unscaled=h["max_abs_unscaled"],
          var_scaled=h["var_scaled"], max_scaled=h["max_abs_scaled"], n=h["n"]),
        "",
        "![variance](variance.png)",
        "",
        "![histograms](histograms.png)",
        "",
        T("time", seconds=result.timing.get("total_s", 0.0)),
    ]
    return "\n".join(lines)
