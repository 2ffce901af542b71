"""Every statistic on hand-made attention patterns whose answer is known in closed form."""

import math

import numpy as np
import pytest
import torch

from attnscope.analysis.stats import STAT_NAMES, StatOptions, attention_means

from .patterns import batch, fill, following, identity, previous, to_first, to_last, uniform

LENGTHS = [5, 8, 3]                  # real lengths incl. [CLS] and [SEP]; padded to 8
N = sum(LENGTHS)                     # queries
N_PREV = sum(n - 1 for n in LENGTHS)  # queries that have a previous (and a next) real token
T = len(LENGTHS)                     # texts


def means(row_fn, **opt):
    am, kinds = batch(LENGTHS)
    w = fill(LENGTHS, row_fn)
    return {k: v.numpy() for k, v in attention_means(w, am, kinds, StatOptions(**opt)).items()}


def check(m, expected):
    for name, value in expected.items():
        np.testing.assert_allclose(m[name], value, rtol=1e-12, atol=1e-12, err_msg=name)


def test_identity():
    m = means(identity)
    check(m, {"entropy": 0, "entropy_norm": 0, "distance": 0, "distance_content": 0, "to_self": 1,
              "to_prev": 0, "to_next": 0, "argmax_prev": 0, "argmax_next": 0, "to_local": 1,
              "to_cls": T / N, "to_sep": T / N, "to_punct": 0})


def test_identity_without_special_queries():
    m = means(identity, special_queries=False)
    check(m, {"to_self": 1, "to_cls": 0, "to_sep": 0, "distance": 0})


def test_previous_token():
    m = means(previous)
    check(m, {"to_prev": 1, "argmax_prev": 1, "to_next": 0, "argmax_next": 0, "entropy": 0,
              "distance": N_PREV / N,          # every row but the first jumps one token back
              "to_self": T / N,                # only row 0 attends to itself
              "to_cls": 2 * T / N,             # rows 0 and 1 land on [CLS]
              "to_sep": 0, "distance_content": 1.0, "to_local": 1})


def test_next_token():
    m = means(following)
    check(m, {"to_next": 1, "argmax_next": 1, "to_prev": 0, "argmax_prev": 0,
              "distance": N_PREV / N, "to_self": T / N, "to_sep": 2 * T / N, "to_cls": 0})


def test_uniform():
    m = means(uniform)
    check(m, {"entropy": sum(n * math.log(n) for n in LENGTHS) / N,
              "entropy_norm": 1.0,
              # Σ_i Σ_j |i-j| = (n³ - n)/3 per text, each term weighted 1/n
              "distance": sum((n * n - 1) / 3 for n in LENGTHS) / N,
              "to_cls": T / N, "to_sep": T / N, "to_self": T / N,
              "to_prev": sum((n - 1) / n for n in LENGTHS) / N_PREV,
              "argmax_prev": 0, "argmax_next": 0,   # ties: no unique most-attended token
              "to_local": sum(sum(min(i + 3, n - 1) - max(i - 3, 0) + 1 for i in range(n)) / n
                              for n in LENGTHS) / N})


def test_all_to_cls():
    m = means(to_first)
    check(m, {"to_cls": 1, "to_sep": 0, "entropy": 0, "entropy_norm": 0,
              "distance": sum(n * (n - 1) / 2 for n in LENGTHS) / N,
              "to_prev": T / N_PREV, "argmax_prev": T / N_PREV})  # only row 1's previous is [CLS]
    assert np.isnan(m["distance_content"]).all()  # no attention lands on content tokens


def test_all_to_sep():
    m = means(to_last)
    check(m, {"to_sep": 1, "to_cls": 0, "to_next": T / N_PREV, "argmax_next": T / N_PREV,
              "distance": sum(n * (n - 1) / 2 for n in LENGTHS) / N})


def test_punctuation_vertical():
    am, kinds = batch(LENGTHS, punct_at=(2,))
    w = fill(LENGTHS, lambda i, n: np.eye(n)[2] if n > 3 else np.eye(n)[i])  # text 3 has no comma
    m = {k: v.numpy() for k, v in attention_means(w, am, kinds).items()}
    check(m, {"to_punct": (LENGTHS[0] + LENGTHS[1]) / N})


def test_causal_uniform():
    """Row i uniform over keys 0..i: entropy ln(i+1); the next token is never visible."""
    m = means(lambda i, n: np.r_[np.full(i + 1, 1 / (i + 1)), np.zeros(n - i - 1)], causal=True)
    check(m, {"entropy": sum(math.log(i + 1) for n in LENGTHS for i in range(n)) / N,
              "entropy_norm": 1.0,
              "distance": sum(i / 2 for n in LENGTHS for i in range(n)) / N})
    assert np.isnan(m["to_next"]).all() and np.isnan(m["argmax_next"]).all()


def test_every_statistic_is_covered():
    assert set(STAT_NAMES) == {"entropy", "entropy_norm", "distance", "distance_content", "to_cls", "to_sep",
                               "to_punct", "to_self", "to_prev", "to_next", "argmax_prev", "argmax_next",
                               "to_local"}


def test_float32_and_heads_independent():
    """Heads are reduced separately, and float32 weights give the float64 answer to float32 precision."""
    am, kinds = batch(LENGTHS)
    w = torch.cat([fill(LENGTHS, identity, H=1), fill(LENGTHS, previous, H=1)], dim=1)  # (B, 2, L, L)
    m = attention_means(w.float(), am, kinds)
    assert m["to_self"].dtype == torch.float64
    np.testing.assert_allclose(m["to_self"].numpy(), [1.0, T / N], rtol=1e-6)
    np.testing.assert_allclose(m["to_prev"].numpy(), [0.0, 1.0], rtol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_uniform_distance_baseline_is_the_distance_of_uniform_attention(causal):
    from attnscope.analysis.stats import uniform_distance_sums
    am, kinds = batch(LENGTHS)
    row = (lambda i, n: np.r_[np.full(i + 1, 1 / (i + 1)), np.zeros(n - i - 1)]) if causal else uniform
    m = means(row, causal=causal)
    s, c = uniform_distance_sums(am, kinds, StatOptions(causal=causal))
    assert c.item() == N
    np.testing.assert_allclose(s.item() / c.item(), m["distance"], rtol=1e-12)
    if not causal:
        assert s.item() / c.item() == pytest.approx(sum((n * n - 1) / 3 for n in LENGTHS) / N, rel=1e-12)


@pytest.mark.parametrize("W", [2, 3])
def test_causal_uniform_over_a_sliding_window(W):
    """A sliding-window layer (Gemma 3's local layers: query i sees keys j with i - j < W): row i
    uniform over its min(i+1, W) visible keys spreads its attention evenly over what it can see, so
    entropy_norm is 1; the layer without a window divides by ln(i+1) and gets less."""
    from attnscope.analysis.stats import attention_sums, batch_context

    def row(i, n):
        k = min(i + 1, W)
        return np.r_[np.zeros(i + 1 - k), np.full(k, 1 / k), np.zeros(n - i - 1)]
    am, kinds = batch(LENGTHS)
    w = fill(LENGTHS, row)
    ctx = batch_context(am, kinds, StatOptions(causal=True, key_windows=(W, None)), dtype=torch.float64)
    n_keys = [min(i + 1, W) for n in LENGTHS for i in range(n)]
    for layer, want in ((0, 1.0), (1, sum(math.log(k) / math.log(i + 1) for n in LENGTHS for i in range(1, n)
                                         for k in [min(i + 1, W)]) / sum(n - 1 for n in LENGTHS))):
        s, c = attention_sums(w, context=ctx.for_layer(layer))["entropy_norm"]
        np.testing.assert_allclose((s / c).numpy(), want, rtol=1e-12, err_msg=f"layer {layer}")
    s, c = attention_sums(w, context=ctx.for_layer(0))["entropy"]
    np.testing.assert_allclose((s / c).numpy(), sum(math.log(k) for k in n_keys) / N, rtol=1e-12)
