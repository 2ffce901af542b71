"""``attnscope patch``: the printed numbers, the JSON and the figure agree; bad input is one clear error."""

import io
import json
from contextlib import redirect_stdout

import pytest

import attnscope
from attnscope.cli import main
from attnscope.patching import patch
from attnscope.testing import tiny as testing

CLEAN = "I like cats. I like dogs. Cats and dogs like"
CORRUPTED = "I like dogs. I like cats. Cats and dogs like"


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def run(argv):
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def base(gpt2_dir):
    return ["patch", "--clean", CLEAN, "--corrupted", CORRUPTED, "--answer", " cats", "--wrong", " dogs",
            "--model", str(gpt2_dir), "--no-progress"]


def test_heads_png_and_json(gpt2_dir, tmp_path):
    png, js = tmp_path / "p.png", tmp_path / "p.json"
    rc, out = run(base(gpt2_dir) + ["-o", str(png), "-o", str(js), "--top", "3"])
    assert rc == 0
    d = json.loads(js.read_text(encoding="utf-8"))
    want = patch(attnscope.load(gpt2_dir), CLEAN, CORRUPTED, " cats", " dogs")
    assert d["values"] == want.values.tolist() and d["what"] == "heads" and d["site"] == "z"
    assert f"clean {want.clean:+.4f}, corrupted {want.corrupted:+.4f}" in out
    # tiny GPT-2: 2 layers × 4 heads; a copy patched at layer 1 skips layer 0
    assert "  16 layer evaluations (prompt copy × layer), 80% of rerunning every layer (20)" in out.splitlines()
    assert "the prompts differ at positions 2 (' cats' → ' dogs'), 6 (' dogs' → ' cats')" in out
    lines = out.splitlines()
    i = lines.index("strongest heads (layer.head), normalised:")
    for (label, v), line in zip(want.top(3), lines[i + 1:i + 4]):
        assert line.split() == [label, f"{v:+.3f}"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in out


def test_one_token_prompts_say_1_token(gpt2_dir):
    """'1 tokens per prompt' for prompts of one token; the count the tokenizer gives, in en and zh."""
    tok = attnscope.load(gpt2_dir).tokenizer.backend
    assert len(tok.encode("I").ids) == len(tok.encode("a").ids) == 1
    argv = ["patch", "--clean", "I", "--corrupted", "a", "--answer", " cats", "--wrong", " dogs",
            "--model", str(gpt2_dir), "--no-progress"]
    assert run(argv)[1].splitlines()[0].startswith(f"{gpt2_dir.name}: 1 token per prompt; metric")
    assert "每个提示 1 个 token" in run(argv + ["--lang", "zh"])[1].splitlines()[0]
    assert ": 12 tokens per prompt;" in run(base(gpt2_dir))[1].splitlines()[0]


def test_residual_svg(gpt2_dir, tmp_path):
    svg = tmp_path / "r.svg"
    rc, out = run(base(gpt2_dir) + ["--what", "residual", "--site", "resid_post", "--layers", "1", "-o", str(svg),
                                    "--raw"])
    assert rc == 0 and "strongest positions at resid_post (layer@position)" in out
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def error(capsys, argv):
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


def test_different_lengths(gpt2_dir, capsys):
    argv = base(gpt2_dir)
    argv[argv.index(CORRUPTED)] = "I like dogs. Cats and dogs like"
    err = error(capsys, argv)
    assert err.startswith("attnscope patch: error: the clean and corrupted prompts tokenize to different lengths")
    assert "corrupted (8): 'I' | ' like' | ' dogs'" in err and "Fix:" in err


@pytest.mark.parametrize("extra,msg", [
    (["--answer", "cat"], "the answer 'cat' is 2 tokens ('c' | 'at'), not one"),
    (["-o", "x.txt"], "cannot tell what to write to 'x.txt': use .png, .svg, .pdf (the figure) or .json"),
    (["-o", "/nonexistent/dir/x.png"], "the folder '/nonexistent/dir' does not exist"),
    (["--layers", "0,a"], "--layers must be comma-separated integers, each from 0 to 1000000, got '0,a'"),
    (["--layers", "-1"], "--layers must be comma-separated integers, each from 0 to 1000000, got -1"),
    (["--layers", "1,0,1"], "--layers lists 1 twice; give each once"),
    (["--layers", "7"], "layers: 7 is not a layer; the model has 2 (0..1)"),
    (["--batch-size", "0"], "--batch-size must be from 1 to 65536, got 0"),
])
def test_bad_input_is_one_line(gpt2_dir, capsys, extra, msg):
    err = error(capsys, base(gpt2_dir) + extra)
    assert len(err.splitlines()) == 1 and msg in err, err


def test_a_model_without_a_language_model_head(capsys):
    err = error(capsys, ["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "a", "--wrong", "b",
                         "--model", str(attnscope.models.default_model_path())])
    assert len(err.splitlines()) == 1 and "has no language-model head" in err, err


@pytest.mark.parametrize("extra, msg", [
    (["--site", "attn_in"], "--site attn_in is where --what residual patches"),
    (["--what", "heads", "--site", "resid_pre"], "--site resid_pre is where --what residual patches"),
    (["--raw"], "--raw colours the figure by the raw metric, and no figure is written"),
    (["--raw", "-o", "x.json"], "--raw colours the figure"),
    (["--dpi", "300"], "--dpi 300 sets a figure's resolution, and no -o file is a figure"),
    (["--dpi", "300", "-o", "x.json"], "--dpi 300 sets a figure's resolution, and no -o file is a figure"),
])
def test_an_option_the_run_does_not_read_is_refused_not_dropped(capsys, tmp_path, monkeypatch, extra, msg):
    """--site with --what heads patched the heads' z as without it (the site dropped), --raw without a
    figure changed nothing; both are refused before the model loads (no-such-model is never read)."""
    monkeypatch.chdir(tmp_path)
    argv = ["patch", "--clean", CLEAN, "--corrupted", CORRUPTED, "--answer", " cats", "--wrong", " dogs",
            "--model", "no-such-model", "--no-progress", *extra]
    err = error(capsys, argv)
    assert len(err.splitlines()) == 1 and msg in err, err
    assert not (tmp_path / "x.json").exists()
