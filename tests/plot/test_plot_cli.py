"""``attnscope plot`` writes PNG, SVG and PDF by extension and reports bad input in one line."""

import pytest

from attnscope.cli import main
from tests.models.seq2seq.fixtures import seq2seq_dirs  # noqa: F401

MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-", ".svg": b"<?xml"}


@pytest.mark.parametrize("ext", [".png", ".svg", ".pdf"])
def test_formats_by_extension(tmp_path, capsys, ext):
    out = tmp_path / f"fig{ext}"
    assert main(["plot", "我喜欢人工智能 the bank", "--layer", "1", "--head", "2", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(MAGIC[ext])
    assert "wrote" in capsys.readouterr().out


def test_other_kinds(tmp_path):
    assert main(["plot", "--kind", "hist", "--d-k", "64", "-o", str(tmp_path / "h.png")]) == 0
    assert main(["plot", "--kind", "softmax", "--scores", "15.3,22.7,18.2", "--temperatures", "1,8",
                 "-o", str(tmp_path / "s.svg")]) == 0
    assert main(["plot", "the cat sat", "--kind", "grid", "-o", str(tmp_path / "g.png")]) == 0


@pytest.mark.parametrize("argv, msg", [
    (["plot", "hi", "-o", "x.bmp"], "use a .png, .svg or .pdf"),
    (["plot", "hi", "--layer", "9", "-o", "x.png"], "layer 9 is out of range: there are 6 layers (0..5)"),
    (["plot", "hi", "--head", "12", "-o", "x.png"], "head 12 is out of range"),
    (["plot", "--kind", "grid", "-o", "x.png"], "--kind grid needs a text"),
    (["plot", "--kind", "softmax", "--scores", "1,a", "-o", "x.png"], "--scores must be comma-separated numbers"),
])
def test_errors_are_one_line(tmp_path, monkeypatch, capsys, argv, msg):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("kind", ["heatmap", "grid", "hist", "softmax"])
def test_an_encoder_decoder_model_is_sent_to_the_viewer(kind, seq2seq_dirs, tmp_path, capsys):  # noqa: F811
    """T5's attentions are named per stack: plot said "names: 'layers.*.attn.q' matches no trace
    name"; it now says in one line what draws them. --attribution (the encoder's) still plots."""
    out = tmp_path / "f.png"
    assert main(["plot", "hello there", "--kind", kind, "--model", str(seq2seq_dirs["t5"]), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "encoder–decoder model" in err[0] and "attnscope view SOURCE --target TARGET" in err[0]
    assert not out.exists()
    if kind == "heatmap":
        assert main(["plot", "hello there", "--attribution", "rollout", "--model", str(seq2seq_dirs["t5"]),
                     "-o", str(out)]) == 0
