"""``attnscope lens``: the printed lens table and the DLA lines carry the library's numbers, in
English and Chinese; figures and JSON are written; bad options are one sentence."""

from __future__ import annotations

import json

import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.cli import main
from attnscope.lens import direct_logit_attribution, logit_lens
from attnscope.testing.tiny import FAMILIES

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(FAMILIES["llama_gqa"].build(tmp_path_factory.mktemp("lens-cli") / "llama"))


def test_the_lens_table_and_json(folder, tmp_path, capsys):
    out = tmp_path / "lens.json"
    assert main(["lens", "--text", TEXT, "--model", folder, "--position", "2", "-o", str(out),
                 "-o", str(tmp_path / "lens.png")]) == 0
    lines = capsys.readouterr().out.splitlines()
    r = logit_lens(attnscope.load(folder), TEXT, k=3)
    assert lines[0].startswith("Logit lens of") and "at position 2" in lines[0]
    last = next(line for line in lines if line.startswith(f"layers.{len(r.points) // 2 - 1}.out"))
    assert f"{float(r.target_prob[-1, 2]):8.4f}" in last and last.rstrip().endswith("0.0000")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["points"][0] == "embed" and data["kl"][1][2] == pytest.approx(float(r.kl[1, 2]))
    assert (tmp_path / "lens.png").stat().st_size > 10_000


def test_dla_lines_in_chinese_sum_to_the_logit(folder, capsys):
    d = direct_logit_attribution(attnscope.load(folder), TEXT)
    assert main(["lens", "--text", TEXT, "--model", folder, "--dla", "--lang", "zh"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"位置 {len(d.tokens) - 1} 上") and f"各部分之和为 {float(d.parts.sum()):.4f}" in first
    assert f"模型的 logit：{d.logit:.4f}" in first


@pytest.mark.parametrize("argv, words", [
    (["--versus", "x"], "--versus is for --dla"),
    (["--dla", "--versus", "x"], "--versus needs --target"),
    (["-o", "lens.txt"], "-o 'lens.txt': write a figure"),
    (["--position", "99"], "position 99 is out of range"),
])
def test_bad_options_are_one_sentence(folder, capsys, argv, words):
    assert main(["lens", "--text", TEXT, "--model", folder] + argv) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--dla"]])
def test_a_whitespace_only_text_is_refused_as_generate_and_patch_refuse_it(capsys, extra):
    """'lens --text "   "' read three spaces as a prompt and printed a table (generate and patch refuse
    such a prompt); one sentence now, before the model loads (no-such-model is never read)."""
    assert main(["lens", "--text", "   ", "--model", "no-such-model", *extra]) == 2
    err = capsys.readouterr().err
    assert "text is empty; type a sentence" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra", [["--dpi", "300"], ["--dpi", "300", "-o", "lens.json"], ["--dla", "--dpi", "300"]])
def test_dpi_without_a_figure_is_refused_not_dropped(capsys, tmp_path, monkeypatch, extra):
    """--dpi sets a figure's resolution: with no figure among -o (the printed table, .json numbers) it
    was dropped in silence. One sentence now, before the model loads (no-such-model is never read)."""
    monkeypatch.chdir(tmp_path)
    assert main(["lens", "--text", "Hi there", "--model", "no-such-model", *extra]) == 2
    err = capsys.readouterr().err
    assert "--dpi 300 sets a figure's resolution, and no -o file is a figure" in err and err.count("\n") == 1, err
