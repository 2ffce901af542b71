"""A malformed answers file: one line naming file, key, row and column; exit 2 (1 means wrong answers)."""

import re

import pytest

from attnscope import AttnscopeError
from attnscope.check import check
from attnscope.cli import main

HEAD = "problem:\n  example: three-tokens\nanswers:\n"


@pytest.mark.parametrize("text, msg", [
    (HEAD + "  weights: [[0.4, 0.2, 0.4], [0.3, 0.1]]\n", "key weights: expected 3 rows (one per token), got 2"),
    (HEAD + "  weights: [[0.4, 0.2, 0.4], [0.3, 0.1], [1, 1, 1]]\n", "key weights, row 1 (from 0): expected 3 numbers, got 2"),
    (HEAD + "  output: [[1.6, x], [1, 1], [1, 1]]\n", "key output, row 0, column 1 (from 0): 'x' is not a number"),
    (HEAD + "  softmx: [[1]]\n", "answers: unknown key 'softmx'; this problem's steps are Q, K, V, scores"),
    (HEAD + "  sums: [1, 2]\n", "key sums: expected 3 numbers, got 2"),
    ("answers:\n  Q: [[1, 0]]\n", "missing key 'problem'"),
    (HEAD.replace("example: three-tokens", "example: four-tokens") + "  Q: [[1, 0], [1, 1], [2, 1]]\n",
     "unknown example 'four-tokens'"),
    ("problem:\n  X: [[1, 0]]\n  W_Q: [[1], [0], [2]]\n  W_K: [[1]]\n  W_V: [[1]]\nanswers:\n  Q: [[1]]\n",
     "problem, key W_Q: W_Q has 3 rows but X has 2 columns"),
    ("problem:\n  scores: [1, 2]\n  d_k: 4\nanswers:\n  weights: [0.3, 0.7, 0.1]\n",
     "key weights: expected 2 numbers, got 3"),
    ("problem: [1, 2]\nanswers: {}\n", "key problem: expected a mapping"),
    ("problem:\n  example: three-tokens\n answers:\n", "not valid YAML, line 3"),
    (HEAD + "  extra: 1\nfoo: 2\n", "unknown top-level key 'foo'"),
])
def test_malformed_answers(tmp_path, capsys, text, msg):
    f = tmp_path / "answers.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(AttnscopeError, match=re.escape(msg)) as e:
        check(str(f))
    assert str(f) in str(e.value) or "unknown example" in msg
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnscope check: error: ") and err.count("\n") == 1


def test_exit_codes_are_distinct(tmp_path, capsys):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(HEAD + "  Q: [[1, 0], [1, 1], [2, 1]]\n", encoding="utf-8")
    bad.write_text(HEAD + "  Q: [[1, 0], [1, 1], [2, 2]]\n", encoding="utf-8")
    assert main(["check", str(good)]) == 0
    assert main(["check", str(bad)]) == 1
    assert main(["check", str(tmp_path / "none.yaml")]) == 2
    assert main(["check"]) == 2
    capsys.readouterr()


@pytest.mark.parametrize("text, msg", [
    (HEAD + "  Q: [[1e400, 0], [1, 1], [2, 1]]\n", "key Q, row 0, column 0 (from 0): 1e400 is beyond the range of float64"),
    (HEAD + "  Q: [[1, -1e400], [1, 1], [2, 1]]\n", "key Q, row 0, column 1 (from 0): -1e400 is beyond the range of float64"),
    ("a: &x [*x]\n" + HEAD + "  Q: [[1, 0], [1, 1], [2, 1]]\n", "key a[0] contains itself (a YAML alias"),
    ("problem: &p\n  example: three-tokens\n  again: *p\nanswers:\n  Q: [[1, 0], [1, 1], [2, 1]]\n",
     "key problem.again contains itself"),
    (HEAD + "  Q: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply to read"),
])
def test_unreadable_numbers_and_alias_loops(tmp_path, capsys, text, msg):
    test_malformed_answers(tmp_path, capsys, text, msg)


@pytest.mark.parametrize("written, verdict", [
    ("1e-30", "wrong"),                                # Q[0][0] is 1: a tiny number is judged like any
    ("1e-400", "wrong"),                               # below float64's range: 0, still a readable answer
    ("2.00000000000000000000000000001", "wrong"),      # 29 decimals, wrong
    ("1.00000000000000000000000000000", "correct"),    # 29 decimals, right
    ("0.99999999999999999999999999999", "wrong"),      # judged exactly: the 29th decimal is off (it was
                                                       # "correct" while judging was float64; issue #15)
    ("1.000000000000000000000000000000000", "correct"),  # 33 decimals, right
])
def test_numbers_with_many_decimals_or_tiny_are_judged(tmp_path, capsys, written, verdict):
    f = tmp_path / "a.yaml"
    f.write_text(HEAD + f"  Q: [[{written}, 0], [1, 1], [2, 1]]\n", encoding="utf-8")
    report = check(str(f))
    e = next(e for e in report.entries if (e.step, e.row, e.col) == ("Q", 0, 0))
    assert e.verdict == verdict and e.written == written
    for fmt in ("rich", "markdown", "json"):
        assert main(["check", str(f), "--format", fmt]) == (0 if verdict == "correct" else 1)
    out = capsys.readouterr().out
    if verdict == "wrong":
        assert "1.00000000000000000" in out and "1.000000000000000000" not in out  # 17 decimals shown at most


def test_scores_with_both_d_k_and_factor_is_an_error_not_a_silent_choice(tmp_path, capsys):
    # d_k = 64 means ÷8 (factor 1/8); factor 0.5 says ÷2: the two disagree, and d_k used to win silently.
    f = tmp_path / "a.yaml"
    f.write_text("problem:\n  scores: [20, -10, 5]\n  d_k: 64\n  factor: 0.5\nanswers:\n  scaled: [10, -5, 2.5]\n",
                 encoding="utf-8")
    assert main(["check", str(f)]) == 2
    assert "give d_k or factor, not both" in capsys.readouterr().err


@pytest.mark.parametrize("name, text, msg", [
    # JSON's NaN and TOML's nan were read as a blank (an answer "missing", exit 0 with the rest right; in the
    # problem "an entry is empty"): they are numbers that are not finite
    ("a.json", '{"problem": {"scores": [1, 2, 3], "d_k": 1}, "answers": {"weights": [NaN, 0.2447, 0.6652]}}',
     "key weights, entry 0 (from 0): nan is not a finite number"),
    ("a.toml", "[problem]\nscores = [1, 2, 3]\nd_k = 1\n[answers]\nweights = [0.09, nan, 0.6652]\n",
     "key weights, entry 1 (from 0): nan is not a finite number"),
    ("a.json", '{"problem": {"scores": [1, NaN, 3], "d_k": 1}, "answers": {"weights": [0.09, 0.2447, 0.6652]}}',
     "key problem.scores, entry 1 (from 0): nan is not a finite number"),
    ("a.toml", "[problem]\nscores = [1, 2, -nan]\nd_k = 1\n[answers]\nweights = [0.09, 0.2447, 0.6652]\n",
     "key problem.scores, entry 2 (from 0): nan is not a finite number"),
])
def test_nan_in_json_and_toml_is_refused_not_blank(tmp_path, capsys, name, text, msg):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    with pytest.raises(AttnscopeError, match=re.escape(msg)):
        check(str(f))
    assert main(["check", str(f)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("name, text, msg", [
    # PyYAML and json keep the last of a key given twice in silence: the first weights (with a wrong 0.5) was
    # dropped and the file reported "All correct"; a second d_k replaced the first
    ("a.yaml", "problem: {scores: [1, 2, 3], d_k: 1}\nanswers:\n  weights: [0.5, 0.2447, 0.6652]\n"
     "  weights: [0.09, 0.2447, 0.6652]\n", "key 'weights' is given twice, line 4, column 3"),
    ("a.json", '{"problem": {"scores": [1, 2, 3], "d_k": 1, "d_k": 4}, "answers": {"weights": [0.09, 0.24, 0.67]}}',
     "key 'd_k' is given twice; only one of them would be read"),
])
def test_a_key_given_twice_is_refused(tmp_path, capsys, name, text, msg):
    test_nan_in_json_and_toml_is_refused_not_blank(tmp_path, capsys, name, text, msg)


def test_a_yaml_merge_key_still_overrides_what_it_merges():
    from attnscope.explain.inputs import loads
    assert loads("b: &b {d_k: 4, x: 1}\np: {<<: *b, d_k: 1}\n", "yaml")["p"] == {"d_k": 1, "x": 1}


@pytest.mark.parametrize("query, msg", [(4, "key problem.query 4 is out of range: there are 4 keys (0..3)"),
                                        ("喜", "key problem.query must be an integer, got '喜'"),
                                        (1.5, "key problem.query must be an integer, got 1.5")])
def test_a_row_problems_query_is_read(tmp_path, capsys, query, msg):
    # query was accepted and never read: 4 (of 4 keys), '喜' or 1.5 passed, and the report did not name the row
    text = f"problem: {{scores: [2, 1, 0.5, -1], tokens: [我, 喜, 欢, 人], d_k: 4, query: {query}}}\n" \
           "answers: {scaled: [1, 0.5, 0.25, -0.5]}\n"
    test_nan_in_json_and_toml_is_refused_not_blank(tmp_path, capsys, "a.yaml", text, msg)
    f = tmp_path / "ok.yaml"
    f.write_text(text.replace(f"query: {query}", "query: 1"), encoding="utf-8")
    assert "Problem: one row of 4 given scores, d_k = 4. It is the row of query 喜 (position 1)." in \
        check(str(f)).render("markdown")
    assert "这是查询 喜（位置 1）的一行。" in check(str(f)).render("markdown", lang="zh")


def test_a_row_problem_with_a_factor_names_it(tmp_path):
    # the report said "Problem: one row of 3 given scores, d_k = -." for a factor of 0.125
    f = tmp_path / "a.yaml"
    f.write_text("problem: {scores: [20, -10, 5], factor: 0.125}\nanswers: {scaled: [2.5, -1.25, 0.625]}\n",
                 encoding="utf-8")
    r = check(str(f))
    assert "Problem: one row of 3 given scores, each multiplied by 0.125." in r.render("markdown")
    assert "每个乘以 0.125" in r.render("markdown", lang="zh") and "d_k = -" not in r.render("markdown")


@pytest.mark.parametrize("dk, shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf"), ("0", "0"), ("2.5", "2.5")])
def test_a_d_k_that_is_not_a_positive_integer_is_one_sentence(tmp_path, capsys, dk, shown):
    # d_k: .nan ended in "ValueError: cannot convert float NaN to integer", .inf in an OverflowError traceback
    text = f"problem: {{scores: [1, 2], d_k: {dk}}}\nanswers: {{weights: [0.27, 0.73]}}\n"
    test_nan_in_json_and_toml_is_refused_not_blank(tmp_path, capsys, "a.yaml", text,
                                                   f"key problem.d_k: expected a positive integer, got {shown}")


@pytest.mark.parametrize("entry", ["-.inf", ".inf"])
def test_an_infinite_answer_where_a_number_follows_is_judged(tmp_path, entry):
    # a weight written -.inf (or a scaled score .inf) made the recomputation from the learner's numbers
    # -inf·0 or inf/inf: decimal.InvalidOperation out of an object matmul, and the CLI crashed (a segfault here)
    f = tmp_path / "a.yaml"
    for step, row in (("weights", f"[{entry}, 0.198, 0.401]"), ("scaled", f"[{entry}, 0, 0.71]")):
        f.write_text(f"problem: {{example: three-tokens}}\nanswers:\n  {step}: [{row}, ~, ~]\n  output: ~\n",
                     encoding="utf-8")
        r = check(str(f))
        assert [(e.step, e.col, e.verdict) for e in r.entries] == [(step, 0, "wrong"), (step, 1, "correct"),
                                                                   (step, 2, "correct")]
        assert main(["check", str(f)]) == 1


def test_an_example_that_is_not_a_name(tmp_path, capsys):
    # example: [] ended in "TypeError: unhashable type: 'list'"
    test_nan_in_json_and_toml_is_refused_not_blank(tmp_path, capsys, "a.yaml",
                                                   "problem: {example: []}\nanswers: {Q: ~}\n",
                                                   "unknown example []; choose one of")



@pytest.mark.parametrize("lang, line", [
    ("en", "12 entries are empty (Q 6, K 6): an empty answer counts as missing, not as right."),
    ("zh", "有 12 项空白（查询（Q） 6、键（K） 6）：空白算作缺答，不算正确。"),  # steps joined by 、
])
def test_answers_all_left_blank_are_judged_missing_not_refused(tmp_path, capsys, lang, line):
    """Answers all left blank (the file `exercise` writes, checked as it is) are judged: every
    entry missing, exit 1, in en and zh, as when some are left blank; it was an error (exit 2)."""
    f = tmp_path / "answers.yaml"
    f.write_text(HEAD + "  Q: ~\n  K: [[~, ~], ~, [null, null]]\n", encoding="utf-8")
    r = check(str(f))
    assert not r.ok and r.entries == [] and r.blanks == {"Q": 6, "K": 6} and r.missing == 12
    assert main(["check", str(f), "--lang", lang, "-f", "markdown"]) == 1
    assert line in capsys.readouterr().out


@pytest.mark.parametrize("lang, line", [
    ("en", "line 5: the key K is followed by the full-width '：' of a Chinese input method; write 'K: ' (a half-width "
           "':' and a space)"),
    ("zh", "第 5 行：键 K 后面是中文输入法的全角“：”；请写成 'K: '（半角 ':' 加一个空格）"),
])
def test_a_key_typed_with_a_chinese_colon_is_named(tmp_path, capsys, lang, line):
    """'K：[[…]]' (a Chinese input method's colon) broke the YAML, and the error named the next line in
    YAML's words ('line 6, column 4: mapping values are not allowed here'). The sentence now names the
    key and its line; a '：' inside a value or a comment is left to YAML."""
    f = tmp_path / "answers.yaml"
    f.write_text(HEAD + "  Q: [[1, 0], [1, 1], [2, 1]]  # 注意：\n  K：[[1, 2], [0, 1], [1, 3]]\n  V: [[2, 0], [0, 1], [2, 1]]\n",
                 encoding="utf-8")
    assert main(["check", str(f), "--lang", lang]) == 2
    assert capsys.readouterr().err.strip().endswith(f"answers.yaml{'，' if lang == 'zh' else ', '}{line}")
    f.write_text("title: 练习：第一题\n" + HEAD + "  Q: [[1, 0], [1, 1], [2, 1]\n", encoding="utf-8")
    with pytest.raises(AttnscopeError, match="not valid YAML"):
        check(str(f))


@pytest.mark.parametrize("encoding", ["gbk", "utf-16"])
@pytest.mark.parametrize("lang, advice", [("en", "save the file as UTF-8 (an editor may have saved it as GBK or UTF-16)"),
                                          ("zh", "请把文件另存为 UTF-8（编辑器可能把它存成了 GBK 或 UTF-16）")])
def test_a_file_saved_as_gbk_or_utf16_is_told_to_be_saved_as_utf8(tmp_path, capsys, encoding, lang, advice):
    """A Chinese Windows editor saves GBK (or UTF-16, 'Unicode'); the error named the byte and no remedy."""
    f = tmp_path / "answers.yaml"
    f.write_bytes((HEAD.replace("three-tokens", "three-tokens  # 我的答案") + "  sums: [1, 2, 3]\n").encode(encoding))
    assert main(["check", str(f), "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "UTF-8" in err and err.rstrip().endswith(advice), err


@pytest.mark.parametrize("lang, indent, point", [
    ("en", "answers.yaml, line 4: the line is indented with the full-width space '　' (U+3000) of a Chinese input "
           "method; indent with half-width spaces",
     "answers.yaml, key sums, entry 1 (from 0): '2。5' holds the Chinese full stop '。' where a decimal point "
     "belongs; write '.' (half-width)"),
    ("zh", "answers.yaml，第 4 行：这一行用中文输入法的全角空格“　”（U+3000）缩进；请用半角空格缩进",
     "answers.yaml，键 sums，第 1 个元素（从 0 数起）：'2。5' 里用了中文句号“。”作小数点；请写半角 '.'")])
def test_an_ideographic_indent_and_a_chinese_full_stop_are_named(tmp_path, capsys, monkeypatch, lang, indent, point):
    """A Chinese input method's '　' indentation was read as part of a top-level key ("unknown top-level
    key '\\u3000\\u3000sums'") and '2。5' was only "not a number"."""
    monkeypatch.chdir(tmp_path)
    for body, want in ((HEAD + "\u3000\u3000sums: [1, 2, 3]\n", indent), (HEAD + "  sums: [1, 2。5, 3]\n", point)):
        (tmp_path / "answers.yaml").write_text(body, encoding="utf-8")
        assert main(["check", "answers.yaml", "--lang", lang]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.rstrip().endswith(want), err
