"""`check` on the articles' own numbers finds the slips of the three-token article."""

import json

import numpy as np
import pytest

from attnscope.check import check
from attnscope.cli import main

from ..explain.reference import THREE, attention_by_hand, half_up

REF = attention_by_hand(**THREE)


@pytest.fixture(scope="module")
def report():
    return check(example="three-tokens-article")


def test_wrong_softmax_rows_1_and_2_are_the_first_mistake(report):
    wrong = {(e.step, e.row, e.col) for e in report.by_verdict("wrong")}
    assert wrong == {("weights", r, c) for r in (1, 2) for c in range(3)}
    assert report.first_wrong == ("weights", "1 (爱)") and not report.ok
    for e in report.by_verdict("wrong"):
        assert e.exact == pytest.approx(REF["weights"][e.row][e.col], abs=1e-15)


def test_outputs_1_and_2_are_carried_not_new(report):
    carried = {(e.step, e.row, e.col): e for e in report.by_verdict("carried")}
    assert set(carried) == {("output", 1, 1), ("output", 2, 0), ("output", 2, 1)}
    for e in carried.values():
        assert e.sources == ["weights"] and e.exact == pytest.approx(REF["output"][e.row][e.col], abs=1e-15)
    # recomputed from the article's own weights: 0.075 + 0.636 = 0.711, 2·0.288 + 2·0.655 = 1.886
    assert carried[("output", 1, 1)].recomputed == pytest.approx(0.711)
    assert carried[("output", 2, 0)].recomputed == pytest.approx(1.886)
    # output row 1, column 0 (1.85) is right at the 2 decimals written
    o21 = next(e for e in report.entries if (e.step, e.row, e.col) == ("output", 1, 0))
    assert o21.verdict == "correct" and o21.decimals == 2
    assert all(e.verdict == "correct" for e in report.entries if e.step in ("Q", "K", "V", "scaled"))


def test_report_names_the_correct_values(report):
    md = report.render("markdown")
    for r, c in ((1, 0), (1, 2), (2, 0), (2, 1), (2, 2)):
        assert f"correct to 3 decimals: {half_up(REF['weights'][r][c], 3)}" in md
    assert "output, row 1 (爱), column 1: you wrote 0.711; correct: 0.694" in md
    assert "The calculation first goes wrong at weights, row 1 (爱)." in md
    zh = report.render("markdown", lang="zh")
    assert "计算第一次出错在注意力权重（weights），第 1 (爱) 行。" in zh and "这不是新的错误" in zh


def test_cli_exit_codes_and_json(capsys):
    assert main(["check", "--example", "three-tokens-article"]) == 1
    out = capsys.readouterr().out
    assert "✗ weights, row 2 (你), column 1 (爱): you wrote 0.057; correct to 3 decimals: 0.038" in out
    assert main(["check", "--example", "three-tokens-article", "-f", "json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["counts"] == {"correct": 33, "rounding": 0, "carried": 3, "wrong": 6}
    assert d["first_wrong"] == {"step": "weights", "row": "1 (爱)"}
    assert main(["check", "--example", "xi-row-article", "--lang", "zh"]) == 0
    assert "全部正确" in capsys.readouterr().out


def test_row_of_xi_sum_is_accepted_as_rounding():
    r = check(example="xi-row-article")
    assert r.ok and r.first_wrong is None
    (e,) = r.by_verdict("rounding")
    assert e.step == "sum" and e.written == "42.73" and e.sources == ["exp"]
    e_exact = np.exp(np.array([15.3, 22.7, 18.2, 2.1, 1.8, 3.2, 2.9, 5.6, 4.1]) / 8).sum()
    assert e.exact == pytest.approx(e_exact, rel=1e-15) and half_up(e_exact, 2) == "42.74"
