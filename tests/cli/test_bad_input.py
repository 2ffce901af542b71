"""Bad input to every command: one line on stderr naming the problem, exit status 2, no traceback.

Covers text that is not valid Unicode (what Python's argv makes of non-UTF-8 bytes), every numeric
option's range, --device availability and output folders that cannot be made.
"""

import json
import subprocess
import sys

import pytest
import torch

from attnscope.cli import main


def one_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


NOT_UTF8 = "caf\udce9 bank"  # sys.argv of the bytes b"caf\xe9 bank" (surrogateescape)


@pytest.mark.parametrize("argv", [
    ["explain", "--text", NOT_UTF8, "--position", "1"],
    ["explain", "--text", "a\ud800b", "--position", "1"],
    ["plot", NOT_UTF8, "-o", "x.png"],
    ["plot", NOT_UTF8, "--kind", "grid", "-o", "x.png"],
])
def test_text_that_is_not_valid_unicode(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    err = one_line(capsys, argv)
    assert "the text is not valid Unicode" in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("argv, what", [
    (["explain", "--example", "three-tokens", "--labels", "a\udce9,b,c"], "--labels is not valid Unicode"),
    (["explain", "--text", "the bank", "--token", "caf\udce9"], "the query token is not valid Unicode"),
])
def test_other_strings_that_are_not_valid_unicode(capsys, argv, what):
    assert what in one_line(capsys, argv)


def test_non_utf8_bytes_on_a_real_command_line():
    r = subprocess.run([sys.executable, "-m", "attnscope", "explain", "--text", b"caf\xe9 bank", "--position", "1"],
                       capture_output=True)
    err = r.stderr.decode("utf-8", "replace").strip()
    assert r.returncode == 2 and len(err.splitlines()) == 1, err
    assert err == ("attnscope explain: error: the text is not valid Unicode: byte 0xE9 at character 3 is not "
                   "UTF-8 (was the text written in another encoding, such as Latin-1? convert it to UTF-8)")


@pytest.mark.parametrize("argv, message", [
    (["plot", "hi", "--dpi", "0", "-o", "x.png"], "--dpi must be from 10 to 2400, got 0"),
    (["plot", "hi", "--dpi", "100000", "-o", "x.png"], "--dpi must be from 10 to 2400, got 100000"),
    (["plot", "hi", "--kind", "grid", "--dpi", "2000", "-o", "x.png"], "use --dpi 836 or less, or an .svg/.pdf file"),
    (["plot", "--kind", "hist", "--d-k", "0", "-o", "x.png"], "--d-k must be from 1 to 16384, got 0"),
    (["plot", "--kind", "hist", "--d-k", "100000000", "-o", "x.png"], "--d-k must be from 1 to 16384"),
    (["plot", "--kind", "softmax", "--scores", "1,nan", "-o", "x.png"], "--scores must be finite numbers, got nan"),
    (["plot", "--kind", "softmax", "--scores", ",", "-o", "x.png"], "--scores is empty"),
    (["plot", "--kind", "softmax", "--scores", "1e308,2", "--temperatures", "1e-300", "-o", "x.png"],
     "x / T overflows float64 at T = 1e-300"),
    (["explain", "scaling", "--seed", "-1"], "--seed must be from 0 to 2147483647, got -1"),
    (["explain", "--scores", "", "--dk", "1"], "--scores: expected a list of numbers, got nothing"),
    (["explain", "--scores", "1,2", "--dk", "1", "--query", "5"], "query 5 is out of range: there are 2 keys"),
    (["analyze", "c.txt", "--threads", "0"], "--threads must be from 1 to 4096, got 0"),
    (["analyze", "c.txt", "--threads", "-3"], "--threads must be from 1 to 4096, got -3"),
    (["analyze", "c.txt", "--max-texts", "0"], "--max-texts must be from 1 to 1000000000, got 0"),
    (["analyze", "c.txt", "--max-length", "1"], "--max-length must be from 2 to 1000000, got 1"),
    (["analyze", "c.txt", "--window", "-1"], "--window must be from 0 to 1000000, got -1"),
    (["analyze", "c.txt", "--importance-texts", "-1"], "--importance-texts must be from 0 to 1000000000, got -1"),
    (["analyze", "c.txt", "--importance-batch", "0"], "--importance-batch must be from 1 to 65536, got 0"),
    (["analyze", "c.txt", "--device", "tpu:9"], "--device: 'tpu:9' is not a device"),
    (["analyze", "c.txt", "--out", "c.txt/out"], "cannot create the output folder 'c.txt/out': 'c.txt' is not a folder"),
    (["experiment", "variance", "--quick", "--out", "c.txt"], "--out 'c.txt' exists and is not a folder"),
    (["experiment", "variance", "--samples", "10000000000"], "--samples must be from 2 to 10000000, got 10000000000"),
    (["experiment", "saturation", "--rows", "100000000000"], "--rows must be from 1 to 1000000, got 100000000000"),
    (["experiment", "saturation", "--length", "10000000"], "--length must be from 1 to 4096, got 10000000"),
    (["experiment", "saturation", "--rows", "1000000", "--length", "4096"], "rows × length = 1,000,000 × 4,096"),
    (["experiment", "training", "--d-model", "1000000"], "--d-model must be from 1 to 4096, got 1000000"),
    (["experiment", "training", "--batch", "100000000"], "--batch must be from 1 to 4096, got 100000000"),
    (["experiment", "training", "--steps", "100000000"], "--steps must be from 1 to 1000000, got 100000000"),
    (["experiment", "training", "--layers", "1000"], "--layers must be from 1 to 48, got 1000"),
    (["experiment", "training", "--seeds", "1000"], "--seeds must be from 1 to 100, got 1000"),
    (["experiment", "training", "--quick", "--jobs", "1000"], "jobs must be at most"),
])
def test_numeric_options_out_of_range(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("The cat sat.\nA dog ran.\n", encoding="utf-8")
    err = one_line(capsys, argv + (["--no-progress"] if argv[0] in ("analyze", "experiment") else []))
    assert message in err
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "out").exists()
    assert not (tmp_path / "analysis").exists() and not (tmp_path / "c.txt").is_dir()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch without a usable CUDA device")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_on_a_machine_without_it(capsys, tmp_path, device):
    (tmp_path / "c.txt").write_text("The cat sat.\n", encoding="utf-8")
    err = one_line(capsys, ["analyze", str(tmp_path / "c.txt"), "--device", device, "--out", str(tmp_path / "o")])
    assert f"--device {device}: " in err and "use --device cpu" in err


def test_cuda_index_past_the_devices(capsys, tmp_path, monkeypatch):
    # the same check where CUDA exists: name how many devices there are
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    (tmp_path / "c.txt").write_text("The cat sat.\n", encoding="utf-8")
    err = one_line(capsys, ["analyze", str(tmp_path / "c.txt"), "--device", "cuda:3", "--out", str(tmp_path / "o")])
    assert "--device cuda:3: there is 1 CUDA device (cuda:0..cuda:0)" in err


def test_max_texts_bounds_the_importance_pass_too(capsys, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"Text number {i} is here." for i in range(8)) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["analyze", str(corpus), "--max-texts", "3", "--importance-texts", "12", "--out", str(out),
                 "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    data = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert data["counters"]["texts"] == 3 and data["counters"]["importance_texts"] == 3
    report = (out / "report.md").read_text(encoding="utf-8")
    for text in (report, stdout):
        assert "statistics pass: 3 texts" in text and "importance pass: 3 texts (the first ones) × 72 heads" in text
    assert "1 process," in report and "in 1 batch of ≤ 32 texts" in report and "(es)" not in report
    assert main(["analyze", str(corpus), "--max-texts", "1", "--importance-texts", "0", "--out", str(out),
                 "--no-progress", "--overwrite"]) == 0
    stdout = capsys.readouterr().out
    assert "statistics pass: 1 text" in stdout and "importance pass: not run (--importance-texts 0)" in stdout
    assert "1 text, " in stdout


@pytest.mark.parametrize("content", ["{bad", "[]", '{"experiment": "training", "data": {"runs": [1]}}',
                                     '{"experiment": "training", "data": {"runs": []}}'])
def test_experiment_from_a_broken_results_file(capsys, tmp_path, content):
    (tmp_path / "results.json").write_text(content, encoding="utf-8")
    err = one_line(capsys, ["experiment", "training", "--from", str(tmp_path), "--out", str(tmp_path / "o")])
    assert str(tmp_path / "results.json") in err


@pytest.mark.parametrize("extra", [["--steps", "5"], ["--quick"], ["--seed", "4"], ["--lr", "0.01"], ["--jobs", "2"],
                                   ["--d-k", "16"], ["--variants", "scaled"]])
def test_experiment_from_refuses_a_training_option(capsys, tmp_path, extra):
    """'training --from DIR' re-renders DIR's runs and trains nothing: '--steps 5', '--quick', '--seed 4' …
    were dropped and the report re-rendered as without them; one sentence before DIR is read."""
    err = one_line(capsys, ["experiment", "training", "--from", str(tmp_path), "--out", str(tmp_path / "o"), *extra])
    assert f"{extra[0]} does not apply with --from: it re-renders the runs in DIR/results.json" in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra", [["--quick"], ["--steps", "5"], ["--out", "x"], ["--lang", "zh"]])
def test_experiment_list_refuses_an_option(capsys, extra):
    """'experiment list' names the experiments and runs nothing: '--quick', '--steps 5' … were dropped."""
    err = one_line(capsys, ["experiment", "list", *extra])
    assert f"{extra[0]} does not apply to 'experiment list'" in err or "不适用于 'experiment list'" in err, err


def test_exercise_answers_into_a_folder(capsys, tmp_path):
    err = one_line(capsys, ["exercise", "--seed", "3", "--answers", str(tmp_path)])
    assert err == (f"attnscope exercise: error: --answers {tmp_path} is a folder; give the answers file's name, "
                   f"e.g. {tmp_path / 'exercise-3-answers.yaml'}")
    assert capsys.readouterr().out == "" and not list(tmp_path.iterdir())


def test_exercise_answers_into_a_missing_folder_stops_before_the_problem(capsys, tmp_path):
    """It printed the whole problem, then failed to write the answers file (exit 2 after the work)."""
    path = tmp_path / "missing" / "a.yaml"
    code = main(["exercise", "--seed", "3", "--answers", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert err.strip() == (f"attnscope exercise: error: cannot write the answers file {path}: the folder "
                           f"{tmp_path / 'missing'} does not exist")


def test_exercise_answers_with_no_answers_is_refused(capsys, tmp_path, monkeypatch):
    """--no-answers dropped --answers in silence (no file, no word said)."""
    monkeypatch.chdir(tmp_path)
    err = one_line(capsys, ["exercise", "--seed", "3", "--no-answers", "--answers", "a.yaml"])
    assert err == ("attnscope exercise: error: --answers a.yaml says where to write the answers file and "
                   "--no-answers writes none: give one of them")
    assert capsys.readouterr().out == "" and not list(tmp_path.iterdir())
