"""``check --lang zh`` names every step in Chinese (with the answer file's key behind it), in the
table, the lines and the verdict; English and JSON keep the keys."""

import json

from attnscope.check import check
from attnscope.check.answers import ALIASES
from attnscope.cli import main
from attnscope.i18n import TABLES, step_name


def test_every_answer_key_has_a_chinese_step_name():
    for step in set(ALIASES.values()):
        zh = step_name(step, "zh")
        assert zh != step and zh.endswith(f"（{step}）"), step
        assert step_name(step, "en") == step
    assert step_name("output[1]", "zh") == "输出（output），头 1"
    assert step_name("weights[1]", "en") == "weights[1]"
    assert step_name("not-a-step", "zh") == "not-a-step"
    assert len(TABLES["steps"]["zh"]) == len(TABLES["steps"]["en"])


def test_a_chinese_report_names_its_steps_in_chinese(capsys):
    assert main(["check", "docs/examples/row-answers.yaml", "--format", "markdown", "--lang", "zh"]) == 1
    md = capsys.readouterr().out
    table = [ln.split("|")[1].strip() for ln in md.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert table == ["缩放后的分数（scaled）", "指数（exp）", "行和（sum）", "注意力权重（weights）", "输出（output）"]
    assert "- 注意力权重（weights），第 1 (喜) 项：你写的是 0.2653" in md
    assert "它来自你的注意力权重（weights）" in md
    assert "**计算第一次出错在注意力权重（weights）。**" in md


def test_english_and_json_keep_the_keys():
    r = check("docs/examples/row-answers.yaml")
    assert "| weights | 4 | 3 |" in r.render("markdown")
    assert json.loads(r.render("json", lang="zh"))["first_wrong"]["step"] == "weights"


def test_the_problem_line_has_no_space_after_a_chinese_full_stop(capsys):
    """'题目：给定的一行 9 个分数，d_k = 64。 这是查询 喜（位置 1）的一行。' had an English space after '。'."""
    assert main(["check", "--example", "xi-row-article", "--format", "markdown", "--lang", "zh"]) == 0
    assert "题目：给定的一行 9 个分数，d_k = 64。这是查询 喜（位置 1）的一行。" in capsys.readouterr().out.splitlines()
    assert main(["check", "--example", "xi-row-article", "--format", "markdown"]) == 0
    assert "d_k = 64. It is the row of query 喜 (position 1)." in capsys.readouterr().out
