"""``attnscope experiment variance|saturation --lang zh`` (#25 item 4): report.md and the figures'
titles and axes in Chinese, saying the same numbers as the English report of the same seed."""

from __future__ import annotations

import re
import warnings

import pytest

from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.experiments import saturation, variance

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
HAN = re.compile(r"[\u4e00-\u9fff]")


def _report(tmp_path, name, lang, *extra):
    out = tmp_path / f"{name}-{lang}"
    assert main(["experiment", name, "--quick", "--seed", "3", "--no-progress", "--out", str(out),
                 "--lang", lang, *extra]) == 0
    return (out / "report.md").read_text(encoding="utf-8")


def _summary_line(out: str) -> str:
    """The command's summary lines (after its 'wrote N files' line)."""
    return out.split("\n", 1)[1]


def _numbers(report: str) -> list[str]:
    """Every number of the report in order, the wall-clock time's line left out."""
    lines = [ln for ln in report.splitlines() if not ln.startswith(("Time:", "用时："))]
    return NUMBER.findall("\n".join(lines))


@pytest.mark.parametrize("name,extra", [("variance", ["--samples", "400"]), ("saturation", ["--rows", "300"])])
def test_chinese_report_has_the_english_reports_numbers(tmp_path, capsys, name, extra):
    en = _report(tmp_path, name, "en", *extra)
    en_line = _summary_line(capsys.readouterr().out)
    zh = _report(tmp_path, name, "zh", *extra)
    zh_line = _summary_line(capsys.readouterr().out)
    assert _numbers(zh) == _numbers(en) and len(_numbers(en)) > 40
    assert HAN.search(zh_line) and not HAN.search(en_line) and NUMBER.findall(zh_line) == NUMBER.findall(en_line)
    assert zh.startswith("# 实验：") and en.startswith("# Experiment:")
    prose = [ln for ln in zh.splitlines() if ln and not ln.startswith(("|", "!["))]
    assert all(HAN.search(ln) for ln in prose), [ln for ln in prose if not HAN.search(ln)]
    for english in ("Experiment", "Theory", "Over all", "Unscaled", "Uniform limit", "At d_k", "The article's"):
        assert english not in zh


def test_chinese_figures_have_chinese_titles_and_every_glyph():
    v = variance.run(quick=True, seed=0, progress=False, d_ks=[2, 16], samples=200, lang="zh")
    s = saturation.run(quick=True, seed=0, progress=False, d_ks=[2, 16], rows=50, lang="zh")
    figs = [v.figures["variance"], v.figures["histograms"], s.figures["saturation"]]
    texts = [t for f in figs for ax in f.axes for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel())
             + tuple(x.get_text() for x in (ax.get_legend().get_texts() if ax.get_legend() else ()))]
    texts.append(s.figures["saturation"]._suptitle.get_text())
    assert sum(bool(HAN.search(t)) for t in texts) >= 15, texts
    assert "未缩放的 Q·Kᵀ，d_k = 256（方差 = " in v.figures["histograms"].axes[0].get_title()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph … missing from font" would be a box in the picture
        for f in figs:
            f.canvas.draw()
    for r in (v, s):
        r.close_figures()


def test_english_figures_stay_english():
    s = saturation.run(quick=True, seed=0, progress=False, d_ks=[2, 16], rows=50)
    assert [ax.get_title() for ax in s.figures["saturation"].axes][:2] == ["largest softmax weight", "entropy (nats)"]
    s.close_figures()


def test_training_report_in_chinese_has_the_english_numbers(tmp_path, capsys):
    """A small grid trained once; --from re-renders it in Chinese (no retraining): the claims'
    sentences, the set-up and the tables say the English report's numbers."""
    out = tmp_path / "training"
    assert main(["experiment", "training", "--quick", "--no-progress", "--out", str(out), "--tasks", "recall,lm",
                 "--variants", "scaled,unscaled", "--steps", "20", "--eval-every", "5"]) == 0
    en = (out / "report.md").read_text(encoding="utf-8")
    en_line = _summary_line(capsys.readouterr().out)
    assert main(["experiment", "training", "--from", str(out), "--lang", "zh", "--out", str(tmp_path / "zh")]) == 0
    zh_line = _summary_line(capsys.readouterr().out)
    assert "“缩放后训练快 3 倍以上”" in zh_line and NUMBER.findall(zh_line) == NUMBER.findall(en_line)
    zh = (tmp_path / "zh" / "report.md").read_text(encoding="utf-8")
    assert _numbers(zh) == _numbers(en) and len(_numbers(en)) > 60
    assert zh.startswith("# 实验：") and "“缩放后训练快 3 倍以上”" in zh and "“d_k = 64 时未缩放训练停滞”" in zh
    prose = [ln for ln in zh.splitlines() if ln and not ln.startswith(("|", "!["))]
    assert all(HAN.search(ln) for ln in prose), [ln for ln in prose if not HAN.search(ln)]
    for english in ("Experiment", "claims", "Set-up", "stalled in", "seeds", "Task ", "Time"):
        assert english not in zh
    # results.json stays the same file: the language is only in the report and the figures
    assert (tmp_path / "zh" / "results.json").read_bytes() == (out / "results.json").read_bytes()


def test_lang_must_be_known():
    with pytest.raises(InputError, match="language 'fr' is not one of en, zh"):
        saturation.run(quick=True, progress=False, d_ks=[2], rows=10, lang="fr")
