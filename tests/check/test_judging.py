"""The judging rules: decimals as written, rounding, carried errors, blanks, masked entries."""

import math
import re
from decimal import Decimal

import numpy as np
import pytest

from attnscope import AttnscopeError
from attnscope.check import check, judge
from attnscope.explain.numbers import parse_written as W

ROOT2 = math.sqrt(2) / 2  # 0.70710678…


@pytest.mark.parametrize("text, verdict", [
    ("0.71", "correct"), ("0.707", "correct"), ("0.7", "correct"), ("0.7071", "correct"),
    ("0.70", "wrong"), ("0.708", "wrong"), ("1", "correct"), ("0.71000", "wrong"),
])
def test_judged_at_the_written_decimals(text, verdict):
    assert judge(W(text), ROOT2, ROOT2, False) == verdict


def test_ties_may_round_either_way_and_integers_are_exact():
    assert judge(W("0.083"), 0.0825, 0.0825, False) == "correct"
    assert judge(W("0.082"), 0.0825, 0.0825, False) == "correct"
    assert judge(W("5"), 4.0, 4.0, False) == "wrong"
    assert judge(W("5"), 4.0, 5.0, True) == "carried"


def test_rounding_needs_correct_inputs_and_half_a_unit():
    # exact 0.3057; from the learner's rounded inputs 0.3062
    assert judge(W("0.3062"), 0.30570, 0.30620, False) == "rounding"
    assert judge(W("0.3070"), 0.30570, 0.30620, False) == "wrong"
    assert judge(W("0.3063"), 0.30570, 0.30625, True) == "carried"     # within one unit of their own numbers
    assert judge(W("0.3062"), 0.30570, 0.30625, True) == "carried"
    assert judge(W("0.3090"), 0.30570, 0.30625, True) == "wrong"


def _three(answers):
    return check({"problem": {"example": "three-tokens"}, "answers": answers})


def test_carried_through_unanswered_steps_and_blanks():
    # a wrong Q row 1 ([1, 2] instead of [1, 1]); scores not written; scaled row 1 follows from it
    r = _three({"Q": [[1, 0], [1, 2], [2, 1]], "scaled": [None, [3.54, 1.41, 4.95], [2.83, 0.71, ~0 if False else None]]})
    wrong = [(e.step, e.row, e.col) for e in r.by_verdict("wrong")]
    assert wrong == [("Q", 1, 1)]
    carried = r.by_verdict("carried")
    assert [(e.step, e.row) for e in carried] == [("scaled", 1)] * 3 and carried[0].sources == ["Q"]
    assert r.blanks["scaled"] == 3 + 1 and r.first_wrong == ("Q", "1 (爱)")


def test_rounded_exponentials_make_the_sum_a_rounding_not_an_error():
    # exponentials to 1 decimal (all correct); their sums and the weights follow from them, not from the
    # exact values (5.0562 → 5.1, but 2.0 + 1.0 + 2.0 = 5.0)
    r = _three({"exp": [[2.0, 1.0, 2.0], [8.3, 2.0, 16.9], [16.9, 2.0, 34.3]],
                "sums": [5.0, 27.2, 53.2], "weights": [["0.4000", "0.2000", "0.4000"], None, None]})
    assert r.counts() == {"correct": 9, "rounding": 6, "carried": 0, "wrong": 0}
    assert not r.ok and r.missing == 6  # weights rows 1 and 2 left empty: missing, not right
    sums = [e for e in r.by_verdict("rounding") if e.step == "sums"]
    assert len(sums) == 3 and sums[0].sources == ["exp"]
    weights = [e for e in r.by_verdict("rounding") if e.step == "weights"]
    assert len(weights) == 3 and set(weights[0].sources) == {"exp", "sums"}
    # a sum that follows from nothing the learner wrote is simply wrong
    r = _three({"sums": [5.0, 27.2, 53.2]})
    assert len(r.by_verdict("wrong")) == 3


def test_masked_entries_are_minus_infinity():
    prob = {"example": "three-tokens"}
    from attnscope.explain import toy_problem
    p = {**{k: v for k, v in __import__("attnscope.examples", fromlist=["THREE_TOKENS"]).THREE_TOKENS.items()
            if k in ("X", "W_Q", "W_K", "W_V", "tokens")}, "causal": True}
    assert toy_problem(p).causal
    r = check({"problem": p, "answers": {"scaled": [[0.71, "-inf", "-inf"], [2.12, 0.71, "−∞"], [2.83, 0.71, 3.54]],
                                           "weights": [[1, 0, 0], None, None]}})
    assert not r.by_verdict("wrong") and not r.by_verdict("carried"), r.render("markdown")
    assert r.missing == 6 and not r.ok  # weights rows 1 and 2 left empty
    r = check({"problem": p, "answers": {"scaled": [[0.71, 0, "-inf"], None, None]}})
    assert [(e.step, e.col) for e in r.by_verdict("wrong")] == [("scaled", 1)]
    assert prob  # the example itself has no mask


def test_yaml_json_toml_keep_the_written_decimals(tmp_path):
    body = {"yaml": "problem:\n  example: three-tokens\nanswers:\n  scaled: [[0.710, 0, 0.71], ~, ~]\n",
            "json": '{"problem": {"example": "three-tokens"}, "answers": {"scaled": [[0.710, 0, 0.71], null, null]}}',
            "toml": '[problem]\nexample = "three-tokens"\n[answers]\nscaled = [[0.710, 0, 0.71], [1, 1, 1], [1, 1, 1]]\n'}
    for ext, text in body.items():
        f = tmp_path / f"a.{ext}"
        f.write_text(text, encoding="utf-8")
        r = check(str(f))
        first = [e for e in r.entries if e.row == 0]
        assert [e.decimals for e in first] == [3, 0, 2], ext
        assert [e.verdict for e in first] == ["wrong", "correct", "correct"], ext     # 0.710 ≠ 0.707


def test_python_floats_are_read_by_their_shortest_form():
    r = _three({"weights": [[0.4000, 0.2000, 0.4000], None, None]})       # 0.4000 is the float 0.4: 1 decimal
    assert r.counts()["correct"] == 3 and r.missing == 6 and {e.decimals for e in r.entries} == {1}
    r = _three({"weights": [["0.4000", "0.2000", "0.4000"], None, None]})  # strings keep the zeros
    assert len(r.by_verdict("wrong")) == 3


def test_aliases_and_library_floats():
    r = check({"softmax": [[0.4011, 0.1978, 0.4011], None, None], "o": [[1.6044, 0.5989], None, None]},
              problem={"example": "three-tokens"})
    assert r.counts()["correct"] == 5 and r.missing == 6 + 4 and r.answered == ["weights", "output"]


def test_python_ints_are_written_without_decimals():
    # softmax([1, 2, 3]) = [0.0900, 0.2447, 0.6652] (e^k / Σ, math): 0, 0, 1 are right to a whole number.
    # The ints were read as the floats 0.0, 0.0, 1.0 (1 decimal) and all three judged wrong.
    e = [math.exp(k) for k in (1, 2, 3)]
    assert [round(x / sum(e)) for x in e] == [0, 0, 1]
    for ints in ([0, 0, 1], np.array([0, 0, 1])):
        r = check({"problem": {"scores": [1, 2, 3], "d_k": 1}, "answers": {"weights": ints}})
        assert [(x.written, x.decimals, x.verdict) for x in r.entries] == [("0", 0, "correct"), ("0", 0, "correct"),
                                                                            ("1", 0, "correct")]
    # a NumPy matrix is read like a list of rows (it was refused: 'expected 3 rows of 2 numbers, got ndarray')
    r = check({"problem": {"example": "three-tokens"}, "answers": {"Q": np.array([[1, 0], [1, 1], [2, 1]])}})
    assert r.ok and {(x.written, x.decimals) for x in r.entries} == {("0", 0), ("1", 0), ("2", 0)}
    # an int beyond float64 is refused in one sentence, as 1e400 written in a file (it was an OverflowError)
    with pytest.raises(AttnscopeError, match=re.escape("key weights, entry 2 (from 0): 1" + "0" * 400 + " is beyond")):
        check({"problem": {"scores": [1, 2, 3], "d_k": 1}, "answers": {"weights": [0, 0, 10 ** 400]}})


def test_full_width_numbers_from_a_chinese_input_method(tmp_path):
    # a Chinese input method in full-width mode types the point, the minus and the exponent full width
    # too: －２．１２ must read as -2.12 with 2 decimals, as ０.７１ (full-width digits) already did
    f = tmp_path / "a.yaml"
    f.write_text("problem:\n  example: three-tokens\nanswers:\n"
                 "  scaled: [[０．７１, ０, ７．０７１ｅ－１], ~, ~]\n  scores: [[1, 0, 1], [3, 1, 4], [4, 1, －５]]\n",
                 encoding="utf-8")
    r = check(str(f))
    row = [e for e in r.entries if e.step == "scaled"]
    assert [(e.decimals, e.verdict) for e in row] == [(2, "correct"), (0, "correct"), (4, "correct")]
    assert row[2].number.scientific and W("－２．１２").exact == Decimal("-2.12")
    bad = r.by_verdict("wrong")
    assert [(e.step, e.row, e.col, e.value) for e in bad] == [("scores", 2, 2, -5.0)]  # the exact score is 5


@pytest.mark.parametrize("row, sep", [("[0.3057，0.7506, 0.1]", "，"), ("[0.3、0.3、0.4]", "、"), ("[0.1, '0.2；0.7']", "；")])
def test_a_full_width_comma_is_named_not_counted(tmp_path, row, sep):
    # YAML reads "0.3057，0.7506" as one text: the row was "expected 3 numbers, got 2"
    f = tmp_path / "a.yaml"
    f.write_text(f"problem:\n  example: three-tokens\nanswers:\n  weights: [{row}, ~, ~]\n", encoding="utf-8")
    from attnscope.i18n import error_message
    with pytest.raises(AttnscopeError) as e:
        check(str(f))
    assert f"holds the full-width '{sep}'" in error_message(e.value, "en")
    assert f"全角“{sep}”" in error_message(e.value, "zh")


def test_a_full_width_comma_on_the_command_line_is_named(capsys):
    from attnscope.cli import main
    assert main(["explain", "-X", "1，0;0,1", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1"]) == 2
    assert "'1，0' holds the full-width '，'" in capsys.readouterr().err
    assert main(["explain", "--scores", "1,2；3", "--dk", "4"]) == 2
    assert "'2；3' holds the full-width '；'" in capsys.readouterr().err
