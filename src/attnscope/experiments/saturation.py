"""Experiment "saturation": how softmax saturates when the scores have variance d_k.

For one query, the scores against S keys are ``s_j = q·k_j``. With Gaussian unit-variance entries,
given q these are exactly independent ``N(0, |q|²)``, and ``E|q|² = d_k``; so a row of scores is
sampled as ``|q| · z`` with ``q ~ N(0, I_{d_k})`` and ``z ~ N(0, I_S)``. "unscaled" feeds these to
softmax, "scaled" divides them by √d_k first. For each d_k we measure, averaged over rows:

* the largest weight ``max_j p_j`` (1/S when uniform, 1 when one-hot),
* the entropy ``H(p) = −Σ p_j ln p_j`` in nats (ln S when uniform, 0 when one-hot),
* the Frobenius norm of the softmax Jacobian ``J = diag(p) − p pᵀ`` — the matrix that carries the
  gradient from the weights back to the scores (for an upstream gradient g with independent unit
  entries, ``E‖J g‖² = ‖J‖_F²``). In closed form ``‖J‖_F² = Σp² − 2Σp³ + (Σp²)²`` (computed in
  a form that does not cancel, see :func:`jacobian_frobenius`).

Closed forms to compare with:

* the uniform limit (scores → 0): ``1/S``, ``ln S``, ``√(S−1)/S``;
* the saturated limit (large |q|): only the gap Δ between the two largest scores matters, and
  its density at 0, ``f = S(S−1) ∫ φ(x)² Φ(x)^{S−2} dx`` for standard normals, gives
  ``E[1 − p_max] ≈ ln2 · f · E[1/|q|]``, ``E[H] ≈ (π²/6) · f · E[1/|q|]``,
  ``E‖J‖_F ≈ f · E[1/|q|]``, with ``E[1/|q|] = Γ((d_k−1)/2) / (√2 Γ(d_k/2)) ≈ 1/√d_k``:
  the gradient through an unscaled softmax shrinks like 1/√d_k, it does not vanish abruptly.

  These are the leading terms in 1/|q| (the table's ``asym_*`` columns, for scores ``factor·q·k``),
  not bounds: their ratio to the measured means tends to 1 only as the scores' spread grows
  (unscaled; S = 2: 0.93–0.96 at d_k = 16, above 0.995 at 256), while 1/|q| is unbounded near 0, so
  at small d_k, and for the scaled rows (variance 1 at every d_k), they can pass what the quantity
  can reach (1 − 1/S, ln S, ‖J‖_F ≤ ½): S = 16, d_k = 2 gives ``asym_one_minus_max`` 1.5.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Optional, Sequence

import torch

from .. import i18n
from ..errors import ConfigError
from ..functional import softmax
from ..i18n import error
from ..reference import score_factor
from .base import ExperimentResult, check_int_list, check_positive_int, check_seed, fmt_num, in_figure_rc, md_table, progress_bar

DEFAULT_D_KS = tuple(2 ** i for i in range(1, 11))
DEFAULT_LENGTH = 16
MODES = ("scaled", "unscaled")
SATURATED = 0.99  # a row counts as one-hot when its largest weight exceeds this
MAX_DRAW = 2**25  # query entries drawn at once: 256 MiB of float64, the bound on each (rows, length) array


# ----------------------------------------------------------------------------------------------
# softmax quantities and their closed forms
# ----------------------------------------------------------------------------------------------

def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """``∂p/∂s = diag(p) − p pᵀ`` for softmax weights ``p (..., S)`` → ``(..., S, S)``."""
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]  # (..., S, S)


def jacobian_frobenius(p: torch.Tensor) -> torch.Tensor:
    """``‖diag(p) − ppᵀ‖_F`` without forming the matrix → ``(...)``.

    Mathematically ``√(Σp² − 2Σp³ + (Σp²)²)``, but for a saturated row that is 1 − 2 + 1 and
    cancels to noise. Written instead as ``Σ_i p_i² (r_i² + Σ_{j≠i} p_j²)`` with
    ``r_i = Σ_{j≠i} p_j = 1 − p_i``, where for the largest weight the two leave-one-out sums are
    added up from the other entries rather than subtracted from 1, every term is positive and
    accurate to rounding, down to norms of 1e-300.
    """
    top = torch.zeros_like(p, dtype=torch.bool).scatter_(-1, p.argmax(-1, keepdim=True), True)  # (..., S)
    others = p.masked_fill(top, 0.0)  # (..., S)
    s2 = (p * p).sum(-1, keepdim=True)  # (..., 1)
    r = torch.where(top, others.sum(-1, keepdim=True), 1.0 - p)  # Σ_{j≠i} p_j
    q = torch.where(top, (others * others).sum(-1, keepdim=True), s2 - p * p)  # Σ_{j≠i} p_j²
    return (p * p * (r * r + q)).sum(-1).sqrt()


def entropy(p: torch.Tensor) -> torch.Tensor:
    """``−Σ p ln p`` in nats over the last dim (0·ln 0 = 0)."""
    return -torch.special.xlogy(p, p).sum(-1)


def uniform_limits(S: int) -> dict[str, float]:
    """Largest weight, entropy and Jacobian norm of the uniform distribution over S keys."""
    return {"max_weight": 1.0 / S, "entropy": math.log(S), "jacobian": math.sqrt(S - 1) / S}


@lru_cache(maxsize=64)
def top_two_gap_density(S: int, n_grid: int = 200_001) -> float:
    """Density at 0 of the gap between the two largest of S standard normals.

    ``f = S(S−1) ∫ φ(x)² Φ(x)^{S−2} dx`` (the largest and second largest coincide at x; the other
    S−2 lie below), by the trapezoidal rule on [−12, 12] in float64.
    """
    if S < 2:
        raise error(ConfigError, "errors.experiment_gap_keys", S=S)
    x = torch.linspace(-12.0, 12.0, n_grid, dtype=torch.float64)
    phi = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    Phi = 0.5 * (1 + torch.erf(x / math.sqrt(2.0)))
    return float(S * (S - 1) * torch.trapezoid(phi * phi * Phi ** (S - 2), x))


def inverse_chi_mean(d: int) -> float:
    """``E[1/|q|]`` for ``q ~ N(0, I_d)``: ``Γ((d−1)/2) / (√2 Γ(d/2))`` (infinite for d = 1)."""
    if d <= 1:
        return math.inf
    return math.exp(math.lgamma((d - 1) / 2) - math.lgamma(d / 2)) / math.sqrt(2.0)


def saturated_asymptotes(S: int, d_k: int, factor: float = 1.0) -> dict[str, float]:
    """Leading terms in 1/|q| of E[1 − p_max], E[H], E‖J‖_F for scores ``factor · q·k``: the
    large-variance approximations of the module doc, which are not bounded as the means are."""
    c = top_two_gap_density(S) * inverse_chi_mean(d_k) / factor
    return {"one_minus_max": math.log(2.0) * c, "entropy": math.pi ** 2 / 6 * c, "jacobian": c}


def sample_scores(d_k: int, rows: int, S: int, generator: torch.Generator) -> torch.Tensor:
    """``rows`` independent rows of q·k_j (j < S), q, k_j ~ N(0, I_{d_k}): ``|q| z`` → (rows, S).

    The queries are drawn in pieces of at most :data:`MAX_DRAW` entries (one piece, the same
    numbers, whenever rows × d_k fits, as for every default run)."""
    chunk = max(1, MAX_DRAW // d_k)
    q_norm = torch.cat([torch.randn(min(chunk, rows - i), d_k, generator=generator, dtype=torch.float64)
                        .norm(dim=-1, keepdim=True) for i in range(0, rows, chunk)])  # (R, 1)
    z = torch.randn(rows, S, generator=generator, dtype=torch.float64)  # (R, S)
    return q_norm * z  # (R, S)


def row_stats(p: torch.Tensor) -> dict[str, float]:
    """Means (and standard errors) over rows of the saturation measures of weights ``p (R, S)``."""
    n = p.shape[0]
    out = {}
    for name, t in (("max_weight", p.amax(-1)), ("entropy", entropy(p)), ("jacobian", jacobian_frobenius(p)),
                    ("saturated_frac", (p.amax(-1) > SATURATED).double())):
        out[name] = float(t.mean())
        out[name + "_se"] = float(t.std() / math.sqrt(n)) if n > 1 else math.nan
    return out


# ----------------------------------------------------------------------------------------------
# the experiment
# ----------------------------------------------------------------------------------------------

def run(*, quick: bool = False, seed: int = 0, progress: bool = True, d_ks: Optional[Sequence[int]] = None,
        length: int = DEFAULT_LENGTH, rows: Optional[int] = None, lang: str = "en") -> ExperimentResult:
    """Largest weight, entropy and Jacobian norm of softmax(scores), scaled and unscaled, vs d_k.

    Args:
        quick: fewer rows (for CI).
        seed: seeds the torch.Generator all scores are drawn from.
        d_ks: dimensions (default 2, 4, …, 1024).
        length: S, the number of keys in a row (default 16).
        rows: query rows per d_k (default 20 000; quick 4 000).
        lang: language of the report and the figure's titles and axes ("en" or "zh").
    Returns:
        ExperimentResult with table ``saturation`` (one row per d_k and mode) and figure
        ``saturation``.
    """
    t0 = time.perf_counter()
    seed = check_seed(seed)
    lang = i18n.check_lang(lang)
    d_ks = check_int_list("d_k", DEFAULT_D_KS if d_ks is None else d_ks, low=1, high=65536)
    S = check_positive_int("length", length, high=4096)
    if S < 2:
        raise error(ConfigError, "errors.experiment_length", S=S)
    R = check_positive_int("rows", rows if rows is not None else (4000 if quick else 20000), high=10**6)
    if R * S > 2**25:  # each (rows, length) float64 array would pass 256 MiB
        raise error(ConfigError, "errors.experiment_too_large", R=f"{R:,}", S=f"{S:,}", most=f"{2**25:,}")
    if R < 2:
        raise error(ConfigError, "errors.experiment_rows", R=R)
    params = {"quick": quick, "seed": seed, "d_ks": list(d_ks), "length": S, "rows": R,
              "saturated_threshold": SATURATED}

    g = torch.Generator().manual_seed(seed)
    uni = uniform_limits(S)
    f_gap = top_two_gap_density(S)
    table = []
    bar = progress_bar(total=len(d_ks), desc="saturation", enabled=progress, unit="d_k")
    for d in d_ks:
        scores = sample_scores(d, R, S, g)  # (R, S), variance d_k
        for mode in MODES:
            factor = float(score_factor(mode, d))  # 1/√d_k, or 1
            p = softmax(scores * factor, dim=-1)  # (R, S)
            row = {"d_k": d, "mode": mode, "score_var": float((scores * factor).var())}
            row.update(row_stats(p))
            asym = saturated_asymptotes(S, d, factor) if d > 1 else {}  # scores factor·q·k; none for d_k = 1
            row.update({"asym_" + k: asym.get(k) for k in ("one_minus_max", "entropy", "jacobian")})
            table.append(row)
        bar.update(1)
    bar.close()

    # The article's worked example: softmax([1, 2, 3]) vs softmax([10, 20, 30]).
    example = {}
    for name, s in (("1,2,3", [1.0, 2.0, 3.0]), ("10,20,30", [10.0, 20.0, 30.0])):
        p = softmax(torch.tensor(s, dtype=torch.float64), dim=-1)
        example[name] = {"weights": p.tolist(), "entropy": float(entropy(p)),
                         "jacobian": float(jacobian_frobenius(p))}

    data = {"rows": table, "uniform": uni, "gap_density": f_gap, "example": example,
            "summary": summary(table)}
    result = ExperimentResult("saturation", params, data, tables={"saturation": table},
                              figures={"saturation": figure(table, uni, S, lang)},
                              timing={"total_s": time.perf_counter() - t0})
    result.report = report(result, lang)
    return result


def summary(table: list[dict]) -> dict:
    """Scaled vs unscaled at the largest d_k: the ratios that the report quotes."""
    d_max = max(r["d_k"] for r in table)
    at = {r["mode"]: r for r in table if r["d_k"] == d_max}
    s, u = at["scaled"], at["unscaled"]
    # The smallest d_k from which on the unscaled Jacobian is smaller than the scaled one.
    d_ks = sorted({r["d_k"] for r in table})
    jac = {(r["d_k"], r["mode"]): r["jacobian"] for r in table}
    below = [d for d in d_ks if all(jac[(e, "unscaled")] < jac[(e, "scaled")] for e in d_ks if e >= d)]
    return {"d_k": d_max, "jacobian_smaller_from": below[0] if below else None,
            "jacobian_larger_upto": max((d for d in d_ks if jac[(d, "unscaled")] > jac[(d, "scaled")]), default=None),
            "jacobian_ratio": u["jacobian"] / s["jacobian"] if s["jacobian"] > 0 else None,
            "entropy_scaled": s["entropy"], "entropy_unscaled": u["entropy"],
            "max_weight_scaled": s["max_weight"], "max_weight_unscaled": u["max_weight"],
            "saturated_frac_unscaled": u["saturated_frac"], "saturated_frac_scaled": s["saturated_frac"]}


@in_figure_rc
def figure(table: list[dict], uni: dict, S: int, lang: str = "en"):
    """Largest weight, entropy and Jacobian norm against d_k, scaled and unscaled, in ``lang``."""
    from matplotlib.figure import Figure

    T = lambda key, **kw: i18n.text("experiments." + key, lang, **kw)  # noqa: E731

    fig = Figure(figsize=(12, 3.8), layout="constrained")
    axes = fig.subplots(1, 3)
    colors = {"scaled": "tab:blue", "unscaled": "tab:red"}
    panels = (("max_weight", T("sat.fig_max"), False), ("entropy", T("sat.fig_entropy"), True),
              ("jacobian", "‖diag(p) − ppᵀ‖_F", True))
    for ax, (key, label, logy) in zip(axes, panels):
        for mode in MODES:
            rs = [r for r in table if r["mode"] == mode]
            ax.errorbar([r["d_k"] for r in rs], [r[key] for r in rs], yerr=[2 * r[key + "_se"] for r in rs],
                        fmt="o-", ms=4, color=colors[mode], label=T(mode), capsize=2)
        ax.axhline(uni[key], color="gray", ls="--", lw=1, label=T("sat.fig_uniform", value=uni[key]))
        asym_key = {"max_weight": "asym_one_minus_max", "entropy": "asym_entropy", "jacobian": "asym_jacobian"}[key]
        rs = [r for r in table if r["mode"] == "unscaled" and r["d_k"] >= 16 and r[asym_key] is not None]
        if rs:
            ys = [(1 - r[asym_key]) if key == "max_weight" else r[asym_key] for r in rs]
            ax.plot([r["d_k"] for r in rs], ys, "k:", lw=1.5, label=T("sat.fig_limit"))
        ax.set(xscale="log", xlabel="d_k", title=label)
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.suptitle(T("sat.fig_title", S=S), fontsize=10)
    return fig


def jacobian_sentence(sm: dict, T) -> str:
    """Where the unscaled Jacobian is larger and from where it is smaller (either may be absent)."""
    larger, smaller = sm["jacobian_larger_upto"], sm["jacobian_smaller_from"]
    if larger:  # "For small d_k (up to …) … — " continues into the next clause
        return T("sat.larger", d_k=larger) + (T("sat.smaller", d_k=smaller) if smaller else T("sat.larger_still"))
    return T("sat.smaller_alone", d_k=smaller) if smaller else T("sat.still")


def report(result: ExperimentResult, lang: str = "en") -> str:
    """The Markdown report in ``lang``; the numbers are the same in every language."""
    d, p = result.data, result.params
    T = lambda key, **kw: i18n.text("experiments." + key, lang, **kw)  # noqa: E731
    S = p["length"]
    uni = d["uniform"]
    rows = []
    for dk in p["d_ks"]:
        s = next(r for r in d["rows"] if r["d_k"] == dk and r["mode"] == "scaled")
        u = next(r for r in d["rows"] if r["d_k"] == dk and r["mode"] == "unscaled")
        asym = u["asym_jacobian"]
        rows.append([dk, fmt_num(s["max_weight"]), fmt_num(u["max_weight"]), fmt_num(s["entropy"]),
                     fmt_num(u["entropy"]), fmt_num(s["jacobian"]), fmt_num(u["jacobian"]),
                     fmt_num(asym) if dk >= 16 else "", f"{100 * u['saturated_frac']:.1f}%"])
    sm = d["summary"]
    ex = d["example"]
    w1 = ", ".join(f"{x:.2f}" for x in ex["1,2,3"]["weights"])
    w2 = ", ".join(f"{x:.2g}" for x in ex["10,20,30"]["weights"])
    lines = [
        T("sat.title"),
        "",
        T("sat.setup", S=S, rows=p["rows"], seed=p["seed"]),
        "",
        md_table(["d_k"] + [T("sat.col_" + c) for c in ("max_s", "max_u", "h_s", "h_u", "j_s", "j_u", "j_lim")]
                 + [T("sat.col_sat", threshold=SATURATED)], rows),
        "",
        T("sat.uniform", max_weight=uni["max_weight"], S=S, entropy=uni["entropy"], S_1=S - 1,
          jacobian=uni["jacobian"], f=d["gap_density"]),
        "",
        T("sat.summary", d_k=sm["d_k"], max_u=sm["max_weight_unscaled"], sat_pct=100 * sm["saturated_frac_unscaled"],
          threshold=SATURATED, h_u=sm["entropy_unscaled"], h_s=sm["entropy_scaled"], ratio=fmt_num(sm["jacobian_ratio"]))
        + jacobian_sentence(sm, T),
        "",
        T("sat.example", w1=w1, j1=ex["1,2,3"]["jacobian"], w2=w2, j2=ex["10,20,30"]["jacobian"]),
        "",
        "![saturation](saturation.png)",
        "",
        T("time", seconds=result.timing.get("total_s", 0.0)),
    ]
    return "\n".join(lines)
