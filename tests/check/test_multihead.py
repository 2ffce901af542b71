"""check on multi-head problems: every step judged (correct, carried, wrong) against the numbers
of torch.nn.MultiheadAttention / SDPA and NumPy written here (tests/explain/test_multihead.py),
never against attnscope's own output; a slip reaches exactly the heads and entries that read it."""

import copy

import numpy as np
import pytest

import attnscope
from attnscope.errors import InputError
from attnscope.examples import GROUPED_QUERY, MULTI_HEAD
from tests.explain.reference import half_up
from tests.explain.test_multihead import torch_gqa, torch_mha

X = np.array(MULTI_HEAD["X"], float)
FUSED = X @ np.array(MULTI_HEAD["W_QKV"], float)  # (3, 12), exact: small integers and halves
W, Z, Y = torch_mha(MULTI_HEAD)


def _w(m, d=4):
    return [[half_up(x, d) for x in row] for row in np.atleast_2d(m)]


def _read(rows):
    return np.array([[float(x) for x in r] for r in rows])


def test_right_answers_are_correct_in_every_form():
    concat = np.concatenate(list(Z), axis=1)
    ans = {"QKV": _w(FUSED), "K": _w(FUSED[:, 4:8]),
           "head 0": {"weights": _w(W[0]), "output": _w(Z[0])},
           "heads": {1: {"softmax": _w(W[1])}},
           "output[1]": _w(Z[1]), "concat": _w(concat), "y": _w(Y)}
    r = attnscope.check({"problem": {"example": "multi-head"}, "answers": ans})
    assert r.ok and r.counts()["wrong"] == 0
    assert r.answered == ["QKV", "K", "weights[0]", "output[0]", "weights[1]", "output[1]", "concat", "projected"]
    assert r.counts()["correct"] == 36 + 12 + 9 + 6 + 9 + 6 + 12 + 12


def test_a_slip_in_one_heads_query_is_carried_into_that_head_only():
    fused = FUSED.copy()
    fused[1, 3] += 1.0  # feature 1 of query head 1, token 爱
    q1 = _read(_w(fused[:, 2:4]))
    k = FUSED[:, 4:8]
    scores1 = q1 @ k[:, 2:4].T  # the learner's scores of head 1, from their own (wrong) q
    ans = {"QKV": _w(fused), "scores[0]": _w(FUSED[:, 0:2] @ k[:, 0:2].T), "scores[1]": _w(scores1)}
    r = attnscope.check({"problem": {"example": "multi-head"}, "answers": ans})
    assert r.first_wrong == ("QKV", "1 (爱)")
    assert [(e.step, e.row, e.col) for e in r.by_verdict("wrong")] == [("QKV", 1, 3)]
    carried = r.by_verdict("carried")
    assert {(e.step, e.row) for e in carried} == {("scores[1]", 1)} and all(e.sources == ["QKV"] for e in carried)
    assert r.counts("scores[0]") == {"correct": 9, "rounding": 0, "carried": 0, "wrong": 0}


def test_grouped_query_a_slip_in_a_shared_key_reaches_both_heads_that_read_it():
    Xg = np.array(GROUPED_QUERY["X"], float)
    Q, K = Xg @ np.array(GROUPED_QUERY["W_Q"], float), Xg @ np.array(GROUPED_QUERY["W_K"], float)
    Kw = K.copy()
    Kw[0, 0] += 2.0  # key/value head 0, token 我: read by query heads 0 and 1
    scores = {h: Q[:, 2 * h:2 * h + 2] @ Kw[:, 2 * (h // 2):2 * (h // 2) + 2].T for h in range(4)}
    ans = {"K": _w(Kw), **{f"scores[{h}]": _w(scores[h]) for h in range(4)}}
    r = attnscope.check({"problem": {"example": "grouped-query"}, "answers": ans})
    assert [(e.step, e.row, e.col) for e in r.by_verdict("wrong")] == [("K", 0, 0)]
    carried = {e.step for e in r.by_verdict("carried")}
    assert carried == {"scores[0]", "scores[1]"}  # heads 2 and 3 read k/v head 1: untouched
    for h in (2, 3):
        assert r.counts(f"scores[{h}]")["carried"] == 0 and r.counts(f"scores[{h}]")["wrong"] == 0


def test_a_wrong_head_output_is_carried_into_concat_and_y():
    z = Z.copy()
    z[1, 2, 0] += 0.5  # head 1, token 你, feature 1
    concat = np.concatenate(list(z), axis=1)
    y = _read(_w(concat)) @ np.array(MULTI_HEAD["W_O"], float)
    ans = {"output[1]": _w(z[1]), "concat": _w(concat), "projected": _w(y)}
    r = attnscope.check({"problem": {"example": "multi-head"}, "answers": ans})
    assert [(e.step, e.row, e.col) for e in r.by_verdict("wrong")] == [("output[1]", 2, 0)]
    carried = {(e.step, e.row, e.col) for e in r.by_verdict("carried")}
    assert ("concat", 2, 2) in carried and {c for s, i, c in carried if s == "concat"} == {2}
    ywrong = {(i, c) for i, c in zip(*np.nonzero(np.abs(y - Y) > 5e-5))}
    assert {(i, c) for s, i, c in carried if s == "projected"} == ywrong and ywrong


def test_grouped_query_right_answers():
    w, z, y = torch_gqa(GROUPED_QUERY)
    ans = {f"head {h}": {"weights": _w(w[h]), "output": _w(z[h])} for h in range(4)}
    ans["projected"] = _w(y)
    r = attnscope.check({"problem": copy.deepcopy(GROUPED_QUERY), "answers": ans})
    assert r.ok and r.counts()["correct"] == 4 * (9 + 6) + 12


@pytest.mark.parametrize("answers, msg", [
    ({"weights": [[0.1]]}, "weights belongs to one head here; write it under 'head 0:'"),
    ({"head 2": {"weights": [[0.1]]}}, "head 2 is out of range; there are 2 heads (0..1)"),
    ({"weights[5]": [[0.1]]}, "head 5 is out of range"),
    ({"head 0": [1, 2]}, "expected the head's steps as a mapping"),
    ({"head 0": {"bogus": 1}}, "head 0, answers: unknown key 'bogus'"),
    ({"head 0": {"weights": [[0.1]]}, "weights[0]": [[0.1]]}, "weights of head 0 given twice"),
    ({"Q": [[1, 2]]}, "expected 3 rows"),
    ({"heads": {"²": {"weights": [[0.1]]}}}, "'²' is not a head number (0..1)"),  # was a ValueError: isdigit('²')
])
def test_bad_answers_one_clear_error_each(answers, msg):
    with pytest.raises(InputError) as e:
        attnscope.check({"problem": {"example": "multi-head"}, "answers": answers})
    assert msg in str(e.value), str(e.value)


def test_answers_file_and_report_in_both_languages(tmp_path):
    text = ("problem:\n  example: multi-head\nanswers:\n  head 1:\n    weights:\n"
            + "".join(f"      - [{', '.join(half_up(x, 3) for x in row)}]\n" for row in W[1])
            + "  concat:\n" + "".join(f"    - [{', '.join(half_up(x, 3) for x in row)}]\n"
                                      for row in np.concatenate(list(Z), axis=1)))
    path = tmp_path / "answers.yaml"
    path.write_text(text, encoding="utf-8")
    r = attnscope.check(str(path))
    assert r.ok and r.answered == ["weights[1]", "concat"]
    assert "| weights[1] | 9 | 9 |" in r.render("markdown") and "| 拼接（concat） | 12 | 12 |" in r.render("markdown", lang="zh")


def test_large_scores_e_to_the_s_or_shifted_per_head():
    """A row whose largest scaled score is above 50: e^s' itself and e^(s' − m) are both right, in
    each head of its own (m is that head's row maximum), as in a single-head problem."""
    spec = {"X": [[10, 0], [0, 10]], "W_QKV": [[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]], "n_heads": 2,
            "W_O": [[1, 0], [0, 1]]}
    # head 0: q = k = x[:, 0] (column 0 of X·W): scores of row 0 = [100, 0]/1 (d_head = 1); head 1 likewise for row 1
    Xa = np.array(spec["X"], float)
    q0, q1 = Xa[:, 0], Xa[:, 1]
    s0, s1 = np.outer(q0, q0), np.outer(q1, q1)  # (2, 2) each, d_head = 1: no scaling
    plain0 = [[f"{np.exp(x):.5e}" for x in r] for r in s0]  # e^s' itself (head 0, row 0: e^100)
    shifted1 = [[f"{np.exp(x - r.max()):.5e}" for x in r] for r in s1]  # e^(s' − m) (head 1, row 1)
    r = attnscope.check({"problem": spec, "answers": {"head 0": {"exp": plain0}, "head 1": {"exp": shifted1}}})
    assert r.ok and r.counts()["wrong"] == 0, [(e.step, e.row, e.col, e.verdict) for e in r.entries]
    conv = {(c["step"], c["row"]): c["convention"] for c in r.to_dict()["conventions"]}
    assert conv == {("exp[0]", 0): "plain", ("exp[1]", 1): "shifted"}


def test_a_head_section_named_as_the_chinese_report_names_it():
    # the Chinese report says "头 1" for head 1; a learner's section "头 1:" was an unknown key
    weights = [[half_up(x, 3) for x in row] for row in W[1]]
    for key in ("头 1", "头1", "head 1"):
        r = attnscope.check({"problem": {"example": "multi-head"}, "answers": {key: {"weights": weights}}})
        assert r.ok and r.answered == ["weights[1]"], key
