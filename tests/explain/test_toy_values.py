"""The worked toy calculation's numbers against independent references."""

import math

import numpy as np
import pytest
import torch

from attnscope.explain import ToyProblem, compute, explain, toy_problem
from attnscope.functional import attention_steps

from .reference import THREE, attention_by_hand


def test_three_tokens_every_step_matches_the_hand_computation():
    w = explain(example="three-tokens")
    ref = attention_by_hand(**THREE)
    for name in ("Q", "K", "V", "scores", "scaled", "exp", "weights", "output"):
        # a few float64 ulps: the values are exact (then rounded once), the loop reference is float64
        np.testing.assert_allclose(w.values[name], np.array(ref[name]), rtol=1e-15, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(w.values["sums"], ref["sums"], rtol=1e-15)
    # the article's slips: rows 1 and 2 (from 0) of the weights and outputs are, in truth:
    np.testing.assert_allclose(w.values["weights"][1], [0.3057, 0.0743, 0.6200], atol=5e-5)
    np.testing.assert_allclose(w.values["weights"][2], [0.3177, 0.0381, 0.6443], atol=5e-5)
    np.testing.assert_allclose(w.values["output"][1], [1.8514, 0.6943], atol=5e-5)
    np.testing.assert_allclose(w.values["output"][2], [1.9238, 0.6823], atol=5e-5)


@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "cosine", "qknorm"])
@pytest.mark.parametrize("masking", ["none", "causal", "mask"])
def test_toy_matches_torch_attention_steps(scoring, masking):
    rng = np.random.default_rng(3)
    X, WQ, WK, WV = (rng.integers(-2, 3, size=s).astype(float) for s in ((4, 3), (3, 3), (3, 3), (3, 2)))
    spec = dict(X=X.tolist(), W_Q=WQ.tolist(), W_K=WK.tolist(), W_V=WV.tolist(), scoring=scoring)
    mask = None
    if masking == "causal":
        spec["causal"] = True
    if masking == "mask":
        mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 1], [1, 0, 0, 1]], dtype=bool)
        spec["mask"] = mask.astype(int).tolist()
    v = compute(ToyProblem.from_mapping(spec))
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    ref = attention_steps(t(X) @ t(WQ), t(X) @ t(WK), t(X) @ t(WV), None if mask is None else torch.tensor(mask),
                          causal=masking == "causal", scoring=scoring)
    np.testing.assert_allclose(v["weights"], ref["weights"].numpy(), atol=1e-12)
    np.testing.assert_allclose(v["output"], ref["out"].numpy(), atol=1e-12)
    np.testing.assert_allclose(v["masked"], ref["masked"].numpy(), atol=1e-12)


def test_w_o_projection_and_given_qkv():
    p = toy_problem({**THREE, "W_O": [[1, -1], [0.5, 2]]})
    v = compute(p)
    np.testing.assert_allclose(v["projected"], v["output"] @ np.array([[1, -1], [0.5, 2]]), atol=1e-15)
    direct = compute(toy_problem({"Q": v["Q"].tolist(), "K": v["K"].tolist(), "V": v["V"].tolist()}))
    np.testing.assert_array_equal(direct["weights"], v["weights"])
    assert "project_q" not in [s.key for s in explain({"Q": [[1.0]], "K": [[2.0]], "V": [[3.0]]}).steps]


def test_large_scores_show_shifted_exponentials_with_a_note():
    w = explain({"Q": [[30.0], [1.0]], "K": [[30.0], [2.0]], "V": [[1.0], [0.0]], "scoring": "unscaled"})
    # row 0: scores [900, 30] would overflow exp; it is shown as exp(s - 900), weights unchanged
    np.testing.assert_allclose(w.values["exp"][0], [1.0, math.exp(30 - 900)])
    np.testing.assert_allclose(w.values["exp"][1], [math.exp(30.0), math.exp(2.0)])  # shown as is
    np.testing.assert_allclose(w.values["weights"][1], [1 / (1 + math.exp(-28)), math.exp(-28) / (1 + math.exp(-28))])
    md = w.render("markdown")
    assert "In row 0 the largest score is beyond ±50" in md and "this row shows" in md
    assert np.isfinite(w.values["weights"]).all()
    both = explain({"Q": [[30.0], [31.0]], "K": [[30.0], [2.0]], "V": [[1.0], [0.0]], "scoring": "unscaled"})
    assert "In rows 0, 1 the largest score is beyond ±50" in both.render("markdown")


@pytest.mark.parametrize("scoring, how", [("qknorm", "x̂ = (x − mean(x)) / √(var(x) + ε)"),
                                          ("cosine", "x̂ = x / max(‖x‖, ε)")])
def test_the_normalising_step_states_its_formula_and_epsilon(scoring, how):
    """The step showed Q̂ = [1.0000, -1.0000] for q = [1, 0] with no formula and no ε, so a learner
    got exactly 1 (LN) and could not reproduce 0.999998 at 6 decimals. Now it says both; the shown
    entries follow from them (NumPy, here)."""
    import re

    w = explain(X=[[1, 0], [0, 1], [1, 1]], W_Q=[[1, 0], [1, 1]], W_K=[[1, 2], [0, 1]], W_V=[[2, 0], [0, 1]],
                scoring=scoring)
    md = w.render("markdown", decimals=6)
    step = md.split("## Step 4", 1)[1].split("## Step 5", 1)[0]
    assert f"`{how}`" in step
    n = re.search(r"ε = 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", step).group(1)
    eps = 10.0 ** int(n.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    q = np.array([[1.0, 0.0], [1.0, 1.0], [2.0, 1.0]])  # Q = X W_Q
    if scoring == "qknorm":
        qh = (q - q.mean(1, keepdims=True)) / np.sqrt(q.var(1, keepdims=True) + eps)
    else:
        qh = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), eps)
    assert "| x2 | " + " | ".join(f"{v:.6f}" for v in qh[2]) + " |" in step
