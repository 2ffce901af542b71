"""exercise --labels / --text: the generated problem carries the tokens' labels (the numbers depend on
the seed, the count and the dimension only)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from attnscope.check import check
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.exercise import labels_from_text, make_exercise


def test_labels_name_the_rows_and_keep_the_numbers():
    plain = make_exercise(tokens=3, dim=2, seed=7)
    named = make_exercise(dim=2, seed=7, labels=["我", "喜", "欢"])
    assert named.problem_input.tokens == ["我", "喜", "欢"]
    for k in ("X", "W_Q", "W_K", "W_V"):
        np.testing.assert_array_equal(getattr(named.problem_input, k), getattr(plain.problem_input, k))
    md = named.problem().render("markdown")
    assert "| 我 | " in md and "| 喜 | " in md and "| 欢 | " in md
    data = yaml.safe_load(named.answers_file())
    assert data["problem"]["tokens"] == ["我", "喜", "欢"]


def test_text_gives_characters_or_words():
    assert labels_from_text("我喜欢") == ["我", "喜", "欢"]
    assert labels_from_text(" I like cats ") == ["I", "like", "cats"]


@pytest.mark.parametrize("labels, why", [(["a"], "2 to 8 tokens"), (list("abcdefghi"), "2 to 8 tokens"),
                                         (["a", " "], "empty"), ("ab", "a list")])
def test_bad_labels(labels, why):
    with pytest.raises(InputError, match=why):
        make_exercise(labels=labels)


def test_cli_labels_and_text(tmp_path, capsys):
    f = tmp_path / "ans.yaml"
    assert main(["exercise", "--labels", "我,喜,欢", "--seed", "7", "--answers", str(f), "-f", "markdown"]) == 0
    assert "| 喜 | " in capsys.readouterr().out
    data = yaml.safe_load(f.read_text(encoding="utf-8"))
    assert data["problem"]["tokens"] == ["我", "喜", "欢"]
    # the teacher fills in Q from the problem's own numbers (X W_Q, plain numpy): it checks right
    X, W = np.array(data["problem"]["X"], float), np.array(data["problem"]["W_Q"], float)
    data["answers"] = {"Q": (X @ W).tolist()}
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    r = check(str(f))
    assert r.ok and r.counts()["correct"] == 6 and [e.row_label for e in r.entries][::2] == ["0 (我)", "1 (喜)", "2 (欢)"]
    assert main(["exercise", "--text", "我喜欢人工智能", "--seed", "7", "--no-answers", "-f", "markdown"]) == 0
    assert "(7 tokens" in capsys.readouterr().out
    assert main(["exercise", "--text", "我喜欢", "--tokens", "4", "--no-answers"]) == 2
    assert "--tokens 4 but --text gives 3 tokens" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_repeated_token_is_named_by_its_position_and_checks(tmp_path, capsys, lang):
    """--text 我爱我 (the articles' learners type such texts) was refused ('the labels must differ');
    the rows are now named 0:我 1:爱 2:我, as explain names a model's keys, and check reads the file."""
    f = tmp_path / "ans.yaml"
    assert main(["exercise", "--text", "我爱我", "--seed", "7", "--answers", str(f), "-f", "markdown",
                 "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert "| 0:我 | " in out and "| 1:爱 | " in out and "| 2:我 | " in out
    data = yaml.safe_load(f.read_text(encoding="utf-8"))
    assert data["problem"]["tokens"] == ["0:我", "1:爱", "2:我"]
    assert make_exercise(dim=2, seed=7, labels=["我", "爱", "我"]).problem_input.tokens == ["0:我", "1:爱", "2:我"]
    # Q = X W_Q from the file's own numbers (plain numpy), the last row wrong: the report names that row
    X, W = np.array(data["problem"]["X"], float), np.array(data["problem"]["W_Q"], float)
    Q = X @ W
    Q[2, 0] += 1
    data["answers"] = {"Q": Q.tolist()}
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    r = check(str(f))
    assert r.counts()["correct"] == 5 and r.first_wrong == ("Q", "2 (2:我)")
    assert main(["check", str(f), "--lang", lang]) == 1


@pytest.mark.parametrize("argv", [["exercise", "--no-answers"], ["explain", "--scores", "1,2,3", "--dk", "4"]])
@pytest.mark.parametrize("sep", ["，", "、"])
def test_labels_typed_with_a_chinese_comma_are_named(capsys, argv, sep):
    """--labels 我，爱，你 (a Chinese input method's comma) was one label: 'an exercise has 2 to 8
    tokens; these labels give 1' or '3 scores but 1 label'. The sentence now names the '，'."""
    labels = sep.join("我爱你")
    assert main([*argv, "--labels", labels]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"--labels {labels!r} holds the full-width '{sep}' of a Chinese input method; separate the labels with ',' "
        "(half-width)")
    assert main([*argv, "--labels", labels, "--lang", "zh"]) == 2
    assert capsys.readouterr().err.strip() == \
        f"attnscope {argv[0]}：错误：--labels {labels!r} 里有中文输入法的全角“{sep}”；标签之间请用半角 ','"
    # a '，' among half-width commas is a token's label (the text's own punctuation)
    assert main(["explain", "--scores", "1,2,3", "--dk", "4", "--labels", "我,，,你", "-f", "markdown"]) == 0
    assert "| 1 | ， |" in capsys.readouterr().out


@pytest.mark.parametrize("text, n, listed", [("我喜欢人工智能很好", 9, "我, 喜, 欢, 人, 工, 智, 能, 很, 好"), ("我", 1, "我")])
def test_a_text_of_too_many_or_too_few_tokens_is_said_of_the_text(capsys, text, n, listed):
    """--text 我喜欢人工智能很好 was refused with 'the labels name 9' though no labels were given."""
    assert main(["exercise", "--text", text, "--no-answers"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"attnscope exercise: error: an exercise has 2 to 8 tokens (a hand calculation); --text gives {n} ({listed}): "
        "one per character, or per word when it has spaces")
    assert main(["exercise", "--text", text, "--no-answers", "--lang", "zh"]) == 2
    assert f"--text 给出了 {n} 个（{listed}）：每个字一个，有空格时每个词一个" in capsys.readouterr().err
