"""The quick training grid through the CLI: files, and the effects that are robust at this size.

At initialisation q and k entries have unit variance (LeCun init after LayerNorm), so unscaled
scores have variance d_k: the attention entropy must collapse and the gradient at the scores
shrink relative to scaled, more so at d_k = 64 than at 16. The 60 training steps are too few to
assert which variant learns faster; only that nothing diverges and the lm loss falls.
"""

import csv
import json
import math
import os

import pytest
from filelock import FileLock

from attnscope.cli import main
from attnscope.experiments import training


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    # One run shared by the pytest-xdist workers of this session (their base temps share a parent).
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "attnscope-training-quick"
    with FileLock(str(shared / "attnscope-training-quick.lock")):
        if not (out / "report.md").exists():
            assert main(["experiment", "training", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out, json.loads((out / "results.json").read_text())


def _cell(data, task, variant, d_k):
    return next(r for r in data["data"]["summary"] if (r["task"], r["variant"], r["d_k"]) == (task, variant, d_k))


def test_files(quick):
    out, data = quick
    for name in ("results.json", "summary.csv", "runs.csv", "curves.csv", "speedups.csv", "report.md",
                 "timing.json", "summary.png", "curves_recall.png", "curves_lm.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    n_runs = len(training.VARIANTS) * 2 * 2  # variants × d_k {16, 64} × tasks, one seed
    assert len(data["data"]["runs"]) == n_runs
    with open(out / "runs.csv") as f:
        assert len(list(csv.DictReader(f))) == n_runs
    report = (out / "report.md").read_text()
    assert "Scaling trained over 3× faster" in report and "stalled" in report
    assert "pydoc_data" in report


@pytest.mark.parametrize("task", ["recall", "lm"])
def test_unscaled_attention_collapses_at_initialisation(quick, task):
    _, data = quick
    s16, s64 = _cell(data, task, "scaled", 16), _cell(data, task, "scaled", 64)
    u16, u64 = _cell(data, task, "unscaled", 16), _cell(data, task, "unscaled", 64)
    # entropy / ln(#keys): scaled ≈ the same at both d_k; unscaled lower, and lower at larger d_k
    assert abs(s16["init_entropy_norm"] - s64["init_entropy_norm"]) < 0.1
    assert u16["init_entropy_norm"] < s16["init_entropy_norm"] - 0.2
    assert u64["init_entropy_norm"] < u16["init_entropy_norm"] - 0.1
    assert u64["init_max_weight"] > 0.75 > s64["init_max_weight"]
    # the gradient at the scores: smaller for unscaled at d_k = 64
    assert u64["init_grad_scores"] < s64["init_grad_scores"]
    # 1/d_k is flatter than 1/√d_k; the T5 fold starts exactly like scaled
    assert _cell(data, task, "inv_d", 64)["init_entropy_norm"] > s64["init_entropy_norm"]
    t5 = _cell(data, task, "t5", 64)
    assert t5["init_entropy_norm"] == pytest.approx(s64["init_entropy_norm"], rel=1e-4)
    assert t5["init_loss_mean"] == pytest.approx(s64["init_loss_mean"], rel=1e-4)


def test_no_run_diverges_and_every_lm_loss_falls(quick):
    _, data = quick
    for r in data["data"]["runs"]:
        assert not r["diverged"], r["variant"]
        assert all(x is not None and math.isfinite(x) for x in r["curve"]["eval_loss"])
        if r["task"] == "lm":
            assert r["final_loss"] < r["init_loss"] - 1.0


def test_curves_are_recorded_at_every_evaluation(quick):
    _, data = quick
    r = data["data"]["runs"][0]
    assert r["curve"]["step"] == list(range(0, 61, 10))
    for key in ("eval_loss", "entropy", "entropy_norm", "max_weight", "grad_scores", "grad_qk", "lr"):
        assert len(r["curve"][key]) == 7, key
    assert r["curve"]["grad_scores"][-1] is None  # no training step after the last evaluation


def test_rerender_from_folder_reproduces_the_numbers(quick, tmp_path):
    out, data = quick
    assert main(["experiment", "training", "--from", str(out), "--out", str(tmp_path), "--no-progress"]) == 0
    again = json.loads((tmp_path / "results.json").read_text())
    assert again["data"] == data["data"] and again["params"] == data["params"]
    assert (tmp_path / "report.md").read_text() == (out / "report.md").read_text()


def test_a_run_that_learned_too_little_cannot_tell_the_speed_claim(quick):
    """The quick grid's runs reach no threshold: the verdict on "3× faster" must say it cannot tell,
    not that the claim fails (its matched ratios compare curves that barely moved)."""
    out, data = quick
    summary = data["data"]["summary"]
    reached = {(r["task"], r["d_k"]) for r in summary if r["reached"]}
    sentence = data["data"]["claims"]["speed_sentence"] if "claims" in data["data"] else (out / "report.md").read_text()
    if not reached:
        assert "cannot be told" in sentence and "does not hold anywhere" not in sentence
    else:  # a cell learned: the sentence judges it (the rule is tested on a summary below)
        assert "cannot be told from these runs" not in sentence


def test_the_speed_verdict_counts_only_cells_that_learned():
    from attnscope.experiments.training.verdicts import claim_sentences
    settings = training.Settings(tasks=("lm",), d_ks=(16,))
    cell = {"task": "lm", "d_k": 16, "ratio_matched": 1.2, "bound_matched": "=", "ratio": None, "bound": None}
    row = {"task": "lm", "d_k": 16, "stalled": 0, "seeds": 2, "init_loss_mean": 5.0, "final_loss_mean": 4.9,
           "threshold": 3.0}
    none = [dict(row, variant=v, reached=0) for v in ("scaled", "unscaled")]
    speed, _ = claim_sentences([cell], none, settings)
    assert "cannot be told" in speed and "does not hold" not in speed
    some = [dict(row, variant="scaled", reached=2), dict(row, variant="unscaled", reached=0)]
    speed, _ = claim_sentences([cell], some, settings)
    assert "does not hold anywhere" in speed
    speed_zh, _ = claim_sentences([cell], none, settings, lang="zh")
    assert "无法判断" in speed_zh
