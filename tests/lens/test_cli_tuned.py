"""``attnscope lens --train-tuned`` and ``--tuned``: the file, the held-out table and the side-by-side
table carry the library's numbers, in English and Chinese; bad options are one sentence."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.cli import main
from attnscope.lens import logit_lens
from attnscope.lens.tuned import load_tuned_lens, tuned_lens
from attnscope.testing.tiny import FAMILIES

TEXT = "the cat sat on the mat"
TRAIN = ["--texts", "4", "--held-out", "3", "--length", "12", "--steps", "3", "--batch", "2", "--lr", "0.003",
         "--seed", "2", "--threads", "1", "--optimizer", "adam"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("lens-tuned-cli")
    return {name: str(FAMILIES[name].build(root / name)) for name in ("llama_gqa", "gpt2")}


@pytest.fixture(scope="module")
def trained(folders, tmp_path_factory):
    """A lens trained by the command, its held-out JSON and what the command printed."""
    out = tmp_path_factory.mktemp("trained")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):  # a module fixture cannot use capsys
        rc = main(["lens", "--model", folders["llama_gqa"], "--train-tuned", str(out / "l.safetensors")] + TRAIN
                  + ["-o", str(out / "held.json"), "-o", str(out / "held.png")])
    assert rc == 0
    return out, buf.getvalue().splitlines()


def test_training_writes_the_lens_and_the_held_out_table(trained, folders):
    out, lines = trained
    model = attnscope.load(folders["llama_gqa"])
    lens = load_tuned_lens(out / "l.safetensors", model)
    s = lens.settings
    assert (s["texts"], s["held_out"], s["length"], s["steps"], s["batch"], s["lr"], s["seed"]) == (4, 3, 12, 3, 2, 0.003, 2)
    assert s["command"].startswith("attnscope lens --model ") and "--optimizer adam --lr 0.003 --threads 1" in s["command"]
    data = json.loads((out / "held.json").read_text(encoding="utf-8"))
    assert len(data["texts"]) == 3 and data["points"] == lens.points and len(data["losses"]) == 3
    assert [t["index"] for t in data["texts"]] == s["held_out_indices"]
    logit = np.array([t["logit"] for t in data["texts"]]).mean(0)
    tuned = np.array([t["tuned"] for t in data["texts"]]).mean(0)
    for name, a, b in zip(lens.points, logit, tuned):
        assert f"{name:<26} {a:11.4f} {b:11.4f}" in lines
    assert lines[-3].startswith(f"The tuned lens is lower at {int((tuned[:-1] < logit[:-1]).sum())} of 4 points")
    assert (out / "held.png").stat().st_size > 10_000


def test_tuned_beside_the_logit_lens_in_chinese(trained, folders, tmp_path, capsys):
    out, _ = trained
    model = attnscope.load(folders["llama_gqa"])
    j = tmp_path / "both.json"
    assert main(["lens", "--text", TEXT, "--model", folders["llama_gqa"], "--tuned", str(out / "l.safetensors"),
                 "--position", "2", "--lang", "zh", "-o", str(j), "-o", str(tmp_path / "both.png")]) == 0
    lines = capsys.readouterr().out.splitlines()
    r = logit_lens(model, TEXT, k=3)
    t = tuned_lens(model, TEXT, load_tuned_lens(out / "l.safetensors"), k=3)
    assert "在位置 2" in lines[0] and "logit lens 与 tuned lens" in lines[0]
    row = next(line for line in lines if line.startswith("layers.0.out"))
    for res in (r, t):
        assert f"{float(res.target_prob[2, 2]):8.4f} {int(res.target_rank[2, 2]):6d} {float(res.kl[2, 2]):10.4f}" in row
    data = json.loads(j.read_text(encoding="utf-8"))
    assert data["tuned_lens"]["kl"][2][2] == pytest.approx(float(t.kl[2, 2]))
    assert data["logit_lens"]["kl"][2][2] == pytest.approx(float(r.kl[2, 2]))
    assert data["tuned_settings"]["seed"] == 2
    assert (tmp_path / "both.png").stat().st_size > 10_000


@pytest.mark.parametrize("argv, words", [
    (["--text", TEXT, "--tuned", "missing.safetensors"], "tuned lens 'missing.safetensors': no such file"),
    (["--text", TEXT, "--tuned", "a.safetensors", "--train-tuned", "b.safetensors"], "give one of them"),
    (["--text", TEXT, "--dla", "--train-tuned", "b.safetensors"], "are for the lens, not for --dla"),
    ([], "give --text (the prompt), or --train-tuned FILE"),
    (["--train-tuned", "lens.bin"], "the file must end in .safetensors"),
    (["--train-tuned", "no/such/folder/l.safetensors"], "the folder 'no/such/folder' does not exist"),
    (["--train-tuned", "l.safetensors", "--lr", "-1"], "the learning rate -1.0 must be a positive finite number"),
    (["--train-tuned", "l.safetensors", "--texts", "0"], "--texts"),
])
def test_bad_options_are_one_sentence(folders, capsys, argv, words):
    assert main(["lens", "--model", folders["llama_gqa"]] + argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_a_lens_for_another_model_is_refused(trained, folders, capsys):
    out, _ = trained
    assert main(["lens", "--text", TEXT, "--model", folders["gpt2"], "--tuned", str(out / "l.safetensors")]) == 2
    assert "holds maps for 5 points of width 64" in capsys.readouterr().err


def test_an_existing_lens_file_is_kept_unless_overwrite(folders, tmp_path, capsys):
    out = tmp_path / "l.safetensors"
    out.write_bytes(b"an earlier lens")
    assert main(["lens", "--model", folders["llama_gqa"], "--train-tuned", str(out)]) == 2
    assert f"--train-tuned {str(out)!r} already exists; add --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"an earlier lens"


@pytest.mark.parametrize("argv, words", [
    (["--text", TEXT, "--steps", "5"], "--steps is a training option: it applies with --train-tuned FILE only"),
    (["--text", TEXT, "--seed", "1"], "--seed is a training option"),
    (["--text", TEXT, "--optimizer", "sgd"], "--optimizer is a training option"),
    (["--text", TEXT, "--lr", "0.1"], "--lr is a training option"),
    (["--text", TEXT, "--tuned", "a.safetensors", "--held-out", "3"], "--held-out is a training option"),
    (["--train-tuned", "l.safetensors", "--text", TEXT], "--text reads one text's lens; --train-tuned measures"),
    (["--train-tuned", "l.safetensors", "--position", "0"], "--position reads one text's lens"),
    (["--train-tuned", "l.safetensors", "--target", " the"], "--target reads one text's lens"),
    (["--train-tuned", "l.safetensors", "--top", "5"], "--top reads one text's lens"),
])
def test_an_option_the_run_does_not_read_is_refused_not_dropped(folders, capsys, tmp_path, monkeypatch, argv, words):
    """The training options without --train-tuned, and one text's options with it, changed nothing
    (the logit lens ran as without '--steps 5', training ran as without '--text …'); each is one
    sentence before the model loads and before any file is written."""
    monkeypatch.chdir(tmp_path)
    assert main(["lens", "--model", "no-such-model"] + argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "l.safetensors").exists()
