"""The √d_k lesson: computed numbers, not the article's."""

import math

import numpy as np
import pytest
import torch

from attnscope.explain import explain
from attnscope.explain.scaling import jacobian


@pytest.fixture(scope="module")
def lesson():
    return explain(lesson="scaling", d_k=64, samples=4000)


def test_softmax_with_and_without_the_scale(lesson):
    s = [20.0, -10.0, 5.0]
    e = [math.exp(x / 8) for x in s]
    truth = [x / sum(e) for x in e]                     # 0.8497, 0.0200, 0.1303 — not [0.76, 0.02, 0.22]
    got = lesson.values["softmax"][0]
    np.testing.assert_allclose(got["scaled"], truth, rtol=1e-14)
    np.testing.assert_allclose(got["unscaled"], torch.softmax(torch.tensor(s, dtype=torch.float64), 0).numpy(), rtol=1e-12)
    md = lesson.render("markdown")
    assert "The article prints softmax([20, -10, 5] / 8) = [0.76, 0.02, 0.22]; computed: [0.8497, 0.0200, 0.1303]." in md
    assert "[15.3, 22.7, 18.2, 2.1, 1.8]" in md and "| 2 | 18.2 | 0.0110 | 2.2750 | 0.2693 |" in md


def test_jacobian_is_the_autograd_jacobian(lesson):
    for key, scale in (("jacobian_unscaled", 1.0), ("jacobian_scaled", 8.0)):
        x = torch.tensor([20.0, -10.0, 5.0], dtype=torch.float64) / scale
        J = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, 0), x).numpy()
        np.testing.assert_allclose(lesson.values[key], J, atol=1e-15)
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(jacobian(p).sum(1), 0, atol=1e-15)    # rows of diag(p) − ppᵀ sum to 0
    assert np.abs(lesson.values["jacobian_unscaled"]).max() < 1e-6 < 0.1 < np.abs(lesson.values["jacobian_scaled"]).max()


def test_variance_theory_against_the_sample(lesson):
    for d, row in lesson.values["variance"].items():
        assert row["theory"] == d
        # Var of a sample variance of q·k: relative sd ≈ sqrt((kurtosis − 1)/n) ≈ 0.03 at n = 4000
        assert abs(row["sampled"] / d - 1) < 0.15 and abs(row["sampled_scaled"] - 1) < 0.15
    again = explain(lesson="scaling", d_k=64, samples=4000)
    assert again.values["variance"] == lesson.values["variance"]           # seeded


def test_other_dk_and_vectors_in_chinese():
    w = explain(lesson="scaling", d_k=16, samples=500, scores=[[1.0, 2.0, 3.0]])
    zh = w.render("markdown", lang="zh")
    assert "为什么要除以 √d_k？（d_k = 16）" in zh and "原文" not in zh            # no article note for other vectors
    want = torch.softmax(torch.tensor([0.25, 0.5, 0.75]), 0).numpy()
    np.testing.assert_allclose(w.values["softmax"][0]["scaled"], want, rtol=1e-6)
    assert 16 in w.values["variance"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_exercise_quotes_the_lessons_d_k_64_variance(lang):
    """One claim, one number: the exercise's answer 1 quotes the sampled variance at d_k = 64, which
    drew its own 10,000 pairs (64.9809) while the lesson showed 64.9858, and 64.9994 under --dk 8 (its
    row of 64 drew after the row of 8). Now every row of d draws from its own generator."""
    from attnscope.exercise import make_exercise
    from attnscope.explain.numbers import fmt
    rows = [explain(lesson="scaling", d_k=dk).values["variance"][64]["sampled"] for dk in (64, 8, 1024)]
    assert rows[0] == rows[1] == rows[2] and abs(rows[0] / 64 - 1) < 0.1  # sd of a 10,000-pair variance ≈ 1.4%
    answer = make_exercise(3, 2, 7, lang=lang).solution().render("markdown", lang=lang)
    assert (f"sample gives {fmt(rows[0], 4)})" if lang == "en" else f"抽样得到 {fmt(rows[0], 4)}）") in answer
    assert f"| 64 | 64 | {fmt(rows[0], 4)} |" in explain(lesson="scaling").render("markdown", lang=lang)
