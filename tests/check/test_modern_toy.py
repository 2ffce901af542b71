"""check on a toy input with rotary positions, QK-norm and shared heads: rotated q/k, scores and
weights judged as every step is (correct, rounding, carried, wrong), against the hand computation
of tests/explain/test_modern_toy.py (NumPy float64 written there, not attnscope's)."""

import copy

import numpy as np

import attnscope
from tests.explain.reference import half_up
from tests.explain.test_modern_toy import REF, SPEC


def _written(m, d=4):
    return [[half_up(x, d) for x in row] for row in np.atleast_2d(m)]


def test_right_answers_are_correct():
    ans = {"Q_normed": _written(REF["Q_normed"]), "k_rot": _written(REF["K_rot"]), "q_rot": _written(REF["Q_rot"]),
           "scores": _written(REF["scores"]), "weights": _written(REF["weights"]), "output": _written(REF["output"])}
    r = attnscope.check({"problem": copy.deepcopy(SPEC), "answers": ans})
    assert r.ok and r.counts()["wrong"] == 0 and r.counts()["correct"] == 4 * 4 * 5 + 4 * 2
    assert r.answered == ["Q_normed", "Q_rot", "K_rot", "scores", "weights", "output"]


def test_a_wrong_rotation_is_found_and_carried():
    qr = REF["Q_rot"].copy()
    qr[1, 0] += 0.5  # a slip in pair 0 of query 1
    # the learner then computes the scores of row 1 from their own (written) rotated q and k, correctly
    as_read = lambda m: np.array(_written(m), dtype=float)  # noqa: E731
    scores = REF["scores"].copy()
    scores[1] = as_read(qr)[1] @ as_read(REF["K_rot"]).T
    ans = {"Q_rot": _written(qr), "K_rot": _written(REF["K_rot"]), "scores": _written(scores)}
    r = attnscope.check({"problem": copy.deepcopy(SPEC), "answers": ans})
    assert not r.ok and r.first_wrong == ("Q_rot", "1 (爱)")
    wrong = r.by_verdict("wrong")
    assert [(e.step, e.row, e.col) for e in wrong] == [("Q_rot", 1, 0)]
    carried = r.by_verdict("carried")
    assert {(e.step, e.row) for e in carried} == {("scores", 1)} and len(carried) == 4
    assert all(e.sources == ["Q_rot"] for e in carried)
    md = r.render("markdown")
    assert "Q_rot, row 1 (爱), column 0" in md and "it follows from your Q_rot" in md


def test_the_partner_of_a_pair_only():
    """A wrong x_a makes the learner's x'_a and x'_b of that pair follow from it, not the other pair."""
    qn = REF["Q_normed"].copy()
    qn[2, 0] = 2.0  # wrong normalised q of row 2, feature 0
    turn = REF["turn"]
    qr = np.array([turn(qn[i], i) for i in range(4)])  # rotated correctly from the wrong input
    r = attnscope.check({"problem": copy.deepcopy(SPEC), "answers": {"Q_normed": _written(qn), "Q_rot": _written(qr)}})
    carried = {(e.row, e.col) for e in r.by_verdict("carried")}
    assert carried == {(2, 0), (2, 1)}  # pair 0 is features 0 and 1 (adjacent pairing)
    assert {(e.step, e.row, e.col) for e in r.by_verdict("wrong")} == {("Q_normed", 2, 0)}
