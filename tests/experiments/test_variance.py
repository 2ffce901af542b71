"""Experiment "variance": the sampled Var(q·k) follows d_k, and ≈ 1 after ÷√d_k."""

import math

import pytest
import torch

from attnscope.errors import ConfigError
from attnscope.experiments import variance


def test_entry_distributions_have_mean_0_variance_1_and_the_stated_fourth_moment():
    g = torch.Generator().manual_seed(1)
    for dist, m4 in variance.DISTRIBUTIONS.items():
        x = variance.sample_entries(dist, (400_000,), g)
        assert abs(float(x.mean())) < 0.01, dist
        assert abs(float(x.var()) - 1.0) < 0.01, dist
        assert abs(float((x ** 4).mean()) - m4) < 0.05 * m4, dist


def test_standard_error_formula_matches_the_spread_of_repeated_estimates():
    # The SE of s²/d_k comes from the fourth moment of q·k; check it against 200 repetitions.
    g = torch.Generator().manual_seed(2)
    d, n = 8, 500
    for dist, m4 in variance.DISTRIBUTIONS.items():
        ratios = torch.tensor([float(variance.sample_dot_products(dist, d, n, g).var()) / d for _ in range(200)])
        se = variance.relative_standard_error(d, n, m4)
        assert abs(float(ratios.std()) / se - 1.0) < 0.2, (dist, float(ratios.std()), se)


def test_quick_run_agrees_with_theory_within_five_standard_errors():
    res = variance.run(quick=True, seed=0, progress=False)
    rows = res.data["rows"]
    assert {r["d_k"] for r in rows} == set(variance.DEFAULT_D_KS)
    for r in rows:
        assert abs(r["z"]) < 5, r
        # the two views of the same number: Var(q·k/√d_k) = Var(q·k)/d_k
        assert math.isclose(r["var_scaled"], r["var_unscaled"] / r["d_k"], rel_tol=1e-12)
    # d_k = 1024 vs 2: the unscaled variance grows ~512-fold, the scaled one does not
    normal = {r["d_k"]: r for r in rows if r["distribution"] == "normal"}
    assert 400 < normal[1024]["var_unscaled"] / normal[2]["var_unscaled"] < 650
    h = res.data["histogram"]
    assert abs(h["var_unscaled"] / 256 - 1) < 0.1 and abs(h["var_scaled"] - 1) < 0.1
    assert set(res.figures) == {"variance", "histograms"}
    res.close_figures()


def test_rademacher_at_d_k_1_has_a_standard_error_and_a_finite_z():
    # q·k = ±1 exactly: s² = N/(N−1)·(1 − m²) with m the mean of N signs, E m² = 1/N,
    # E m⁴ = (3N² − 2N)/N⁴, so Var(s²) = 2/(N(N−1)) exactly (the first-order formula gave 0 and
    # the run stopped with ZeroDivisionError).
    n = 1000
    res = variance.run(d_ks=[1, 2], distributions=["rademacher"], samples=n, hist_n=4, seed=0, progress=False)
    r = res.data["rows"][0]
    assert r["rel_se"] == pytest.approx(math.sqrt(2 / (n * (n - 1))), rel=1e-12)
    assert math.isfinite(r["z"]) and abs(r["z"]) < 5
    res.close_figures()


def test_standard_error_is_the_exact_one_for_n_samples():
    # Var(s²) = μ₄/N − σ⁴(N−3)/(N(N−1)) for the unbiased s² of N iid values (σ² = d_k, μ₄ = E[(q·k)⁴]);
    # at N = 5, d_k = 1, normal: μ₄ = E[q⁴]E[k⁴] = 3·3 = 9, so Var(s²) = 9/5 − 2/20 = 1.7 (first order: 1.6).
    assert variance.relative_standard_error(1, 5, 3.0) == pytest.approx(math.sqrt(1.7), rel=1e-12)


def test_one_histogram_row_is_a_clear_error_not_a_nan_variance():
    # Q, K of 1 × 256 give one score, whose sample variance is undefined (torch gave NaN).
    with pytest.raises(ConfigError, match="hist_n must be at least 2"):
        variance.run(hist_n=1, d_ks=[4], samples=100, progress=False)


def test_a_histogram_too_large_for_memory_is_refused_before_any_work():
    # hist_n = 10⁵ would be two 10⁵ × 10⁵ float64 matrices, 80 GB each.
    with pytest.raises(ConfigError, match="hist_n must be at most"):
        variance.run(hist_n=10**5, d_ks=[4], samples=100, progress=False)


def test_an_empty_list_of_distributions_is_refused_not_read_as_all_of_them():
    # distributions=[] (the CLI's '--distributions ,') ran all three, as if none had been given;
    # an empty --tasks or --variants of the training experiment is refused with this message
    with pytest.raises(ConfigError, match="distribution must not be empty; choose from normal, uniform, rademacher"):
        variance.run(quick=True, progress=False, d_ks=[2], samples=10, hist_n=2, distributions=[])


def test_the_report_has_one_table_per_distribution_under_its_own_name():
    # Without normal entries the report put every distribution's rows in one table headed by the
    # first: the rademacher rows of d_k = 2, 4 read as a second pair of uniform rows. The how-to
    # (docs/howto/run-an-experiment.md) says the report has the table for each distribution.
    res = variance.run(progress=False, d_ks=[2, 4], samples=100, hist_n=2, distributions=["uniform", "rademacher"])
    res.close_figures()
    sections = res.report.split("## Entries ~ ")[1:]
    assert [s.split("\n")[0] for s in sections] == ["uniform", "rademacher"]
    for section, dist in zip(sections, ("uniform", "rademacher")):
        cells = [line.split(" | ") for line in section.split("\n\n")[1].splitlines()[2:]]
        want = [r for r in res.data["rows"] if r["distribution"] == dist]
        assert [int(c[0].strip("| ")) for c in cells] == [2, 4]
        # the sampled Var(q·k) of this distribution, as printed (4 significant digits)
        assert [c[1] for c in cells] == [f"{r['var_unscaled']:.4g}" for r in want]
