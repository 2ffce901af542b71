"""The first article's row of 喜, from its raw scores."""

import math

import numpy as np
import pytest

from attnscope.explain import explain

SCORES = [15.3, 22.7, 18.2, 2.1, 1.8, 3.2, 2.9, 5.6, 4.1]
TOKENS = ["我", "喜", "歡", "人", "工", "智", "能", "CLS", "SEP"]


def test_row_of_xi_matches_an_independent_softmax():
    w = explain(scores=SCORES, tokens=TOKENS, d_k=64, query=1)
    scaled = [s / 8 for s in SCORES]
    e = [math.exp(s) for s in scaled]
    total = sum(e)
    np.testing.assert_allclose(w.values["scaled"], scaled, rtol=1e-15)
    np.testing.assert_allclose(w.values["exp"], e, rtol=1e-15)
    assert w.values["sum"] == pytest.approx(total, rel=1e-15)
    np.testing.assert_allclose(w.values["weights"], [x / total for x in e], rtol=1e-14)
    md = w.render("markdown", decimals=2)
    # the article's rounded numbers hold: 6.77, 17.07, 0.16, 0.40, 0.23 …; its sum 42.73 is really 42.74
    for want in ("| 0 | 我 | 6.77 | 0.16 | 15.8% |", "| 1 | 喜 | 17.07 | 0.40 | 40.0% |", "= 42.74"):
        assert want in md
    assert "The row of 喜 worked out" in md


def test_row_with_values_writes_the_weighted_sum():
    V = [[0.31, -0.12, 0.45, 1.0], [0.42, 0.15, -0.08, 2.0], [0.05, 0.28, -0.18, 3.0]]
    w = explain(scores=[15.3, 22.7, 18.2], tokens=["我", "喜", "歡"], d_k=64, values=V, query=1, dims=2)
    p = np.exp(np.array([15.3, 22.7, 18.2]) / 8)
    p /= p.sum()
    np.testing.assert_allclose(w.values["output"], (p @ np.array(V))[:2], rtol=1e-14)
    np.testing.assert_allclose(w.values["output_full"], p @ np.array(V), rtol=1e-14)
    md = w.render("markdown")
    assert "first 2 of 4 dimensions" in md and "z₁ = " in md and ", …]" in md


def test_large_scores_are_shown_shifted():
    w = explain(scores=[800.0, 790.0, 0.0], d_k=1)
    assert w.meta["exp_shift"] == 800.0
    np.testing.assert_allclose(w.values["exp"], [1.0, math.exp(-10), 0.0], atol=1e-300)
    np.testing.assert_allclose(w.values["weights"][:2], [1 / (1 + math.exp(-10)), math.exp(-10) / (1 + math.exp(-10))])
    md = w.render("markdown")
    assert "m = 800" in md and "e^(s' - m)" in md


def test_very_negative_scores_are_shown_shifted_too():
    # e^-1000 underflows: the row showed e^s' = 0, 0 and Σ = 0, then p = 0.7311, 0.2689 — numbers that
    # do not follow from what is shown. Shifted by m = -1000 they do: e^0 = 1, e^-1 and 1 / (1 + e^-1).
    w = explain(scores=[-1000.0, -1001.0], d_k=1)
    assert w.meta["exp_shift"] == -1000.0
    np.testing.assert_allclose(w.values["exp"], [1.0, math.exp(-1)], rtol=1e-15)
    np.testing.assert_allclose(w.values["weights"], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])
    md = w.render("markdown")
    assert "m = -1000" in md and "e^(s' - m)" in md and "beyond ±50" in md
    assert explain(scores=[-50.0, -51.0], d_k=1).meta["exp_shift"] == 0.0  # within ±50: e^s' as is


def test_the_probabilities_table_names_the_shifted_exponentials_it_shows():
    """Above 50 the row shows e^(s' − m); the probabilities' table headed that column e^s' and
    showed 1 for e^400 (the exponentials step and the summary said e^(s' − m))."""
    md = explain(scores=[400, 390, 100], d_k=1).render("markdown")
    step = md.split("## Step 5", 1)[1].split("## Step 6", 1)[0]
    assert "| position | key token | e^(s' - m) | probability p | share |" in step
    assert f"| 1 | k1 | {math.exp(390 - 400):.4e} |".replace("e-05", "e-5") in step  # e^(390 − 400), by hand


@pytest.mark.parametrize("scores, d_k, decimals", [([4, 1, 5], 2, 4), ([1, 0, 1], 2, 4), (SCORES, 64, 2),
                                                   (SCORES, 64, 4), ([3, 1, 4], 2, 4)])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_probabilities_step_says_when_its_shown_numbers_do_not_add_up_to_1(scores, d_k, decimals, lang):
    """"Together: 1.0000" under 0.3177 + 0.0381 + 0.6443 (= 1.0001): the step said nothing, where
    every other line whose shown numbers miss their shown result carries the rounding note."""
    from decimal import Decimal

    from .reference import half_up
    e = [math.exp(s / math.sqrt(d_k)) for s in scores]
    shown = sum(Decimal(half_up(x / sum(e), decimals)) for x in e)  # what a learner adds up
    md = explain(scores=scores, d_k=d_k).render("markdown", lang=lang, decimals=decimals)
    step = next(s for s in md.split("\n## ") if s.split("\n")[0].endswith("p_j = e_j / Σ"))  # the step's heading
    note = "do not give the result shown" if lang == "en" else "得不到显示的结果"
    assert (note in step) == (shown != 1), (shown, step)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("n", [4, 5, 9])
def test_the_summary_says_when_it_names_only_the_four_largest_weights(lang, n):
    """The result's line named the four largest weights of a longer row as if they were the whole
    row (zh '1:喜 的注意力分配：…' adding up to 89%); it now says they are the four largest and what
    the other keys share. Shares from an independent float64 softmax."""
    w = explain(scores=SCORES[:n], tokens=TOKENS[:n], d_k=64, query=1)
    e = [math.exp(s / 8) for s in SCORES[:n]]
    p = [x / sum(e) for x in e]
    top = sorted(range(n), key=lambda j: -p[j])[:4]
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    rest = pct(1 - sum(p[j] for j in top))
    if lang == "en":
        shares = ", ".join(f"{pct(p[j])} from {j}:{TOKENS[j]}" for j in top)
        tail = {4: ".", 5: f" (its four largest weights), and {rest} on the fifth key.",
                9: f" (its four largest weights), and {rest} on the other 5 keys."}[n]
        line = f"1:喜 puts its attention on {shares}{tail}"
    else:
        shares = "、".join(f"{j}:{TOKENS[j]} {pct(p[j])}" for j in top)
        line = {4: f"1:喜 的注意力分配：{shares}。", 5: f"1:喜 的注意力分配，最大的四项：{shares}；剩下的 1 个键占 {rest}。",
                9: f"1:喜 的注意力分配，最大的四项：{shares}；其余 5 个键共占 {rest}。"}[n]
    assert line in w.render("markdown", lang=lang).splitlines()
