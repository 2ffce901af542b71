"""Exact ties on the rotary path (issue 23 item 1): a query and a key at the same position are turned
by the same angle, so the turns cancel and their score is the plain dot product — a rational number
that may sit exactly half-way between two shown values. Both roundings of it are right (the
checker's rule) and explain shows it half-up (the display rule).

The references are written here: the diagonal with ``fractions`` from the numbers as written, every
score with mpmath at 60 digits (turn, then multiply; nothing from attnscope.exact).
"""

import copy
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest

import attnscope
from attnscope.explain import explain
from attnscope.explain.toy_input import ToyProblem
from attnscope.explain.toy_numbers import compute_exact

# 5 tokens, d_k = 4, base 50, half pairing, 2 query heads on 1 k/v head (head 0 worked out).
# Row 4: q·k = −8.5957, scaled −4.29785 (half-way at 4 decimals); row 2: q·k = 5.791475, scaled
# 2.8957375 (half-way at 6). Turned and multiplied at 100 digits they came out −4.2978499…9 and
# 2.8957375…02: explain printed −4.2978 and check refused −4.2979, and 2.895737.
SPEC = {
    "tokens": ["a", "b", "c", "d", "e"],
    "Q": [[0.4, 0.8, 0.5, 1.1, 0.3, -0.6, 0.2, 0.9],
          [0.2, 1.1, -0.7, 0.9, 1.0, 0.0, 0.3, -0.2],
          [1.5, 2.1, 0.3, 2.5, 0.5, 0.7, -0.1, 0.8],
          [0.6, 0.4, 1.2, -0.3, 0.2, 0.1, 0.4, 0.5],
          [1.5, -2.1, 0.3, 2, -0.5, 0.3, 0.8, 0.1]],
    "K": [[0.5, 0.9, 1.3, -0.2],
          [0.3, -0.8, 0.6, 1.2],
          [0.9, 1.2, 0.45, 0.71459],
          [1.1, 0.2, -0.5, 0.7],
          [-2.0, 2.5, 1.1, -0.33785]],
    "V": [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]],
    "rope": {"base": 50, "pairing": "half"},
    "n_heads": 2, "n_kv_heads": 1, "head": 0,
}
D = 4


def _exact():
    return compute_exact(ToyProblem.from_mapping(copy.deepcopy(SPEC), "test"))


def test_the_diagonal_is_the_dot_product_before_the_turn_exactly():
    x = _exact()
    for i in range(5):
        want = sum(Fraction(str(a)) * Fraction(str(b)) for a, b in zip(SPEC["Q"][i][:D], SPEC["K"][i]))
        assert Fraction(x["scores"][i, i]) == want, i
        assert Fraction(x["scaled"][i, i]) == want / 2, i  # 1/√4 = 1/2
    assert Fraction(x["scaled"][4, 4]) == Fraction("-4.29785")
    assert Fraction(x["scaled"][2, 2]) == Fraction("2.8957375")


def test_every_score_is_the_turned_vectors_product():
    """Off the diagonal the turns do not cancel; the scores from the offset agree with turning each
    vector at its own position and multiplying (mpmath, 60 digits)."""
    x = _exact()
    with mpmath.workdps(60):
        theta = [mpmath.mpf(50) ** (mpmath.mpf(-2 * i) / D) for i in range(D // 2)]

        def turn(v, p):  # half pairing: (i, i + d/2)
            v = [mpmath.mpf(str(a)) for a in v]
            out = list(v)
            for i in range(D // 2):
                c, s = mpmath.cos(p * theta[i]), mpmath.sin(p * theta[i])
                out[i], out[i + D // 2] = v[i] * c - v[i + D // 2] * s, v[i] * s + v[i + D // 2] * c
            return out

        for m in range(5):
            q = turn(SPEC["Q"][m][:D], m)
            for n in range(5):
                k = turn(SPEC["K"][n], n)
                want = mpmath.fsum(a * b for a, b in zip(q, k))
                assert abs(mpmath.mpf(str(x["scores"][m, n])) - want) < mpmath.mpf(10) ** -50, (m, n)


def _answer(row: int, value: str) -> dict:
    grid = [[None] * 5 for _ in range(5)]
    grid[row][row] = value
    return {"problem": copy.deepcopy(SPEC), "answers": {"scaled": grid}}


@pytest.mark.parametrize("row,value", [(4, "-4.2979"), (4, "-4.2978"), (2, "2.895738"), (2, "2.895737")])
def test_both_roundings_of_a_half_way_score_are_correct(row, value):
    r = attnscope.check(_answer(row, value))
    assert [e.verdict for e in r.entries] == ["correct"], r.render("markdown")
    assert r.entries[0].exact_value == {4: Fraction("-4.29785"), 2: Fraction("2.8957375")}[row]


@pytest.mark.parametrize("row,value", [(4, "-4.2977"), (4, "-4.2980"), (2, "2.895736"), (2, "2.895739")])
def test_a_unit_further_is_wrong(row, value):
    r = attnscope.check(_answer(row, value))
    assert [e.verdict for e in r.entries] == ["wrong"]


def test_the_learners_own_turned_vectors_are_judged_from_their_digits():
    """A learner who writes Q' and K' (rounded) and then their product: the score follows from their
    own numbers ("rounding", not "wrong"), as on every other path."""
    x = _exact()
    rnd = lambda a: str(Decimal(a).quantize(Decimal("0.0001")))  # noqa: E731  (a table's four decimals)
    q_rot = [[rnd(v) for v in row] for row in x["Q_rot"]]
    k_rot = [[rnd(v) for v in row] for row in x["K_rot"]]
    own = sum(Decimal(a) * Decimal(b) for a, b in zip(q_rot[4], k_rot[4]))  # exact: 8 decimals at most
    assert own != Decimal("-8.5957")
    grid = [[None] * 5 for _ in range(5)]
    grid[4][4] = str(own)
    spec = {"problem": copy.deepcopy(SPEC), "answers": {"Q_rot": q_rot, "K_rot": k_rot, "scores": grid}}
    r = attnscope.check(spec)
    (e,) = [e for e in r.entries if e.step == "scores"]
    assert e.verdict in ("correct", "rounding") and Fraction(e.exact_value) == Fraction("-8.5957")


def test_explain_shows_the_tie_half_up_and_says_why():
    w = explain(copy.deepcopy(SPEC))
    md = w.render("markdown")
    row_e = next(ln for ln in md.splitlines() if ln.startswith("| e |") and "-4.29" in ln)
    assert "-4.2979" in row_e and "-4.2978" not in row_e  # half-up of −4.29785 (was −4.2978)
    six = w.render("markdown", decimals=6)
    assert any(ln.startswith("| c |") and "2.895738" in ln for ln in six.splitlines())  # 2.8957375 half-up
    assert "turns cancel" in md and "s₄₄ = -4.2979" not in md  # the note shows the raw score s₄₄ = −8.5957
    assert "s₄₄ = -8.5957" in md
    assert "两次转动相互抵消" in w.render("markdown", lang="zh")


def test_the_length_kept_by_the_rotation_is_the_exact_one():
    """|(0.60003, 0.80004)| = 1.00005 exactly (3-4-5): shown half-up as 1.0001 before and after the
    turn (float64 norms are 1.0000499…, which showed 1.0000)."""
    spec = {"tokens": ["a", "b"], "Q": [[0.60003, 0.80004, 0, 0], [0, 0.60003, 0, 0.80004]],
            "K": [[1, 0, 0, 0], [0, 1, 0, 0]], "V": [[1], [2]], "rope": {"base": 50, "pairing": "half"}}
    md = explain(spec).render("markdown")
    assert "|q₁| = 1.0001 before and 1.0001 after" in md and "1.0000 before" not in md


def test_the_note_holds_for_the_scoring():
    """Cosine's unit vectors turn as the vectors do (the note names q̂, k̂); qknorm subtracts each
    turned vector's mean, which does not commute with the turn: no note."""
    cos = explain(dict(copy.deepcopy(SPEC), scoring="cosine")).render("markdown")
    assert "the dot product of q̂₄ and k̂₄ before the turn" in cos
    assert "turns cancel" not in explain(dict(copy.deepcopy(SPEC), scoring="qknorm")).render("markdown")
