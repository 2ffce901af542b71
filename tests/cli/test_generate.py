"""``attnscope generate``: streams the text, --view writes the viewer of the generation, and bad
options or a model that does not generate are one line on stderr (exit 2)."""

from __future__ import annotations

import pytest

import attnscope
from attnscope.cli import main
from tests.models.decoders.tiny import llama_gqa, mistral_window
from tests.models.seq2seq.fixtures import seq2seq_dirs  # noqa: F401


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return llama_gqa(tmp_path_factory.mktemp("gen") / "llama")


def test_streams_the_greedy_text(folder, capsys):
    assert main(["generate", "Queries and keys are", "--model", str(folder), "--max-new-tokens", "12"]) == 0
    out = capsys.readouterr().out
    g = attnscope.load(folder).generate("Queries and keys are", max_new_tokens=12)
    assert out == g.text + "\n"


def test_sampling_options_and_view(folder, tmp_path, capsys):
    page = tmp_path / "gen.html"
    args = ["generate", "Queries and keys are", "--model", str(folder), "--max-new-tokens", "8",
            "--temperature", "0.9", "--top-k", "20", "--top-p", "0.95", "--seed", "7", "--view", str(page)]
    assert main(args) == 0
    first = capsys.readouterr()
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err  # the page is there now
    assert main(args + ["--overwrite"]) == 0
    assert capsys.readouterr().out == first.out  # the seed reproduces the sample
    assert page.is_file() and page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"wrote {page}" in first.err


def test_view_draws_a_window(tmp_path, capsys):
    import json
    import re
    folder = mistral_window(tmp_path / "mistral")  # window 5, shorter than prompt + outputs
    page = tmp_path / "g.html"
    assert main(["generate", "Queries and keys are", "--model", str(folder), "--max-new-tokens", "8",
                 "--view", str(page)]) == 0
    data = json.loads(re.search(r'id="attnscope-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S).group(1))
    assert set(data["config"]["windows"]) == {5} and len(data["generation"]["steps"]) == 8


@pytest.mark.parametrize("extra, message", [
    (["--max-new-tokens", "0"], "--max-new-tokens must be from 1 to 1000000, got 0"),
    (["--max-new-tokens", "500"], "passes the model's context of 128 positions"),
    (["--temperature", "-1"], "--temperature must be at least 0.0"),
    (["--top-p", "1.5"], r"--top-p must be in (0, 1], got 1.5"),
    (["--top-k", "0"], "--top-k must be from 1 to 1000000"),
    (["--chat"], "has no chat template"),
    # said "system= needs chat=True", the Python API's words, after loading the model
    (["--system", "Be brief."], "--system needs --chat: the system message is part of the chat template"),
    (["--view", "/nonexistent/dir/g.html"], "give a file name in an existing folder"),
    # greedy (the default temperature) took the argmax and dropped them without a word
    (["--top-k", "5"], "at --temperature 0 (greedy, the default) the most likely token is taken"),
    (["--top-p", "0.5"], "leave --top-p out"),
    # --seed at temperature 0 printed the greedy text, the seed dropped without a word
    (["--seed", "3"], "at --temperature 0 (greedy, the default) no token is drawn at random"),
    (["--temperature", "0", "--seed", "0"], "leave --seed out"),
])
def test_errors_are_one_line(folder, capsys, extra, message):
    assert main(["generate", "hello", "--model", str(folder)] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_encoder_does_not_generate(capsys):
    assert main(["generate", "hello", "--model", str(attnscope.models.default_model_path())]) == 2
    assert "does not generate" in capsys.readouterr().err


def test_an_encoder_decoder_model_is_one_story_from_view_to_generate(seq2seq_dirs, capsys, tmp_path):  # noqa: F811
    """`view` without --target tells to take the target from `attnscope generate … --model FOLDER`;
    that command works for T5 and prints the target, which `view --target` then shows."""
    folder, source = seq2seq_dirs["t5"], "translate English to German: The cat sat."
    page = tmp_path / "t5.html"
    assert main(["view", source, "--model", str(folder), "-o", str(page)]) == 2
    err = capsys.readouterr().err
    assert f"--target (e.g. the model's own output: attnscope generate TEXT --model {folder})" in err
    assert main(["generate", source, "--model", str(folder), "--max-new-tokens", "5"]) == 0
    target = capsys.readouterr().out.rstrip("\n")
    g = attnscope.load(folder).generate(source, max_new_tokens=5)
    assert target == g.text and target.strip()
    assert main(["view", source, "--model", str(folder), "--target", target, "-o", str(page)]) == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["generate", source, "--model", str(folder), "--chat"]) == 2
    assert "--chat is for decoder models" in capsys.readouterr().err
