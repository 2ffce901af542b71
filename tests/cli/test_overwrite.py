"""No command replaces a file without being asked: an existing output is one sentence naming it
and --overwrite (the one switch every command that writes files takes), exit status 2, the file
untouched and no work done; with --overwrite it is replaced."""

import json

import pytest

from attnscope.cli import build_parser, main

OLD = b"an earlier result"


def _refused(capsys, argv, path, flag="-o"):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.endswith(f"error: {flag} {str(path)!r} already exists; add --overwrite to replace it, or choose "
                        "another name"), err
    assert path.read_bytes() == OLD


@pytest.mark.parametrize("argv, name", [
    (["explain", "--example", "three-tokens", "-f", "markdown"], "worked.md"),
    (["example", "three-tokens", "-f", "json"], "worked.json"),
    (["exercise", "--seed", "3", "--no-answers"], "problem.txt"),
    (["plot", "--kind", "softmax", "--scores", "1,2,3"], "t.png"),
])
def test_files_written_without_a_model(capsys, tmp_path, argv, name):
    out = tmp_path / name
    out.write_bytes(OLD)
    _refused(capsys, argv + ["-o", str(out)], out)
    assert main(argv + ["-o", str(out), "--overwrite"]) == 0
    assert out.read_bytes() != OLD and out.stat().st_size > 0


@pytest.mark.parametrize("argv, flag", [
    (["view", "The bank."], "-o"),
    (["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "a", "--wrong", "b"], "-o"),
    (["generate", "The capital of France is", "--max-new-tokens", "1"], "--view"),
])
def test_files_written_after_a_model_runs_are_refused_before_it_loads(capsys, tmp_path, monkeypatch, argv, flag):
    import attnscope.models as models

    def no_model(*a, **k):
        raise AssertionError("the model must not load when the output cannot be written")
    monkeypatch.setattr(models, "load", no_model)
    out = tmp_path / ("page.html" if flag == "--view" or argv[0] == "view" else "p.json")
    out.write_bytes(OLD)
    _refused(capsys, argv + [flag, str(out)], out, flag)


def test_result_folders(capsys, tmp_path):
    out = tmp_path / "var"
    out.mkdir()
    (out / "results.json").write_bytes(OLD)
    argv = ["experiment", "variance", "--quick", "--samples", "200", "--d-k", "2,4", "--no-progress", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"attnscope experiment: error: --out {str(out)!r} already holds results (results.json); add "
                   "--overwrite to replace them, or choose another folder")
    assert (out / "results.json").read_bytes() == OLD
    assert main(argv + ["--overwrite"]) == 0
    assert json.loads((out / "results.json").read_text())["experiment"] == "variance"

    ana = tmp_path / "ana"
    ana.mkdir()
    (ana / "report.md").write_bytes(OLD)
    corpus = tmp_path / "c.txt"
    corpus.write_text("The cat sat.\n", encoding="utf-8")
    assert main(["analyze", str(corpus), "--out", str(ana), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (f"attnscope analyze: error: --out {str(ana)!r} already holds results "
                                               "(report.md); add --overwrite to replace them, or choose another folder")


def test_every_command_that_writes_takes_the_same_switch():
    sub = build_parser()._subparsers._group_actions[0].choices
    writers = ["explain", "example", "exercise", "plot", "view", "patch", "generate", "analyze", "experiment"]
    for name in writers:
        assert "--overwrite" in sub[name]._option_string_actions, name
    assert not any("--force" in p._option_string_actions for p in sub.values())


@pytest.mark.parametrize("argv", [["check", "--example", "xi-row-article", "--overwrite"],
                                  ["check", "docs/examples/class", "--overwrite"]])
def test_check_refuses_overwrite_without_a_summary(capsys, argv):
    # check writes a file only with --summary: --overwrite alone was dropped (exit 0 / 1, as without it)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith("--overwrite replaces an existing output file, and check writes "
                                                    "none without --summary")
    assert main(argv[:-1]) in (0, 1)
    capsys.readouterr()


@pytest.mark.parametrize("argv, outputs", [
    (["explain", "--scores", "1,2,3", "--dk", "1"], "-o"),
    (["example", "three-tokens"], "-o"),
    (["exercise", "--seed", "7", "--no-answers"], "-o"),
    (["generate", "Hello", "--max-new-tokens", "2"], "--view"),
    (["lens", "--text", "Hello there"], "-o/--train-tuned"),
    (["patch", "--clean", "a b", "--corrupted", "a c", "--answer", " b", "--wrong", " c"], "-o")])
def test_overwrite_without_an_output_is_refused_before_any_work(capsys, argv, outputs):
    # each wrote nothing to replace: --overwrite was dropped in silence (explain printed the row as without it)
    assert main([*argv, "--overwrite"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--overwrite replaces an existing output file, and {argv[0]} "
                                                    f"writes none without {outputs}")


def test_overwrite_with_an_output_replaces_it(tmp_path, capsys):
    out = tmp_path / "row.json"
    out.write_text("old", encoding="utf-8")
    assert main(["explain", "--scores", "1,2,3", "--dk", "1", "-f", "json", "-o", str(out), "--overwrite"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))  # the worked row, not "old"
