"""Exercises: humane, reproducible, checkable; both languages; answers that quote their own numbers."""

import re

import numpy as np
import pytest
import yaml

from attnscope import InputError
from attnscope import reference as R
from attnscope.check import check
from attnscope.cli import main
from attnscope.exercise import STEPS, make_exercise
from attnscope.explain.numbers import fmt
from attnscope.explain.toy import compute


@pytest.mark.parametrize("tokens, dim, style", [(3, 2, "int"), (4, 3, "int"), (3, 2, "decimal"), (2, 1, "int")])
def test_inputs_are_humane_for_many_seeds(tokens, dim, style):
    for seed in range(25):
        ex = make_exercise(tokens, dim, seed, style=style)
        p, v = ex.problem_input, compute(ex.problem_input)
        assert p.X.shape == (tokens, dim) and p.W_Q.shape == (dim, dim)
        for m in (p.X, p.W_Q, p.W_K, p.W_V):
            assert np.all(np.abs(m) <= 2) and np.all(np.round(m * (1 if style == "int" else 10)) ==
                                                     m * (1 if style == "int" else 10))
        assert np.abs(v["scores"]).max() <= 9 and (np.ptp(v["scores"], axis=1) > 0).all()
        assert len({tuple(r) for r in p.X}) == tokens


@pytest.mark.parametrize("tokens, dim, style", [(8, 2, "int"), (7, 2, "int"), (8, 2, "decimal")])
def test_as_many_tokens_as_x_has_rows_are_found(tokens, dim, style):
    """8 tokens in dim 2 need 8 of the 8 non-zero rows {0,1,2}²: drawing entries one by one found
    none in 10,000 tries for any seed, and the error said to try another seed."""
    values = {"int": [0, 1, 2], "decimal": [0, 0.5, 1, 1.5, 2]}[style]
    for seed in range(5):
        ex = make_exercise(tokens, dim, seed, style=style)
        p, v = ex.problem_input, compute(ex.problem_input)
        assert len({tuple(r) for r in p.X}) == tokens and (np.abs(p.X).sum(1) > 0).all()
        assert set(p.X.ravel()) <= set(values)
        assert np.abs(v["scores"]).max() <= 9 and (np.ptp(v["scores"], axis=1) > 0).all()
        assert np.abs(np.concatenate([v["Q"], v["K"], v["V"]], 1)).max() <= 6
    again = make_exercise(tokens, dim, 4, style=style).problem_input  # the same seed, the same numbers
    assert (again.X == ex.problem_input.X).all() and (again.W_V == ex.problem_input.W_V).all()


def test_same_seed_same_numbers_in_both_languages():
    a, b = make_exercise(3, 2, 7, lang="en"), make_exercise(3, 2, 7, lang="zh")
    assert (a.problem_input.X == b.problem_input.X).all() and (a.problem_input.W_V == b.problem_input.W_V).all()
    assert a.problem_input.tokens == ["I", "love", "you"] and b.problem_input.tokens == ["我", "爱", "你"]
    assert not (make_exercise(3, 2, 8).problem_input.X == a.problem_input.X).all() or \
        not (make_exercise(3, 2, 8).problem_input.W_Q == a.problem_input.W_Q).all()


def test_blank_answers_file_round_trips_through_check(tmp_path):
    ex = make_exercise(3, 2, 7)
    text = ex.answers_file()
    data = yaml.safe_load(text)
    assert list(data["answers"]) == list(STEPS) and all(x is None for x in data["answers"]["sums"])
    f = tmp_path / "a.yaml"
    f.write_text(text, encoding="utf-8")
    # left as written, it is judged: every entry missing, none right (not an error)
    blank = check(str(f))
    total = 6 * 3 + 9 * 4 + 3 + 6
    assert not blank.ok and blank.entries == [] and blank.missing == total and blank.answered == list(STEPS)
    # a learner who writes every value to 4 decimals passes
    v = compute(ex.problem_input)
    filled = text
    for name in STEPS:
        rows = v[name] if v[name].ndim == 2 else v[name][:, None]
        body = "[" + ", ".join(fmt(x, 4, as_int=False) for x in v[name]) + "]" if name == "sums" else \
            "[" + ", ".join("[" + ", ".join(fmt(x, 4, as_int=False) for x in r) + "]" for r in rows) + "]"
        filled = re.sub(rf"^  {name}: .*$", f"  {name}: {body}", filled, flags=re.M)
    f.write_text(filled, encoding="utf-8")
    r = check(str(f))
    assert r.ok and r.counts()["wrong"] == 0 and sum(r.counts().values()) == total


def test_solution_and_answers_quote_the_exercise_numbers():
    ex = make_exercise(3, 2, 7)
    v = compute(ex.problem_input)
    md = ex.solution().render("markdown")
    k = ex._q3_row()
    top = int(np.argmax(v["weights"][k]))
    assert f"{fmt(100 * v['weights'][k, top], 1)}% from {ex.problem_input.tokens[top]}" in md
    assert "Answer 1." in md and "Answer 2." in md and "Answer 3." in md
    assert fmt(v["output"][k][0], 4) in md
    zh = make_exercise(3, 2, 7, lang="zh").solution().render("markdown", lang="zh")
    assert "答 3：" in zh and "Answer" not in zh
    problem = ex.problem().render("markdown")
    assert "Question 3." in problem and "Answer" not in problem and fmt(v["output"][0][0], 4) not in problem


def test_cli_writes_the_answers_file_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["exercise", "--tokens", "3", "--dim", "2", "--seed", "7", "-f", "markdown"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# Exercise 7: self-attention by hand (3 tokens, 2 dimensions)")
    assert "exercise-7-answers.yaml" in err and (tmp_path / "exercise-7-answers.yaml").exists()
    (tmp_path / "exercise-7-answers.yaml").write_text("mine", encoding="utf-8")
    assert main(["exercise", "--seed", "7", "--solution", "--lang", "zh", "-f", "markdown"]) == 0
    out, err = capsys.readouterr()
    assert (tmp_path / "exercise-7-answers.yaml").read_text(encoding="utf-8") == "mine" and "已存在" in err
    assert "练习 7：详细解答" in out and "答 1：" in out


@pytest.mark.parametrize("kw, msg", [(dict(tokens=1), "tokens must be an integer from 2 to 8"),
                                     (dict(dim=9), "dim must be an integer from 1 to 4"),
                                     (dict(seed=-1), "seed must be a non-negative integer"),
                                     (dict(style="big"), "style must be 'int' or 'decimal'")])
def test_bad_options(kw, msg, capsys):
    with pytest.raises(InputError, match=re.escape(msg)):
        make_exercise(**kw)
    assert main(["exercise", "--no-answers", "--tokens", "1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_answer_3_names_every_token_tied_for_the_largest_weight():
    # Seed 27 (3 tokens, 2 dims): the row asked about has two equal raw scores, so two keys share
    # the largest weight (49.3 % each); "mostly the value of I" named only one of them.
    ex = make_exercise(3, 2, 27)
    p = ex.problem_input
    q, k = p.X @ p.W_Q, p.X @ p.W_K  # float64 by hand, independent of attnscope's compute
    text = ex.solution().render("markdown")
    ans = text[text.index("Answer 3."):].split("\n")[0]
    row = next(i for i, tok in enumerate(p.tokens) if f"new vector of {tok} contain" in text)
    s = q[row] @ k.T
    top = [p.tokens[j] for j in range(len(s)) if s[j] == s.max()]
    assert len(top) == 2, s
    assert all(tok in ans.split("largest shares from")[1] for tok in top), ans


@pytest.mark.parametrize("lang, phrase", [("en", "takes its largest share from the value of"), ("zh", "里占比最大的是")])
def test_answer_3_does_not_call_a_minority_share_most(lang, phrase):
    """Seed 8 (4 tokens, 2 dims, decimals): the largest weight of the row asked about is 39.6 %, so
    the new vector is not "mostly" that token's value ("主要是 X 的值": the others give more); it
    takes the largest share."""
    ex = make_exercise(4, 2, 8, style="decimal", lang=lang)
    p = ex.problem_input
    q, k = p.X @ p.W_Q, p.X @ p.W_K  # float64 by hand, independent of attnscope's compute
    text = ex.solution().render("markdown", lang=lang)
    row = next(i for i, tok in enumerate(p.tokens) if (f"new vector of {tok} contain" if lang == "en" else
                                                         f"{tok} 的新向量里包含了谁的信息") in text)
    w = np.exp(q[row] @ k.T / np.sqrt(2))
    w /= w.sum()
    assert w.max() < 0.5 and np.sum(np.isclose(w, w.max())) == 1, w  # one largest weight, under one half
    ans = text[text.index("Answer 3." if lang == "en" else "答 3："):].split("\n\n")[0].replace("\n", "")  # one paragraph
    assert f"{phrase} {p.tokens[int(np.argmax(w))]}" in ans and "mostly" not in ans and "主要是" not in ans, ans


@pytest.mark.parametrize("tokens, dim, style, rows", [(3, 1, "int", 2), (5, 1, "decimal", 4)])
def test_more_tokens_than_different_rows_is_refused_at_once(tokens, dim, style, rows, capsys):
    # With dim 1 an int X entry is 1 or 2 (0 would be a row of zeros): 3 tokens cannot have 3 different rows.
    # It searched 10000 draws (6-10 s) and said "try another seed", which no seed could help.
    values = {"int": {1, 2}, "decimal": {0.5, 1, 1.5, 2}}[style]
    assert len(values) == rows
    with pytest.raises(InputError, match=re.escape(f"{tokens} tokens need {tokens} different rows of X, but dim={dim} "
                                                   f"in the {style} style has only {rows}")):
        make_exercise(tokens, dim, 0, style=style)
    assert main(["exercise", "--no-answers", "--tokens", str(tokens), "--dim", str(dim), "--style", style]) == 2
    assert "try another seed" not in capsys.readouterr().err
    make_exercise(rows, dim, 0, style=style)  # as many tokens as rows: found


def test_answer_1_at_d_k_1_does_not_claim_a_softer_row():
    # √1 = 1: the scaled row is the unscaled one, so "a softer row" (分布更柔和) was false at --dim 1
    ex = make_exercise(2, 1, 5)
    v = compute(ex.problem_input)
    assert np.array_equal(v["scaled"], v["scores"]) and np.allclose(v["weights"], R.softmax(v["scores"]))
    en = ex.solution().render("markdown")
    zh = make_exercise(2, 1, 5, lang="zh").solution().render("markdown", lang="zh")
    assert "softer" not in en and "changes nothing" in en
    assert "更柔和" not in zh and "什么也不改变" in zh
    assert "a softer row" in make_exercise(3, 2, 7).solution().render("markdown")  # d_k = 2 still says it


@pytest.mark.parametrize("name", ["答案.json", "answers.toml", "answers.txt"])
def test_an_answers_file_not_named_yaml_is_refused_before_anything_is_written(tmp_path, capsys, name):
    """--answers 答案.json wrote YAML under a .json name and said 'run: attnscope check 答案.json', which
    then failed ('not valid JSON, line 1, column 1'): check reads a file by its extension."""
    f = tmp_path / name
    assert main(["exercise", "--seed", "3", "--answers", str(f)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and not f.exists()
    example = str(f.with_suffix(".yaml"))
    assert out.err.strip().endswith(f"--answers {f}: the answers file is YAML, and check reads a file by its extension; "
                                    f"give a name ending in .yaml or .yml, e.g. {example}")
    assert main(["exercise", "--seed", "3", "--answers", str(f), "--lang", "zh"]) == 2
    assert f"请给出以 .yaml 或 .yml 结尾的名字，例如 {example}" in capsys.readouterr().err
    yml = tmp_path / "A.YML"  # the answers file check reads, whatever the case of its extension
    assert main(["exercise", "--seed", "3", "--answers", str(yml)]) == 0 and main(["check", str(yml)]) == 1


def test_the_problem_is_not_written_over_the_answers_file(tmp_path, capsys, monkeypatch):
    """-o naming the answers file (given, or the default exercise-SEED-answers.yaml) wrote the problem
    there, then said the file 'was left as it is (it may hold your answers); check it', which failed;
    with --overwrite it replaced the learner's answers."""
    monkeypatch.chdir(tmp_path)
    answers = tmp_path / "exercise-3-answers.yaml"
    answers.write_text("mine\n", encoding="utf-8")
    for argv in (["-o", "exercise-3-answers.yaml", "--overwrite"], ["-o", "ex.yaml", "--answers", "ex.yaml"]):
        assert main(["exercise", "--seed", "3", *argv]) == 2
        assert capsys.readouterr().err.strip().endswith(
            f"-o {argv[1]} is also the answers file; write the problem to another file, e.g. -o {argv[1][:-5]}.txt")
    assert answers.read_text(encoding="utf-8") == "mine\n" and not (tmp_path / "ex.yaml").exists()
    assert main(["exercise", "--seed", "3", "-o", "ex.yaml", "--answers", "ex.yaml", "--lang", "zh"]) == 2
    assert "-o ex.yaml 同时也是答案文件；请把题目写到另一个文件，例如 -o ex.txt" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_exponential_task_names_the_scaled_scores_of_the_task_before(capsys, lang):
    """Task 3 defines S' = S / √d_k; task 4 said 'take e^s', a symbol defined nowhere."""
    assert main(["exercise", "--seed", "7", "--no-answers", "--format", "markdown", "--lang", lang]) == 0
    out = capsys.readouterr().out
    task4 = next(line for line in out.splitlines() if "e^" in line)
    assert "S' = S /" in out and "e^s'" in task4 and ("S')" in task4 or "S' 的" in task4), task4
