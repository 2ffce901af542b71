"""A teacher's workflow: a blank answer is missing (never right), and a class of answers files gives one
summary (CSV: student × step, first mistake, carried vs new)."""

from __future__ import annotations

import csv
import io
import math

import pytest

from attnscope.check import check
from attnscope.check.classroom import COLUMNS, answer_files, check_class
from attnscope.cli import main
from attnscope.errors import InputError

# The three-token article by hand (plain Python, independent of attnscope): X = [[1,0],[0,1],[1,1]],
# W_Q = [[1,0],[1,1]], W_K = [[1,2],[0,1]] → Q = [[1,0],[1,1],[2,1]], K = [[1,2],[0,1],[1,3]].
Q = [[1, 0], [1, 1], [2, 1]]
K = [[1, 2], [0, 1], [1, 3]]


def _scaled(q):
    return [[round(sum(a * b for a, b in zip(qi, kj)) / math.sqrt(2), 2) for kj in K] for qi in q]


PROBLEM = "problem:\n  example: three-tokens\n"


def test_a_summary_that_is_a_folder_stops_before_the_class_is_checked(tmp_path, capsys):
    """--summary FOLDER checked every file, printed the class table, then failed at the write
    ('cannot write --summary …: Is a directory'); now one sentence and nothing printed."""
    cls = tmp_path / "class"
    cls.mkdir()
    _file(cls, "a.yaml", "  Q: ~\n")
    assert main(["check", str(cls), "--summary", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, (out, err)
    assert f"--summary {str(tmp_path)!r} is a folder; give the CSV file's name" in err


def _file(folder, name, answers: str):
    p = folder / name
    p.write_text(PROBLEM + "answers:\n" + answers, encoding="utf-8")
    return p


def test_a_partly_blank_answer_file_is_missing_not_correct(tmp_path, capsys):
    f = _file(tmp_path, "a.yaml", "  Q: [[1, 0], [1, ~], [2, 1]]\n  K: [[1, 2], [0, 1], [1, 3]]\n")
    r = check(str(f))
    assert r.counts() == {"correct": 11, "rounding": 0, "carried": 0, "wrong": 0}
    assert r.missing == 1 and not r.ok and r.to_dict()["missing"] == 1
    assert main(["check", str(f), "-f", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "1 entry is empty (Q 1)" in out and "All correct" not in out
    # a whole step left blank is missing too; a step left out is not asked for
    g = _file(tmp_path, "b.yaml", "  Q: [[1, 0], [1, 1], [2, 1]]\n  K: ~\n")
    assert check(str(g)).missing == 6 and not check(str(g)).ok
    assert main(["check", str(g), "-f", "markdown"]) == 1
    assert "6 entries are empty (K 6)" in capsys.readouterr().out
    h = _file(tmp_path, "c.yaml", "  Q: [[1, 0], [1, 1], [2, 1]]\n")
    assert check(str(h)).ok and check(str(h)).missing == 0


def test_class_summary_csv(tmp_path, capsys):
    cls = tmp_path / "class"
    cls.mkdir()
    good = _scaled(Q)
    _file(cls, "li_lei.yaml", f"  Q: {Q}\n  scaled: {good}\n")
    wrong_q = [Q[0], [1, 2], Q[2]]  # a slip in Q row 1; scaled row 1 follows from it (carried)
    _file(cls, "han_meimei.yaml", f"  Q: {wrong_q}\n  scaled: {_scaled(wrong_q)}\n")
    new_slip = [good[0], good[1], [good[2][0], 9.99, good[2][2]]]  # Q right, a new mistake in scaled
    _file(cls, "wang_fang.yaml", f"  Q: {Q}\n  scaled: {new_slip}\n")
    _file(cls, "zhang_wei.yaml", f"  Q: {Q}\n  scaled: [{good[0]}, ~, {good[2]}]\n")
    _file(cls, "broken.yaml", "  Q: [[1, 0]]\n")
    (cls / "notes.txt").write_text("not an answers file")
    out = tmp_path / "summary.csv"
    assert main(["check", str(cls), "--summary", str(out)]) == 2  # one file could not be checked
    table = capsys.readouterr().out
    assert "li_lei" in table and "✗1" in table and "↪3" in table and "∅3" in table
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert tuple(rows[0]) == COLUMNS
    by = {(r["student"], r["step"]): r for r in rows}
    assert [r["student"] for r in rows] == ["broken", "han_meimei", "han_meimei", "li_lei", "li_lei",
                                            "wang_fang", "wang_fang", "zhang_wei", "zhang_wei"]
    assert by[("broken", "")]["status"].startswith("error: ") and "expected 3 rows" in by[("broken", "")]["status"]
    assert by[("li_lei", "Q")]["status"] == by[("li_lei", "scaled")]["status"] == "ok"
    hm_q, hm_s = by[("han_meimei", "Q")], by[("han_meimei", "scaled")]
    assert (hm_q["new"], hm_q["carried"], hm_q["first_mistake"], hm_q["status"]) == ("1", "0", "1 (爱)", "new mistake")
    assert (hm_s["new"], hm_s["carried"], hm_s["first_mistake"], hm_s["status"]) == ("0", "3", "", "carried")
    wf = by[("wang_fang", "scaled")]
    assert (wf["new"], wf["carried"], wf["first_mistake"], wf["status"]) == ("1", "0", "2 (你)", "new mistake")
    zw = by[("zhang_wei", "scaled")]
    assert (zw["entries"], zw["correct"], zw["missing"], zw["status"]) == ("9", "6", "3", "missing")
    # an existing summary is kept unless --overwrite says otherwise
    assert main(["check", str(cls), "--summary", str(out)]) == 2
    assert "already exists; add --overwrite" in capsys.readouterr().err
    assert main(["check", str(cls), "--summary", str(out), "--overwrite"]) == 2 and out.is_file()
    capsys.readouterr()
    # without the broken file: exit 1 (mistakes and a blank), CSV on stdout with --format csv
    (cls / "broken.yaml").unlink()
    assert main(["check", str(cls), "-f", "csv"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == ",".join(COLUMNS)
    # files one by one work as the folder; all right → exit 0
    assert main(["check", str(cls / "li_lei.yaml"), str(cls / "li_lei.yaml")]) == 0



def test_class_summary_csv_in_chinese_keeps_the_keys(tmp_path, capsys):
    """--lang zh: a step_name column with the Chinese step names (not the English keys) follows the
    step key; every other column, the header's keys and the status words are the English CSV's; the
    class table names the steps (its first-mistake column too) in Chinese."""
    cls = tmp_path / "class"
    cls.mkdir()
    _file(cls, "han_meimei.yaml", f"  Q: {[Q[0], [1, 2], Q[2]]}\n  scaled: {_scaled([Q[0], [1, 2], Q[2]])}\n")
    _file(cls, "li_lei.yaml", f"  Q: {Q}\n  scaled: {_scaled(Q)}\n")
    en, zh = tmp_path / "en.csv", tmp_path / "zh.csv"
    assert main(["check", str(cls), "--summary", str(en)]) == 1
    assert main(["check", str(cls), "--summary", str(zh), "--lang", "zh"]) == 1
    assert main(["check", str(cls), "-f", "csv", "--lang", "zh"]) == 1
    stdout = capsys.readouterr().out
    assert stdout.endswith(zh.read_text(encoding="utf-8"))  # the table's CSV is the file's
    assert "查询（Q），第 1 (爱) 行" in stdout and "缩放后的分数（scaled）" in stdout  # the table names the steps
    en_rows = list(csv.DictReader(io.StringIO(en.read_text(encoding="utf-8"))))
    zh_rows = list(csv.DictReader(io.StringIO(zh.read_text(encoding="utf-8"))))
    assert tuple(zh_rows[0]) == ("student", "file", "step", "step_name", *COLUMNS[3:])
    assert [r["step_name"] for r in zh_rows] == ["查询（Q）", "缩放后的分数（scaled）"] * 2
    assert [{k: v for k, v in r.items() if k != "step_name"} for r in zh_rows] == en_rows
    assert zh_rows[0]["first_mistake"] == "1 (爱)" and zh_rows[0]["status"] == "new mistake"

def test_class_input_errors(tmp_path):
    with pytest.raises(InputError, match="holds no answers files"):
        answer_files([tmp_path])
    with pytest.raises(InputError, match="neither an answers file nor a folder"):
        answer_files([tmp_path / "nope.yaml"])
    _file(tmp_path, "a.yaml", "  Q: ~\n")
    _file(tmp_path, "a.json", "")
    with pytest.raises(InputError, match="two files for the student 'a'"):
        check_class([tmp_path])
    assert main(["check", str(tmp_path / "a.yaml"), "--summary", "x.csv"]) == 2  # --summary is for a class


def test_howto_row_format_and_class_summary_are_what_the_files_give():
    """docs/howto/check-a-calculation.md: its row-problem block is docs/examples/row-answers.yaml (whose
    check the page's console block runs), and its CSV lines are what the class folder gives."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "howto" / "check-a-calculation.md").read_text(encoding="utf-8")
    row = page.split("## One row", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    file = (root / "docs" / "examples" / "row-answers.yaml").read_text(encoding="utf-8")
    assert file.endswith(row) and file[:-len(row)].lstrip("#").strip()  # the file = its comment + the block
    r = check(str(root / "docs" / "examples" / "row-answers.yaml"))
    assert r.counts() == {"correct": 12, "rounding": 0, "carried": 2, "wrong": 1}
    assert [(e.step, e.col) for e in r.by_verdict("wrong")] == [("weights", 1)]
    shown = page.split("## A whole class", 1)[1].split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    csv_text = check_class([root / "docs" / "examples" / "class"]).to_csv().splitlines()
    assert shown == csv_text[:len(shown)] and len(shown) >= 4


def test_class_table_names_no_row_for_a_one_row_step(tmp_path):
    # One row of given scores [20, −10, 5] at d_k = 64: softmax([2.5, −1.25, 0.625]) =
    # [0.850, 0.020, 0.130] (by hand: e^2.5 = 12.18, e^−1.25 = 0.287, e^0.625 = 1.868); 0.76 is a slip.
    (tmp_path / "bob.yaml").write_text("problem: {scores: [20, -10, 5], d_k: 64}\n"
                                       "answers:\n  weights: [0.76, 0.02, 0.13]\n", encoding="utf-8")
    header, body = check_class([tmp_path]).table("en")
    where = body[0][header.index("first mistake")]
    assert where == "weights", where  # was "weights, row -"


def test_a_students_error_is_in_the_tables_language(tmp_path, capsys):
    # with --lang zh the table said "无法评判: …, key Q, row 0, column 1 (from 0): 'x' is not a number" (English)
    cls = tmp_path / "class"
    cls.mkdir()
    _file(cls, "li_lei.yaml", f"  Q: {Q}\n")
    _file(cls, "wang_fang.yaml", "  Q: [[1, x], [1, 1], [2, 1]]\n")
    assert main(["check", str(cls), "--lang", "zh"]) == 2
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("wang_fang"))
    assert "无法评判" in line and "'x' 不是数" in line and "is not a number" not in line, line
    assert main(["check", str(cls), "-f", "csv", "--lang", "zh"]) == 2  # the CSV's status stays English
    assert "error: " in capsys.readouterr().out
