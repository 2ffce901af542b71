"""Checking one row of a real model (default MiniLM): right answers pass, a slip is found and carried."""

import numpy as np
import pytest

import attnscope
from attnscope.check import check
from attnscope.explain import explain
from attnscope.explain.numbers import fmt

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def row():
    return explain(text=TEXT, layer=1, head=0, token="cat", dims=3)


def test_exact_answers_pass_and_a_wrong_weight_is_found(row, tmp_path):
    v = row.values
    lst = lambda a, d=4: "[" + ", ".join(fmt(x, d, as_int=False) for x in a) + "]"  # noqa: E731
    head = f"problem:\n  text: \"{TEXT}\"\n  layer: 1\n  head: 0\n  token: cat\nanswers:\n"
    good = head + f"  scores: {lst(v['scores'])}\n  weights: {lst(v['weights'])}\n  output: {lst(v['output'])}\n"
    f = tmp_path / "row.yaml"
    f.write_text(good, encoding="utf-8")
    r = check(str(f))
    assert r.ok, r.render("markdown")
    assert r.problem["token"] == "cat" and r.problem["position"] == 2
    w = v["weights"].copy()
    j = int(np.argmax(w))
    w[j] -= 0.05                                            # a slip in the largest weight
    w_written = np.array([float(fmt(x, 4, as_int=False)) for x in w])   # the learner goes on from what they wrote
    f.write_text(head + f"  weights: {lst(w)}\n  output: {lst(w_written @ np.array(_v(row)))}\n", encoding="utf-8")
    r = check(str(f))
    assert [(e.step, e.col) for e in r.by_verdict("wrong")] == [("weights", j)]
    assert {e.step for e in r.by_verdict("carried")} == {"output"} and r.first_wrong == ("weights", "-")
    assert "The calculation first goes wrong at weights." in r.render("markdown")


def _v(row):
    m = attnscope.load()
    tr = m.trace(TEXT, names=["layers.1.attn.v[0]"])
    return tr["layers.1.attn.v[0]"][0].double().numpy()[:, :3]
