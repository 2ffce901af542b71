"""Steps to threshold, the stalled/diverged flags, and the speed-up ratios, on hand-made curves."""

import math

import pytest

from attnscope.experiments import training


def test_flags_of_a_run_that_learns():
    f = training.run_flags([0, 10, 20, 30], [3.0, 1.0, 0.4, 0.3], threshold=0.5, baseline=2.77)
    assert f["steps_to_threshold"] == 20 and f["reached"]
    assert f["final_loss"] == 0.3 and f["init_loss"] == 3.0 and f["min_loss"] == 0.3
    assert not f["stalled"] and not f["diverged"]


def test_stall_line_is_ten_percent_of_the_way_from_baseline_to_threshold():
    # baseline 2.77, threshold 0.5: the line is 2.77 − 0.227 = 2.543
    moved = training.run_flags([0, 10], [3.2, 2.54], threshold=0.5, baseline=2.77)
    stuck = training.run_flags([0, 10], [3.2, 2.55], threshold=0.5, baseline=2.77)
    assert not moved["stalled"] and stuck["stalled"]
    assert not stuck["reached"] and stuck["steps_to_threshold"] is None


def test_divergence():
    worse = training.run_flags([0, 10], [2.0, 2.5], threshold=0.5, baseline=2.77)
    assert worse["diverged"] and not worse["stalled"]
    nan = training.run_flags([0, 10], [2.0, math.nan], threshold=0.5, baseline=2.77)
    assert nan["diverged"]
    crashed = training.run_flags([0], [2.0], threshold=0.5, baseline=2.77, crashed=True)
    assert crashed["diverged"] and math.isnan(crashed["final_loss"])


def _run(variant, seed_index, losses, steps=40, task="t", d_k=8):
    st = list(range(0, 10 * len(losses), 10))
    f = training.run_flags(st, losses, threshold=0.5, baseline=3.0)
    return {"task": task, "variant": variant, "d_k": d_k, "seed_index": seed_index, "steps": steps, "threshold": 0.5,
            "curve": {"step": st, "eval_loss": losses}, "n_heads": 1, **f,
            **{k: math.nan for k in ("final_acc", "init_entropy_norm", "final_entropy_norm", "init_max_weight",
                                     "init_grad_scores", "mean_grad_scores", "init_grad_qk")}}


def test_speedups_at_the_threshold_and_at_the_matched_loss():
    runs = [
        _run("scaled", 0, [3.0, 0.4, 0.2, 0.1, 0.1]),    # threshold at 10
        _run("unscaled", 0, [3.0, 2.0, 1.5, 0.45, 0.3]),  # threshold at 30; ends at 0.3, scaled had it at 20
        _run("scaled", 1, [3.0, 1.0, 0.3, 0.2, 0.2]),    # threshold at 20
        _run("unscaled", 1, [3.0, 2.5, 2.0, 1.5, 1.2]),  # never; ends at 1.2, scaled had it at 10
    ]
    summary = training.summarise(runs)
    (sp,) = training.speedups(summary, runs)
    # threshold: medians 15 (scaled) and > (30 + 40) / 2 (unscaled: 30, and > 40 for the seed that
    # never got there) -> lower bound 35 / 15 (it said 40 / 15, as if both seeds had needed over 40)
    assert sp["steps_scaled"] == 15 and sp["steps_unscaled"] is None
    assert sp["ratio"] == pytest.approx(35 / 15) and sp["bound"] == ">"
    # matched loss: seed 0: unscaled reached 0.3 at 40, scaled at 20 -> 2; seed 1: 40 / 10 = 4
    assert sp["ratio_matched"] == pytest.approx(3.0) and sp["bound_matched"] == "="
    assert sp["loss_matched"] == pytest.approx(0.75)


def test_a_matched_loss_median_that_a_bound_can_move_is_a_bound():
    """Three seeds: 2 and 4 exactly, and one whose scaled run never got down to unscaled's end (its
    ratio is only < 40 / 5 = 8). The median 4 was reported as exact ("=": the bounds were not a
    majority), but the third seed's true ratio may be below 2, and the median then 2."""
    runs = [
        _run("scaled", 0, [3.0, 0.4, 0.2, 0.1, 0.1]), _run("unscaled", 0, [3.0, 2.0, 1.5, 0.45, 0.3]),  # 40 / 20
        _run("scaled", 1, [3.0, 1.0, 0.3, 0.2, 0.2]), _run("unscaled", 1, [3.0, 2.5, 2.0, 1.5, 1.2]),   # 40 / 10
        _run("scaled", 2, [3.0, 2.9], steps=5), _run("unscaled", 2, [3.0, 2.8, 2.0, 1.0, 0.5]),        # < 40 / 5
    ]
    (sp,) = training.speedups(training.summarise(runs), runs)
    assert sp["ratio_matched"] == pytest.approx(4.0) and sp["bound_matched"] == "<"
    # the same seed's bound below the exact ones cannot move the median: it stays exact
    runs[4] = _run("scaled", 2, [3.0, 2.9], steps=80)  # < 40 / 80
    (sp,) = training.speedups(training.summarise(runs), runs)
    assert sp["ratio_matched"] == pytest.approx(2.0) and sp["bound_matched"] == "="


def test_speedup_when_unscaled_is_the_faster_one():
    runs = [_run("scaled", 0, [3.0, 2.0, 1.0, 0.6, 0.6]), _run("unscaled", 0, [3.0, 0.4, 0.3, 0.2, 0.2])]
    (sp,) = training.speedups(training.summarise(runs), runs)
    assert sp["steps_scaled"] is None and sp["ratio"] is None
    # scaled never got down to unscaled's 0.2: ratio < 30 / 40
    assert sp["ratio_matched"] == pytest.approx(30 / 40) and sp["bound_matched"] == "<"


def test_the_report_says_that_its_plus_minus_is_the_seeds_standard_deviation():
    # The final-loss cells read 'mean ± x' with nothing saying what x is; elsewhere in the
    # experiments' pages '±' is one standard error. Here it is the standard deviation over seeds:
    # two seeds ending at 0.3 and 0.5 give √((0.1² + 0.1²)/1) = 0.1414 (the standard error would be 0.1).
    runs = [_run("scaled", 0, [3.0, 1.0, 0.3], task="recall"), _run("scaled", 1, [3.0, 1.0, 0.5], task="recall")]
    for r in runs:
        r["seed"] = r["seed_index"]
        r["curve"].update({k: [math.nan] * 3 for k in ("entropy_norm", "grad_scores")})
    params = {"tasks": ["recall"], "variants": ["scaled"], "d_ks": [8], "seeds": {"recall": 2},
              "steps": {"recall": 40}, "batch": {"recall": 16}, "d_model": 8}
    desc = {"recall": {"n_pairs": 8, "n_queries": 8, "n_keys": 16, "n_values": 16, "baseline": 3.0, "threshold": 0.5}}
    for lang, header in (("en", "final loss (mean ± SD over seeds)"), ("zh", "最终损失（各种子的均值 ± 标准差）")):
        res = training.assemble(runs, params, desc, {}, lang)
        res.close_figures()
        table = res.report.split("| variant |" if lang == "en" else "| 变体 |")[1]
        assert f"| {header} |" in table.splitlines()[0]
        assert "| 0.4 ± 0.14 |" in table
