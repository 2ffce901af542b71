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
    # a Chinese input method's comma: was 'must be comma-separated numbers' and 'labels has 1 entry but x has 3'
    (["plot", "--kind", "softmax", "--scores", "1，2，3", "-o", "x.png"], "holds the full-width '，' of a Chinese input"),
    (["plot", "--kind", "softmax", "--scores", "1,2", "--temperatures", "1、2", "-o", "x.png"],
     "--temperatures: '1、2' holds the full-width '、'"),
    (["plot", "--kind", "softmax", "--scores", "1,2,3", "--labels", "我，喜，欢", "-o", "x.png"],
     "--labels '我，喜，欢' holds the full-width '，' of a Chinese input method"),
    (["plot", "我喜欢", "--labels", "[CLS]，我，喜，欢，[SEP]", "-o", "x.png"], "holds the full-width '，'"),
    # was 'labels has 2 entries but x has 3': the figure function's arguments, not the options given
    (["plot", "--kind", "softmax", "--scores", "1,2,3", "--labels", "我,喜", "-o", "x.png"],
     "--labels has 2 entries but --scores has 3; give one label per score"),
])
def test_errors_are_one_line(tmp_path, monkeypatch, capsys, argv, msg):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, msg", [
    (["the cat", "--kind", "grid", "--layer", "3"], "--layer does not apply to --kind grid"),
    (["the cat", "--kind", "grid", "--head", "0"], "--head does not apply to --kind grid"),
    (["the cat", "--query", "1"], "--query does not apply to --kind heatmap"),
    (["the cat", "--temperatures", "1,2"], "--temperatures does not apply to --kind heatmap"),
    (["the cat", "--d-k", "8"], "--d-k does not apply to --kind heatmap"),
    (["--kind", "hist", "--layer", "2"], "--layer does not apply to --kind hist"),
    (["--kind", "hist", "--model", "no-such-model"], "--model does not apply to --kind hist"),
    (["the cat", "--kind", "hist", "--d-k", "8"], "--d-k does not apply to --kind hist TEXT"),
    (["--kind", "softmax", "--scores", "1,2", "--layer", "2"], "--layer does not apply to --kind softmax --scores"),
    (["--kind", "softmax", "--scores", "1,2", "--model", "no-such-model"], "--model does not apply"),
    (["the cat", "--kind", "softmax", "--scores", "1,2"], "give the text or --scores, not both"),
    (["the cat", "--kind", "softmax", "--d-k", "8"], "--d-k does not apply to --kind softmax TEXT"),
    (["the cat", "--attribution", "rollout", "--head", "1"], "--head does not apply to --kind heatmap --attribution rollout"),
    (["the cat", "--attribution", "alti", "--labels", "a,b"], "--labels does not apply"),
    (["the cat", "--attribution", "norm", "--kind", "grid", "--layer", "1"], "--layer does not apply to --kind grid"),
])
def test_an_option_the_figure_does_not_read_is_refused_not_dropped(tmp_path, monkeypatch, capsys, argv, msg):
    """Each of these drew the same figure as without the option (--layer with --kind grid, --model
    and --layer with --scores, --d-k with a text, --head of rollout's one matrix a layer, …), the
    option dropped in silence; they are refused before any model loads (no-such-model is never read)."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", *argv, "-o", "x.png"]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.png").exists()


def test_a_missing_output_folder_stops_before_the_trace(tmp_path, capsys, monkeypatch):
    """-o in a folder that does not exist: one line before the model loads (it loaded, traced and
    drew the figure first, then failed to save it)."""
    import attnscope.models

    def no_load(*a, **k):
        raise AssertionError("the model was loaded")
    monkeypatch.setattr(attnscope.models, "load", no_load)
    assert main(["plot", "the cat", "-o", str(tmp_path / "missing" / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "the folder" in err and "does not exist" in err and err.count("\n") == 1


def test_softmax_of_a_causal_models_row_has_only_the_keys_it_sees(tmp_path, monkeypatch):
    """--kind softmax with a text draws softmax(q·k / T) over the keys the query may see: at
    T = √d_k the bars are the model's weights (transformers' eager GPT-2 is the reference). It
    drew every key of the text, later ones included, so that a decoder's query 1 gave most of
    its weight to tokens it cannot see."""
    import math

    import numpy as np
    import torch
    import transformers

    from attnscope import plot
    from attnscope.testing import tiny

    folder = tiny.BUILDERS["gpt2"](tmp_path / "gpt2")
    figures = []
    drawn = plot.softmax_temperatures
    monkeypatch.setattr(plot, "softmax_temperatures", lambda *a, **k: figures.append(drawn(*a, **k)) or figures[-1])
    text, layer, head, query = "the cat sat on the mat", 1, 1, 2
    assert main(["plot", text, "--kind", "softmax", "--model", str(folder), "--layer", str(layer), "--head", str(head),
                 "--query", str(query), "-o", str(tmp_path / "s.png")]) == 0
    hf = transformers.GPT2Model.from_pretrained(str(folder), attn_implementation="eager").eval().double()
    import attnscope
    ids = attnscope.load(folder).as_batch(text).input_ids
    with torch.no_grad():
        want = hf(input_ids=ids, output_attentions=True).attentions[layer][0, head, query].numpy()  # (n,)
    assert np.all(want[query + 1:] == 0)
    ax = figures[0].axes[0]
    bars = np.array([p.get_height() for p in ax.patches]).reshape(3, -1)  # T = 1, √d_k, 2√d_k
    assert bars.shape[1] == query + 1 and len(ax.get_xticklabels()) == query + 1
    np.testing.assert_allclose(bars[1], want[:query + 1], rtol=1e-5, atol=1e-7)
    d_k = hf.config.n_embd // hf.config.n_head
    assert ax.get_legend().get_texts()[1].get_text() == f"T = {math.sqrt(d_k):g}"


def test_heatmap_of_a_deberta_model_draws_its_weights(tmp_path, monkeypatch):
    """DeBERTa adds relative-position terms to q·k: `plot` traced q, k, v only and drew
    softmax(factor·q·kᵀ), 0.40 off the model's weights (tiny deberta_v3). It traces the score term
    too and draws the model's weights (transformers' eager DeBERTa is the reference)."""
    import numpy as np
    import torch
    import transformers

    import attnscope
    from attnscope import plot
    from tests.models.fixtures import tiny_families

    folder = tiny_families()["deberta_v3"].build(tmp_path / "deberta")
    figures = []
    drawn = plot.head_heatmap
    monkeypatch.setattr(plot, "head_heatmap", lambda *a, **k: figures.append(drawn(*a, **k)) or figures[-1])
    text = "the cat sat on the mat"
    assert main(["plot", text, "--model", str(folder), "--layer", "1", "--head", "2", "-o", str(tmp_path / "h.png")]) == 0
    hf = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    batch = attnscope.load(folder).encode(text)
    with torch.no_grad():
        want = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_attentions=True).attentions[1][0, 2]
    (im,) = figures[0].axes[0].get_images()
    np.testing.assert_allclose(np.asarray(im.get_array(), dtype=np.float64), want.double().numpy(), atol=2e-6)


def test_an_encoder_decoder_model_is_sent_to_view_in_one_line(tmp_path, capsys):
    """`plot TEXT --model <a T5 folder>` said "names: 'layers.*.attn.q' matches no trace name; did you
    mean encoder.layers.1.attn.q, …", names the user never wrote."""
    from tests.models.seq2seq.tiny import t5

    folder = t5(tmp_path / "t5")
    capsys.readouterr()  # the writer's progress bar
    assert main(["plot", "the cat", "--model", str(folder), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err == (f"attnscope plot: error: t5 is an encoder–decoder model: attnscope plot draws one-stack models; "
                   f"see its encoder, decoder and cross-attention with attnscope view SOURCE --target TARGET "
                   f"--model {folder}\n")


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


def test_softmax_of_an_alibi_models_row_has_a_bar_of_its_weights(tmp_path, monkeypatch):
    """BLOOM adds ALiBi's slope · key position to the scaled scores: `plot --kind softmax TEXT` drew
    softmax(q·k / T) alone, so that no bar was the model's weights (the T = √d_k bars were up to
    0.035 off on a tiny BLOOM). x is now q·k plus the term × √d_k, and the title says so
    (transformers' eager BLOOM is the reference)."""
    import math

    import numpy as np
    import torch
    import transformers

    import attnscope
    from attnscope import plot
    from tests.models.fixtures import tiny_families

    folder = tiny_families()["bloom"].build(tmp_path / "bloom")
    figures = []
    drawn = plot.softmax_temperatures
    monkeypatch.setattr(plot, "softmax_temperatures", lambda *a, **k: figures.append(drawn(*a, **k)) or figures[-1])
    text, layer, head, query = "the cat sat on the mat", 1, 1, 4
    assert main(["plot", text, "--kind", "softmax", "--model", str(folder), "--layer", str(layer), "--head", str(head),
                 "--query", str(query), "-o", str(tmp_path / "s.png")]) == 0
    hf = transformers.BloomModel.from_pretrained(str(folder), attn_implementation="eager").eval().double()
    ids = attnscope.load(folder).as_batch(text).input_ids
    with torch.no_grad():
        want = hf(input_ids=ids, output_attentions=True).attentions[layer][0, head, query].numpy()  # (n,)
    ax = figures[0].axes[0]
    bars = np.array([p.get_height() for p in ax.patches]).reshape(3, -1)  # T = 1, √d_k, 2√d_k
    np.testing.assert_allclose(bars[1], want[:query + 1], rtol=1e-5, atol=1e-7)
    d_k = hf.config.hidden_size // hf.config.n_head
    assert ax.get_title().endswith(f"x = q·k + the model's position term × {math.sqrt(d_k):g}; "
                                   f"T = {math.sqrt(d_k):g} gives the model's weights")
