"""``attnscope analyze``: the files it writes agree with each other, and bad input is one clear line."""

import csv
import json

import numpy as np
import pytest

from attnscope.analysis.stats import STAT_NAMES
from attnscope.analysis.summary import LAYER_STATS
from attnscope.cli import main

TEXTS = ["The cat sat on the mat.", "Heads attend to the previous token, or to [SEP].",
         "Lower layers local; higher layers global?"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = root / "out"
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["analyze", str(corpus), "--out", str(out), "--importance-texts", "2", "--no-progress",
                   "--threshold", "broad=0.9", "--batch-size", "2"])
    return rc, buf.getvalue(), out


def test_outputs_agree(run):
    rc, stdout, out = run
    assert rc == 0
    assert "3 texts" in stdout and "local in low layers, global in high?" in stdout
    data = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert data["counters"]["texts"] == 3 and data["settings"]["thresholds"]["broad"] == 0.9
    assert data["importance_metric"] == "one_minus_cosine"
    rows = list(csv.DictReader(open(out / "heads.csv", encoding="utf-8")))
    assert len(rows) == len(data["heads"]) == 72
    for row, head in zip(rows, data["heads"]):
        assert (int(row["layer"]), int(row["head"]), row["label"]) == (head["layer"], head["head"], head["label"])
        for s in STAT_NAMES + ("importance",):
            assert float(row[s]) == pytest.approx(head[s], rel=1e-5, abs=1e-9)
    layers = list(csv.DictReader(open(out / "layers.csv", encoding="utf-8")))
    assert len(layers) == 6
    # every mean to 6 significant digits as in heads.csv: layers.csv wrote 6 decimals (importance 0.003499)
    means = [*LAYER_STATS, "importance"]
    for l, row in enumerate(layers):
        for s in means:
            mean = np.mean([h[s] for h in data["heads"] if h["layer"] == l])
            assert float(row[s]) == pytest.approx(mean, rel=1e-5, abs=1e-9), (l, s, row[s], mean)
        assert sum(int(row[lab]) for lab in ("previous", "next", "self", "cls", "sep", "punct", "local", "broad",
                                             "other")) == 12
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "**Verdict:" in report and "| layer | distance |" in report and "broad: entropy_norm ≥ 0.9" in report
    pngs = sorted(p.name for p in (out / "heatmaps").glob("*.png"))
    assert len(pngs) == len(STAT_NAMES) + 2  # + importance, labels
    assert all((out / "heatmaps" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def error_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_empty_corpus(tmp_path, capsys):
    f = tmp_path / "empty.txt"
    f.write_text("\n   \n\n", encoding="utf-8")
    assert error_line(capsys, ["analyze", str(f)]) == (
        f"attnscope analyze: error: corpus '{f}' is empty: it holds no non-blank line")


def test_missing_corpus(tmp_path, capsys):
    assert "not found" in error_line(capsys, ["analyze", str(tmp_path / "nope.txt")])


def test_decode_error_stops_with_the_line(tmp_path, capsys):
    f = tmp_path / "c.txt"
    f.write_bytes(b"fine\nfine too\nnot \x80 fine\n")
    err = error_line(capsys, ["analyze", str(f), "--importance-texts", "0", "--no-progress"])
    assert f"{f}:3: byte 80 at byte 4 is not valid utf-8" in err and "--on-decode-error skip" in err



@pytest.mark.parametrize("lang, says", [
    ("en", ": byte ce at byte 0 is not valid utf-8 (column 1); save the file as UTF-8 (an editor may have saved it as GBK"),
    ("zh", "：字节 ce（第 0 个字节处）不是有效的 utf-8（第 1 列）；请把文件另存为 UTF-8（编辑器可能把它存成了 GBK"),
])
def test_a_corpus_saved_as_gbk_is_named_in_the_users_language(tmp_path, capsys, lang, says):
    """A Chinese Windows editor's GBK file: --lang zh said 'gbk.txt:1：byte ce at byte 0 is not valid utf-8
    （第 1 列）；请修正文件' (English inside the sentence), and neither language said to save it as UTF-8
    (--on-decode-error skip, the other remedy offered, skips every line of such a file)."""
    f = tmp_path / "gbk.txt"
    f.write_bytes("我喜欢人工智能。\n今天天气很好。\n".encode("gbk"))
    err = error_line(capsys, ["analyze", str(f), "--lang", lang, "--importance-texts", "0", "--no-progress"])
    assert f"{f}:1{says}" in err and "--on-decode-error skip" in err

def test_nothing_decodable_left(tmp_path, capsys):
    f = tmp_path / "c.txt"
    f.write_bytes(b"\x80\x81\n\xfe\n")
    err = error_line(capsys, ["analyze", str(f), "--on-decode-error", "skip", "--importance-texts", "0", "--no-progress"])
    assert "has no text left to analyse: 2 lines skipped as undecodable" in err


@pytest.mark.parametrize("extra, message", [
    (["--threshold", "wide=0.3"], "--threshold expects NAME=VALUE"),
    (["--batch-size", "0"], "--batch-size must be from 1 to 65536, got 0"),
    (["--max-length", "600"], "max_length 600 is longer than the model's 512 positions"),
    # was raised to 8 in silence (the window of a --shard too); the default 1024 still grows with --batch-size
    (["--chunk-size", "4", "--batch-size", "8"], "chunk_size (4) must be at least batch_size (8)"),
])
def test_bad_options(tmp_path, capsys, extra, message):
    f = tmp_path / "c.txt"
    f.write_text("a text\n", encoding="utf-8")
    assert message in error_line(capsys, ["analyze", str(f), "--importance-texts", "0", "--no-progress", *extra])


def test_a_statistic_that_is_nan_everywhere_gets_no_made_up_scale(tmp_path, monkeypatch):
    """A causal model's to_cls is NaN in every head: its heatmap had a colorbar from -0.1 to 0.1,
    matplotlib's default for no data, numbers that no head has."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from attnscope.analysis.report import heatmap
    bars = []
    real = Figure.colorbar
    monkeypatch.setattr(Figure, "colorbar", lambda self, *a, **k: bars.append(1) or real(self, *a, **k))
    heatmap(np.full((2, 3), np.nan), "to_cls", tmp_path / "nan.png")
    assert bars == [] and (tmp_path / "nan.png").stat().st_size > 0
    heatmap(np.array([[0.1, np.nan, 0.3], [0.2, 0.5, 0.4]]), "to_cls", tmp_path / "some.png")
    assert bars == [1]


def drawn_figures(monkeypatch):
    """The figures ``heatmap`` saves, each as (every text's extent in pixels, figure width, the cells' texts)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    seen = []
    real = Figure.savefig

    def save(self, *a, **k):
        real(self, *a, **k)
        r = self.canvas.get_renderer()
        texts = [t for t in [*self.texts, *(ax.title for ax in self.axes)] if t.get_text()]
        seen.append(([t.get_window_extent(r) for t in texts], self.bbox.width,
                     [(t.get_text(), t.get_color()) for t in self.axes[0].texts]))
    monkeypatch.setattr(Figure, "savefig", save)
    return seen


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_statistics_title_is_not_cut_on_a_model_of_few_heads(tmp_path, monkeypatch, lang):
    """Gemma 3 270M has 4 heads: the heatmaps' titles (a statistic's doc) were wider than its
    figure, cut at both sides ('ropy: 注意力熵 …', 'argmax_prev: fraction of queries whose uniq')."""
    from attnscope.analysis.report import heatmap
    from attnscope.analysis.summary import say
    seen = drawn_figures(monkeypatch)
    for name in STAT_NAMES:
        heatmap(np.random.default_rng(0).random((18, 4)), say("map_title", lang, name=name, doc=say("doc_" + name, lang)),
                tmp_path / f"{name}.png", lang=lang)
    for name, (boxes, width, _) in zip(STAT_NAMES, seen):
        assert all(0 <= b.x0 and b.x1 <= width for b in boxes), name


def test_a_cells_text_is_light_on_a_dark_colour_of_a_fixed_scale(tmp_path, monkeypatch):
    """The decoder scores are drawn on a fixed 0..1 scale: a layer of scores ≤ 0.3 is dark blue
    throughout, but the numbers' colour was judged on the values' own range (0.25 of at most 0.3:
    'light', black), black on dark blue."""
    from attnscope.analysis.report import heatmap
    seen = drawn_figures(monkeypatch)
    heatmap(np.array([[0.05, 0.25], [0.3, 0.1]]), "induction", tmp_path / "i.png", cmap="cividis", vmin=0.0, vmax=1.0)
    heatmap(np.array([[0.05, 0.25], [0.3, 0.1]]), "to_prev", tmp_path / "p.png")  # its own range: 0.3 is the top
    assert seen[0][2] == [("0.05", "white"), ("0.25", "white"), ("0.30", "white"), ("0.10", "white")]
    assert dict(seen[1][2])["0.30"] == "black" and dict(seen[1][2])["0.05"] == "white"
