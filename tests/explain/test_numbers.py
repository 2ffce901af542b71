import math

import pytest

from attnscope.explain.numbers import fmt, parse_written, round_half_up, short, show


@pytest.mark.parametrize("x, d, want", [
    (0.0825, 3, "0.083"),        # binary 0.0825 is 0.08249999…; learners round the decimal half-up
    (2.5, 0, "3"), (-2.5, 0, "-3"), (0.30569525, 4, "0.3057"), (1.0, 4, "1.0000"),
    (-0.00001, 2, "-0.00"),
])
def test_round_half_up_on_the_decimal_form(x, d, want):
    assert f"{round_half_up(x, d):f}" == want


def test_show_integers_tiny_big_and_special():
    assert fmt(3.0, 4) == "3" and fmt(3.0, 4, as_int=False) == "3.0000"
    assert fmt(-0.00001, 2, as_int=False) == "-1.00e-5"          # non-zero never shows as 0.00
    assert fmt(9.357620e-14, 4) == "9.3576e-14"
    assert fmt(4.85165195e8, 2) == "4.85e8"
    assert fmt(9.99996e6, 3) == "1.000e7"                           # mantissa renormalised
    assert fmt(-1e-30 * 0, 3, as_int=False) == "0.000"              # no "-0.000"
    assert show(-math.inf, 2).plain() == "−∞" and show(-math.inf, 2).tex() == r"-\infty"
    assert show(1.5e-9, 3).tex() == r"1.500\times10^{-9}"
    assert short(15.3) == "15.3" and short(-10.0) == "-10"


@pytest.mark.parametrize("text, value, decimals", [
    ("0.710", 0.71, 3), ("5", 5.0, 0), ("1.2e-3", 0.0012, 4), ("−0.5", -0.5, 1), ("+2.00", 2.0, 2),
    ("5e2", 500.0, -2),
])
def test_parse_written_keeps_the_written_precision(text, value, decimals):
    w = parse_written(text)
    assert w.value == pytest.approx(value) and w.decimals == decimals


def test_parse_written_infinity_and_garbage():
    assert parse_written("-inf").value == -math.inf and parse_written("−∞").value == -math.inf
    assert parse_written("abc") is None and parse_written("nan") is None


def test_a_value_just_below_the_last_place_reads_like_its_neighbours():
    from attnscope.explain.numbers import show
    # alone, -0.000022839 at 4 decimals keeps its digits; among 4-decimal numbers it is 0.0000
    assert show(-2.2839e-5, 4).plain() == "-2.2839e-5"
    assert show(-2.2839e-5, 4, in_group=True).plain() == "0.0000"
    assert show(4.8776e-5, 4, in_group=True).plain() == "0.0000"
    assert show(6.2e-5, 4, in_group=True).plain() == "0.0001"
    # far below the last place the power of ten is the information (a saturated softmax)
    assert show(9.3576e-14, 4, in_group=True).plain() == "9.3576e-14"
    assert show(3.059e-7, 4, in_group=True).plain() == "3.0590e-7"


def test_vectors_in_a_worked_calculation_use_fixed_decimals_for_near_zero_entries():
    from attnscope.exercise import make_exercise
    md = make_exercise(tokens=3, dim=2, seed=35, style="int", lang="en").solution().render("markdown")
    assert "= [0.0283, 0.0000, 0.9716]" in md and "| I | 0.0283 | 0.0000 | 0.9716 |" in md
    assert "e-5" not in md
