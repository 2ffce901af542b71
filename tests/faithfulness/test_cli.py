"""attnscope evaluate-attribution end to end on a tiny GPT-2: the three files, the table's rows
and the figure, a limited method on fewer texts, the report in Chinese, and an existing result kept
unless --overwrite."""

from __future__ import annotations

import json

import pytest

from attnscope.cli import main
from attnscope.testing.tiny import FAMILIES


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return str(FAMILIES["gpt2"].build(tmp_path_factory.mktemp("faith-cli") / "gpt2"))


def test_a_small_run_writes_its_results(gpt2, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["evaluate-attribution", "--model", gpt2, "--texts", "4", "--max-tokens", "12", "--methods",
            "attention,rollout,leave_one_out,random", "--limit", "rollout=2", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert res["texts"] == 4 and res["methods"] == ["attention", "rollout", "leave_one_out", "random"]
    assert res["summary"]["rollout"]["texts"] == 2 and res["summary"]["attention"]["texts"] == 4
    assert all(n <= 12 for n in res["per_text"]["tokens"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| `rollout` | 2 |" in report and "## What the data shows" in report
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert res["command"].startswith("attnscope evaluate-attribution ")
    capsys.readouterr()
    assert main(argv) == 2  # the results are there: kept
    assert "--overwrite" in capsys.readouterr().err
    assert main(argv + ["--overwrite", "--lang", "zh"]) == 0
    zh = (out / "report.md").read_text(encoding="utf-8")
    assert "数据说明了什么" in zh and "| `rollout` | 2 |" in zh
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))

    def numbers(r):  # everything but the timings
        return {m: {k: v for k, v in s.items() if k != "seconds_per_text"} for m, s in r["summary"].items()}
    assert numbers(again) == numbers(res) and again["per_text"] == res["per_text"]  # the same seed: the same numbers


def test_a_run_without_leave_one_out_among_its_methods(gpt2, tmp_path):
    # leave-one-out is always computed (the reference of ρ) but need not be a row of the table
    out = tmp_path / "no-loo"
    argv = ["evaluate-attribution", "--model", gpt2, "--texts", "2", "--max-tokens", "12", "--methods",
            "attention,random", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(res["summary"]) == ["attention", "random"] and res["texts"] == 2
    assert "| `attention` | 2 |" in (out / "report.md").read_text(encoding="utf-8")


def test_an_ig_baseline_past_the_vocabulary_is_one_error_before_any_text(gpt2, tmp_path, capsys):
    out = tmp_path / "bad-baseline"
    argv = ["evaluate-attribution", "--model", gpt2, "--texts", "2", "--max-tokens", "12", "--methods",
            "integrated_gradients,random", "--ig-baseline", "99999999", "--ig-steps", "2", "--no-progress",
            "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "99999999" in err and "Traceback" not in err
    assert not out.exists()


def test_an_encoder_decoder_model_is_refused_in_one_sentence(tmp_path, capsys):
    # its target is the decoder's first prediction, which no encoder row is: the report would call the
    # last source row "the position that predicts the next token"
    import tests.models.seq2seq.tiny  # noqa: F401  (registers t5)
    t5 = str(FAMILIES["t5"].build(tmp_path / "t5"))
    out = tmp_path / "run"
    argv = ["evaluate-attribution", "--model", t5, "--texts", "2", "--max-tokens", "12", "--methods",
            "attention,random", "--no-progress", "-o", str(out)]
    assert main(argv) == 2
    assert "does not take an encoder–decoder model" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("extra, msg", [
    (["--methods", ""], "name at least one method to evaluate"),
    (["--methods", " , "], "name at least one method to evaluate"),
    (["--methods", "attention", "--limit", "rollout=1"], "--limit rollout=… limits a method this run does not evaluate"),
    (["--methods", "attention", "--ig-steps", "4"], "--ig-steps sets integrated gradients, which this run does not"),
    (["--methods", "attention", "--ig-baseline", "zero"], "--ig-baseline sets integrated gradients"),
    (["--methods", "attention", "--ig-rule", "trapezoid"], "--ig-rule sets integrated gradients"),
    (["--methods", "attention", "--ig-power", "2"], "--ig-power sets integrated gradients"),
    (["--limit", "attention=²"], "--limit takes METHOD=N with N a positive integer, got 'attention=²'"),
    (["--ig-baseline", "²"], "--ig-baseline takes zero or a token id, got '²'"),
    (["--limit", "attention=3", "--limit", "attention=5"], "--limit attention=… is given twice"),  # the first was dropped
])
def test_an_option_that_would_be_dropped_or_a_bad_number_is_one_error(tmp_path, capsys, monkeypatch, extra, msg):
    """--methods "" ran every default method; a --limit for a method not evaluated and the --ig-*
    options without integrated_gradients were dropped in silence; '²' (str.isdigit() but not int())
    ended in a ValueError traceback. Each is one line before the model loads (no-such-model is never read)."""
    out = tmp_path / "run"
    argv = ["evaluate-attribution", "--model", "no-such-model", "--texts", "2", "--no-progress", "-o", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("value, sep, lang, words", [
    ("rollout，norm", "，", "zh", "--methods 'rollout，norm' 里有中文输入法的全角“，”；方法之间请用半角 ','"),
    ("rollout、norm", "、", "en", "--methods 'rollout、norm' holds the full-width '、' of a Chinese input method"),
])
def test_a_full_width_comma_in_methods_is_named(tmp_path, capsys, value, sep, lang, words):
    """--methods rollout，norm (a Chinese input method's comma) said "no attribution method
    'rollout，norm'" and listed every method, as if the names were wrong."""
    assert main(["evaluate-attribution", "--texts", "1", "--methods", value, "--lang", lang, "--no-progress",
                 "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err

