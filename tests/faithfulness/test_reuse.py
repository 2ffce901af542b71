"""evaluate-attribution --reuse: numbers taken over from an earlier run of the same texts equal the
ones a single run of every method computes (per text and in the summary; to float32 rounding: the
variants are read in batches grouped by length, and which variants share a batch depends on the
methods run), a method run with other options is computed again, and a run with other settings is
refused in one sentence; leave-one-out's scores are taken over rather than computed again for a
text a method computes now (and computed again from a file that kept none)."""

from __future__ import annotations

import json
import math

import pytest

import attnscope
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.faithfulness import evaluate as ev
from attnscope.faithfulness.reuse import read_results
from attnscope.faithfulness.run import evaluate
from attnscope.testing.tiny import FAMILIES

ARGS = ["--texts", "5", "--max-tokens", "12", "--no-progress"]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return str(FAMILIES["gpt2"].build(tmp_path_factory.mktemp("faith-reuse") / "gpt2"))


def run(gpt2, out, methods, *extra) -> dict:
    assert main(["evaluate-attribution", "--model", gpt2, *ARGS, "--methods", methods, "-o", str(out), *extra]) == 0
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def same(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def test_taken_over_numbers_are_the_ones_a_single_run_gives(gpt2, tmp_path):
    whole = run(gpt2, tmp_path / "whole", "attention,rollout,norm,leave_one_out,random", "--limit", "norm=3")
    run(gpt2, tmp_path / "first", "attention,rollout,leave_one_out,random", "--limit", "rollout=2")
    merged = run(gpt2, tmp_path / "merged", "attention,rollout,norm,leave_one_out,random", "--limit", "norm=3",
                 "--reuse", str(tmp_path / "first"))
    assert merged["reused"]["methods"] == {"attention": 5, "rollout": 2, "leave_one_out": 5, "random": 5}
    assert merged["per_text"]["index"] == whole["per_text"]["index"]
    for m in whole["methods"]:
        for key in ("rho", "deleted", "kept"):
            assert same(merged["per_text"]["methods"][m][key], whole["per_text"]["methods"][m][key]), (m, key)
        for key in ("rho", "aopc_comprehensiveness", "aopc_sufficiency"):
            assert same([merged["summary"][m][key][k] for k in ("mean", "low", "high")],
                        [whole["summary"][m][key][k] for k in ("mean", "low", "high")]), (m, key)
    assert merged["verdict"]["rho"]["order"] == whole["verdict"]["rho"]["order"]
    report = (tmp_path / "merged" / "report.md").read_text(encoding="utf-8")
    assert "Taken over from an earlier run" in report and "`rollout` 2" in report


def test_other_options_are_computed_again_and_other_settings_refused(gpt2, tmp_path):
    run(gpt2, tmp_path / "first", "integrated_gradients,leave_one_out", "--ig-steps", "4")
    again = run(gpt2, tmp_path / "again", "integrated_gradients,leave_one_out", "--ig-steps", "4", "--ig-power", "3",
                "--reuse", str(tmp_path / "first"))
    assert again["reused"]["methods"] == {"leave_one_out": 5}
    assert again["options"]["integrated_gradients"]["power"] == 3.0
    assert again["summary"]["integrated_gradients"]["texts"] == 5  # computed again, with its new points
    earlier = read_results(tmp_path / "first")
    model = attnscope.load(gpt2)
    with pytest.raises(InputError, match="its max_tokens is 12, this run's is 13") as e:
        evaluate(model, n_texts=5, methods=["leave_one_out"], max_tokens=13, reuse=earlier, progress=False)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="cannot take numbers over from"):
        read_results(tmp_path / "nowhere")


def test_leave_one_out_scores_are_taken_over_not_computed_again(gpt2, tmp_path, monkeypatch):
    whole = run(gpt2, tmp_path / "whole", "attention,norm,leave_one_out,random")
    run(gpt2, tmp_path / "first", "attention,leave_one_out,random")
    calls = []
    real = ev.get_method

    def counting(name):
        calls.append(name)
        return real(name)
    monkeypatch.setattr(ev, "get_method", counting)
    merged = run(gpt2, tmp_path / "merged", "attention,norm,leave_one_out,random", "--reuse", str(tmp_path / "first"))
    assert calls.count("leave_one_out") == 0  # norm computed on all 5 texts, leave-one-out on none
    assert merged["reused"]["reference_scores"] == 5 and merged["summary"]["norm"]["texts"] == 5
    assert same(merged["per_text"]["reference_scores"], whole["per_text"]["reference_scores"])
    assert same(merged["per_text"]["methods"]["norm"]["rho"], whole["per_text"]["methods"]["norm"]["rho"])
    # a file from before the scores were kept: leave-one-out computed again for every text, same numbers
    old = json.loads((tmp_path / "first" / "results.json").read_text(encoding="utf-8"))
    del old["per_text"]["reference_scores"]
    (tmp_path / "first" / "results.json").write_text(json.dumps(old), encoding="utf-8")
    again = run(gpt2, tmp_path / "again", "attention,norm,leave_one_out,random", "--reuse", str(tmp_path / "first"))
    assert calls.count("leave_one_out") == 5 and again["reused"]["reference_scores"] == 0
    assert same(again["per_text"]["methods"]["norm"]["rho"], whole["per_text"]["methods"]["norm"]["rho"])


@pytest.mark.parametrize("lang, words", [
    ("en", ["there is no such file", "it is not JSON (line 1, column 1)", "it holds no per-text numbers"]),
    ("zh", ["没有这个文件", "它不是 JSON（第 1 行，第 1 列）", "其中没有逐文本的数值"])])
def test_a_reuse_file_that_cannot_be_read_is_said_in_the_runs_language(tmp_path, capsys, lang, words):
    """--reuse of a missing file said "[Errno 2] No such file or directory: 'nope'", and of a JSON file
    that no run wrote "no per-text numbers", in English under --lang zh too."""
    from attnscope.cli import main
    (tmp_path / "bad.json").write_text("oops", encoding="utf-8")
    (tmp_path / "other.json").write_text("{}", encoding="utf-8")
    for name, want in zip(("nope", "bad.json", "other.json"), words):
        assert main(["evaluate-attribution", "--texts", "1", "--methods", "rollout", "--lang", lang, "--no-progress",
                     "-o", str(tmp_path / "out"), "--reuse", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert want in err and "Errno" not in err and err.count("\n") == 1, err

