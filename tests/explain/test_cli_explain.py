import json
import re

import numpy as np
import pytest

from attnscope.cli import main


def test_example_in_markdown_and_chinese(capsys):
    assert main(["explain", "--example", "three-tokens", "--format", "markdown", "--lang", "zh", "--decimals", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 手算自注意力：three-tokens") and "= [0.306, 0.074, 0.620]" in out


def test_matrices_on_the_command_line_match_the_example(capsys):
    assert main(["explain", "-X", "1,0; 0,1; 1,1", "--wq", "[[1,0],[1,1]]", "--wk", "1 2; 0 1", "--wv", "2,0;0,1",
                 "--labels", "我,爱,你", "-f", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(d["values"]["output"][2], [1.92384136, 0.6823368], atol=1e-8)
    assert d["meta"]["tokens"] == ["我", "爱", "你"]


def test_output_file_scaling_and_scores(tmp_path, capsys):
    out = tmp_path / "lesson.tex"
    assert main(["explain", "scaling", "--dk", "64", "--samples", "500", "-f", "latex", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("% compile") and "wrote" in capsys.readouterr().err
    assert main(["explain", "--scores", "15.3,22.7,18.2", "--dk", "64", "--labels", "我,喜,歡", "--query", "1",
                 "-f", "markdown"]) == 0
    assert "# The row of 喜 worked out" in capsys.readouterr().out


@pytest.mark.parametrize("name, fmt, lang, words", [
    ("row.json", [], "en", "-o {path} is a json file name, but the format is rich; add --format json"),
    ("row.md", ["-f", "latex"], "en", "-o {path} is a markdown file name, but the format is latex; add --format markdown"),
    ("行.tex", [], "zh", "-o {path} 是 latex 文件名，但输出格式是 rich；请加上 --format latex"),
])
def test_an_output_name_of_another_format_is_refused(tmp_path, capsys, name, fmt, lang, words):
    """'explain … -o row.json' without --format json wrote the terminal text into row.json (and .tex,
    .md alike), which nothing reading JSON or LaTeX could open; refused before any work now."""
    out = tmp_path / name
    assert main(["explain", "--example", "three-tokens", *fmt, "--lang", lang, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert words.format(path=repr(str(out))) in err and err.count("\n") == 1, err
    assert not out.exists()
    assert main(["explain", "--example", "three-tokens", "-f", "json", "-o", str(tmp_path / "row.JSON")]) == 0
    assert json.loads((tmp_path / "row.JSON").read_text(encoding="utf-8"))["kind"]


def test_causal_and_scoring_flags_on_an_example(capsys):
    assert main(["explain", "--example", "three-tokens", "--causal", "--scoring", "unscaled", "-f", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["values"]["weights"][0] == [1.0, 0.0, 0.0] and d["meta"]["scoring"] == "unscaled"
    assert d["values"]["masked"][0][1] is None                           # −∞ is null in JSON


def test_example_command_still_works(capsys):
    assert main(["example"]) == 0
    assert "[0.3057, 0.0743, 0.6200]" in capsys.readouterr().out


@pytest.mark.parametrize("option", [["--causal"], ["--dk", "4"], ["--query", "1"], ["--labels", "a,b,c"],
                                    ["--scoring", "unscaled"], ["--example", "three-tokens"], ["--scores", "1,2"]])
def test_a_toy_option_with_a_models_row_is_refused_not_ignored(option, capsys):
    """The model's own attention sets these: the row came out unchanged whatever they said."""
    assert main(["explain", "--text", "The cat sat.", "--token", "cat", *option]) == 2
    err = capsys.readouterr().err
    assert f"{option[0]} does not apply to a model's row (--text)" in err and "Traceback" not in err


@pytest.mark.parametrize("lesson", [["--text", "The cat sat.", "--token", "cat"],
                                    ["--text", "The cat sat.", "--token", "cat", "--path"]])
def test_entry_with_a_models_row_is_refused_not_ignored(lesson, capsys):
    """--entry is read by --circuit qk alone: a row or path came out unchanged whatever it said."""
    assert main(["explain", *lesson, "--entry", "1,2"]) == 2
    err = capsys.readouterr().err
    assert "--entry does not apply to a model's row (--text)" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("option", [{"causal": True}, {"scoring": "unscaled"}, {"d_k": 4}, {"query": 1},
                                    {"tokens": ["a", "b"]}, {"example": "three-tokens"}, {"scores": [1.0, 2.0]}])
def test_the_python_api_refuses_a_toy_argument_with_a_models_text(option):
    import attnscope
    from attnscope.errors import InputError
    with pytest.raises(InputError, match=f"without {next(iter(option))}="):
        attnscope.explain(text="The cat sat.", token="cat", **option)


TOY = ["--example", "three-tokens"]
SCORES = ["--scores", "1,2,3", "--dk", "4"]


@pytest.mark.parametrize("lesson, name, option", [
    (TOY, "a toy input", ["--layer", "3"]), (TOY, "a toy input", ["--head", "0"]),
    (TOY, "a toy input", ["--token", "我"]), (TOY, "a toy input", ["--position", "1"]),
    (TOY, "a toy input", ["--dims", "2"]), (TOY, "a toy input", ["--dk", "4"]),
    (TOY, "a toy input", ["--query", "0"]), (TOY, "a toy input", ["--seed", "3"]),
    (TOY, "a toy input", ["--model", "x"]), (TOY, "a toy input", ["--values", "1;2;3"]),
    (SCORES, "the row of given raw scores", ["--causal"]), (SCORES, "the row of given raw scores", ["--scoring", "unscaled"]),
    (SCORES, "the row of given raw scores", ["--example", "three-tokens"]),
    (SCORES, "the row of given raw scores", ["--layer", "0"]), (SCORES, "the row of given raw scores", ["--wq", "1"]),
    (["scaling"], "the scaling lesson", ["--causal"]), (["scaling"], "the scaling lesson", ["--text", "hi"]),
    (["scaling"], "the scaling lesson", ["--labels", "a"]), (["scaling"], "the scaling lesson", ["--dims", "2"]),
    (["positions"], "the positions lesson", ["--dims", "3"]), (["positions"], "the positions lesson", ["--labels", "a"]),
    (["scaling"], "the scaling lesson", ["--expand", "never"]),
    (["positions"], "the positions lesson", ["--expand", "always"]),
])
def test_an_option_the_lesson_does_not_read_is_refused_not_dropped(capsys, lesson, name, option):
    """Each came out as the same calculation whatever it said: --scoring unscaled still divided the
    --scores row by √d_k, --layer 3 gave the same toy, --example beside --scores was not worked."""
    assert main(["explain", *lesson, *option]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnscope explain: error: {option[0]} does not apply to {name}") and err.count("\n") == 1


def test_the_options_each_lesson_reads_still_work(capsys):
    assert main(["explain", *TOY, "--causal", "--scoring", "unscaled", "--labels", "a,b,c", "-f", "json"]) == 0
    assert main(["explain", *SCORES, "--dims", "1", "--query", "0", "--labels", "a,b,c", "--values", "1;2;3"]) == 0
    assert main(["explain", *TOY, "--expand", "never"]) == 0 and main(["explain", *SCORES, "--expand", "always"]) == 0
    assert main(["explain", "scaling", "--seed", "1", "--samples", "100", "--scores", "1,2"]) == 0
    assert main(["explain", "positions", "--position", "5", "--dim", "2", "--offset", "3"]) == 0
    capsys.readouterr()
    assert main(["explain", "--text", "The cat sat.", "--token", "cat", "--seed", "2"]) == 2
    assert "--seed does not apply to a model's row (--text)" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, option, lesson", [
    ({"scores": [1, 2, 3], "d_k": 4, "scoring": "unscaled"}, "scoring", "the row of given raw scores"),
    ({"scores": [1, 2, 3], "d_k": 4, "causal": True}, "causal", "the row of given raw scores"),
    ({"scores": [1, 2, 3], "d_k": 4, "example": "three-tokens"}, "example", "the row of given raw scores"),
    ({"scores": [1, 2, 3], "d_k": 4, "layer": 2}, "layer", "the row of given raw scores"),
    ({"example": "three-tokens", "layer": 2}, "layer", "a toy input"),
    ({"example": "three-tokens", "d_k": 4}, "d_k", "a toy input"),
    ({"example": "three-tokens", "token": "我"}, "token", "a toy input"),
    ({"example": "three-tokens", "dims": 2}, "dims", "a toy input"),
    ({"example": "three-tokens", "head": 0}, "head", "a toy input"),
    ({"lesson": "scaling", "causal": True}, "causal", "the scaling lesson"),
    ({"lesson": "scaling", "example": "three-tokens"}, "example", "the scaling lesson"),
    ({"lesson": "positions", "head": 0}, "head", "the positions lesson"),
])
def test_the_python_api_refuses_an_argument_the_lesson_does_not_read(kwargs, option, lesson):
    """Each was dropped: the same row, toy or lesson came back whatever it said."""
    import attnscope
    from attnscope.errors import InputError
    with pytest.raises(InputError, match=re.escape(f"{option}= does not apply to {lesson}")):
        attnscope.explain(**kwargs)


def test_a_keyword_toys_head_is_the_head_shown():
    """head= with keyword matrices (n_heads = 2) was dropped: head 0 was shown; a mapping's head key worked."""
    import attnscope
    eye = np.eye(4).tolist()
    toy = {"X": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], "W_Q": eye, "W_K": eye, "W_V": eye, "n_heads": 2}
    w = attnscope.explain(**toy, head=1)
    assert w.meta["head"] == 1
    x = np.array(toy["X"], dtype=float)[:, 2:]  # head 1: features 2, 3 of q and k (W = I)
    np.testing.assert_allclose(w.values["scores"], x @ x.T, rtol=0, atol=1e-15)


def test_a_value_that_starts_with_a_negative_number_is_a_value(capsys):
    """--scores -1.5,2,3 and -X "-1,0;0,1" (a first raw score or entry below 0, as learners' rows
    have) were taken for unknown options: 'argument --scores: expected one argument'."""
    assert main(["explain", "--scores", "-1.5,2,3", "--dk", "4", "-f", "json"]) == 0
    e = np.exp(np.array([-1.5, 2, 3]) / 2)  # float64 by hand
    np.testing.assert_allclose(json.loads(capsys.readouterr().out)["values"]["weights"], e / e.sum(), rtol=1e-14)
    assert main(["explain", "-X", "-1,0;0,-2", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1", "-f", "json"]) == 0
    s = np.array([[1, 0], [0, 4]]) / np.sqrt(2)  # X Xᵀ / √2 with W = I
    w = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    np.testing.assert_allclose(json.loads(capsys.readouterr().out)["values"]["weights"], w, rtol=1e-14)
    with pytest.raises(SystemExit):  # an unknown option stays one (argparse's own exit)
        main(["explain", "--scores", "1,2", "--dk", "4", "--nope"])
    assert "unrecognized arguments: --nope" in capsys.readouterr().err


@pytest.mark.parametrize("lang, want", [
    ("en", "{f} is an answers file (problem: and answers:), which attnscope check judges: run attnscope check {f}"),
    ("zh", "{f} 是答案文件（含 problem: 和 answers:），由 attnscope check 批改：请运行 attnscope check {f}")])
def test_an_answers_file_is_sent_to_check(tmp_path, capsys, monkeypatch, lang, want):
    """explain of the file exercise writes said "unknown key 'problem'; expected X, W_Q, …"."""
    monkeypatch.chdir(tmp_path)
    assert main(["exercise", "--seed", "7"]) == 0
    capsys.readouterr()
    f = "exercise-7-answers.yaml"
    assert main(["explain", f, "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want.format(f=f) in err and "unknown key" not in err, err


def test_repeated_labels_each_name_one_row(capsys):
    """--labels 我,爱,我 gave two rows called 我 in every table (exercise numbers them: 0:我 1:爱 2:我)."""
    assert main(["explain", "--example", "three-tokens", "--labels", "我,爱,我", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "3 tokens (0:我 1:爱 2:我)" in out
    lines = out.splitlines()
    top = lines.index("| **X** | 0 | 1 |")
    assert [line.split(" | ")[0] for line in lines[top + 2:top + 5]] == ["| 0:我", "| 1:爱", "| 2:我"]
    assert "| 我 |" not in out
    assert main(["explain", "--example", "three-tokens", "--labels", "我,爱,你", "--format", "markdown"]) == 0
    assert "3 tokens (我 爱 你)" in capsys.readouterr().out  # distinct labels stay as typed
