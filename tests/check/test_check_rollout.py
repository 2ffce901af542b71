"""``check`` judges a hand-computed rollout row (problem ``attribution: rollout``): the learner's
numbers here come from a plain loop over the float64 forward's weights written in this test (not from
attnscope's lesson), rounded to 4 decimals; a slip is flagged at the first wrong step and what follows
from it is carried; a blank counts as missing; the report names the steps in Chinese too."""

from __future__ import annotations

import json

import pytest

import attnscope
from attnscope import reference_model
from attnscope.check import check
from attnscope.cli import main
from attnscope.errors import InputError

TEXT = "The cat sat."


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


def by_hand(model, text: str, q: int, top: int) -> dict:
    """The steps of the rollout row of position q up to layer ``top``, by plain loops: each layer's
    head mean, ½·A + ½·I with rows divided by their sums, then from the top down u = Σ_j u_j Ã[j, :]."""
    f = reference_model.forward(model, text)
    out = {}
    u = None
    for l in range(top, -1, -1):
        w = f[f"layers.{l}.attn.weights"]  # (H, L, L)
        H, L = w.shape[0], w.shape[-1]
        rows = [q] if u is None else [j for j in range(L) if u[j] != 0.0]
        tilde = {}
        for i in rows:
            half = [0.5 * sum(w[h, i, j] for h in range(H)) / H + (0.5 if i == j else 0.0) for j in range(L)]
            tilde[i] = [x / sum(half) for x in half]
        out[f"mixed[{l}]"] = tilde[q] if u is None else [tilde[i] for i in rows]
        if u is None:
            u = tilde[q]
        else:
            u = [sum(u[j] * tilde[j][c] for j in rows) for c in range(L)]
            out[f"product[{l}]" if l > 0 else "rollout"] = u
    return out


def written(x, d: int = 4):
    if isinstance(x[0], list):
        return [written(r, d) for r in x]
    return [f"{v:.{d}f}" for v in x]


PROBLEM = {"text": TEXT, "token": "cat", "attribution": "rollout", "layer": 2}


def test_a_rollout_row_by_hand_is_correct(minilm):
    steps = by_hand(minilm, TEXT, 2, 2)
    r = check({"problem": PROBLEM, "answers": {k: written(v) for k, v in steps.items()}})
    assert r.ok and r.kind == "rollout" and r.first_wrong is None
    assert r.answered == ["mixed[2]", "mixed[1]", "product[1]", "mixed[0]", "rollout"]
    assert r.counts()["correct"] == 6 + 36 + 6 + 36 + 6


def test_a_slip_is_where_it_went_wrong_and_what_follows_is_carried(minilm):
    steps = by_hand(minilm, TEXT, 2, 2)
    answers = {k: written(v) for k, v in steps.items()}
    slipped = [list(map(float, r)) for r in answers["mixed[1]"]]
    slipped[0][0] = 0.5  # row 0 ([CLS]), column 0: a slip
    answers["mixed[1]"] = written(slipped)
    # product[1] from the learner's own rounded numbers, slip included
    u2 = [float(x) for x in answers["mixed[2]"]]
    answers["product[1]"] = written([sum(u2[j] * slipped[j][c] for j in range(6)) for c in range(6)])
    r = check({"problem": PROBLEM, "answers": answers})
    assert not r.ok and r.first_wrong == ("mixed[1]", "0 ([CLS])")
    assert r.counts("mixed[1]")["wrong"] == 1 and r.counts("product[1]")["carried"] >= 1
    assert r.counts("product[1]")["wrong"] == 0
    line = next(e for e in r.entries if e.verdict == "carried")
    assert line.sources == ["mixed[1]"]


def test_a_blank_is_missing_not_right(minilm):
    steps = by_hand(minilm, TEXT, 2, 1)
    answers = {"layer 1": {"mixed": written(steps["mixed[1]"])}, "rollout": written(steps["rollout"])}
    answers["rollout"][3] = None
    r = check({"problem": dict(PROBLEM, layer=1), "answers": answers})
    assert not r.ok and r.missing == 1 and r.first_wrong is None
    assert r.blanks == {"mixed[1]": 0, "rollout": 1}


def test_the_command_line_and_the_chinese_report(minilm, tmp_path, capsys):
    import yaml
    steps = by_hand(minilm, TEXT, 2, 1)
    answers = {k: written(v) for k, v in steps.items()}
    answers["rollout"][0] = "0.1234"
    path = tmp_path / "rollout-answers.yaml"
    path.write_text(yaml.safe_dump({"problem": dict(PROBLEM, layer=1), "answers": answers}, allow_unicode=True))
    assert main(["check", str(path), "--format", "markdown", "--lang", "zh"]) == 1
    md = capsys.readouterr().out
    assert "混合矩阵的行（mixed），第 1 层" in md and "**计算第一次出错在rollout 的行（rollout）。**" in md
    assert "第 1 层之后的 rollout 行" in md
    assert main(["check", str(path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["first_wrong"] == {"step": "rollout", "row": "-"} and doc["problem"]["kind"] == "rollout"


def test_bad_answers_are_one_sentence(minilm):
    with pytest.raises(InputError, match="not a step of this rollout") as e:
        check({"problem": PROBLEM, "answers": {"weights": [0.1]}})
    assert "mixed[2], mixed[1], product[1], mixed[0], rollout" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError, match="not 'norm'"):
        check({"problem": dict(PROBLEM, attribution="norm"), "answers": {"rollout": [0.1]}})
    with pytest.raises(InputError, match="unknown key 'head'"):
        check({"problem": dict(PROBLEM, head=1), "answers": {"rollout": [0.1]}})
    with pytest.raises(InputError, match="expected 6 rows"):
        check({"problem": PROBLEM, "answers": {"mixed[1]": [[0.1] * 6]}})
