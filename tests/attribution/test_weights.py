"""attention, rollout and flow (attnscope.attribution.weights) against independent computations:
a plain float64 loop over layers and tokens (rollout), a hand-written Edmonds–Karp (flow), and the
float64 forward from the weights (attnscope.reference_model) through the NumPy twin."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from attnscope import reference_model, reference_model_seq2seq
from attnscope.errors import InputError
from attnscope.reference import attribution as RA
from tests.attribution.flow_ref import flow_values

TEXT = "The cat sat on the mat."
SHORT = "Cats like me."


def traced_weights(model, text: str) -> np.ndarray:
    """(n_layers, H, L, L) float64 of the model's own trace (the encoder's for T5)."""
    prefix = "encoder." if model.config.kind == "seq2seq" else ""
    names = [f"{prefix}layers.{i}.attn.weights" for i in range(model.config.n_layers)]
    t = model.trace(TEXT, "", names=names) if prefix else model.trace(TEXT, names=names)
    return np.stack([t[n][0].double().numpy() for n in names])


def loop_rollout(W: np.ndarray, layer: int) -> list[list[float]]:
    """Abnar & Zuidema's rollout as plain Python: per layer the head mean, + I, halved, rows
    renormalised, then R = Ã_l · R, one product entry at a time."""
    n_heads, L = W.shape[1], W.shape[-1]
    R = [[1.0 if i == j else 0.0 for j in range(L)] for i in range(L)]
    for l in range(layer + 1):
        a = [[sum(W[l, h, i, j] for h in range(n_heads)) / n_heads for j in range(L)] for i in range(L)]
        a = [[0.5 * a[i][j] + (0.5 if i == j else 0.0) for j in range(L)] for i in range(L)]
        a = [[v / sum(row) for v in row] for row in a]
        R = [[sum(a[i][k] * R[k][j] for k in range(L)) for j in range(L)] for i in range(L)]
    return R


def test_attention_is_the_head_mean_of_the_layer(model):
    W = traced_weights(model, TEXT)
    for layer in (0, model.config.n_layers - 1):
        a = model.attribute(TEXT, "attention", layer=layer)
        assert a.kind == "tokens" and a.layer == layer and a.scores.shape == W.shape[-2:]
        assert np.abs(a.scores.double().numpy() - W[layer].mean(axis=0)).max() <= 1e-6
        assert a.scores.dtype == model.dtype and a.scores.device == model.device


def test_rollout_equals_a_float64_loop_and_rows_sum_to_one(model):
    W = traced_weights(model, TEXT)
    worst = 0.0
    for layer in range(model.config.n_layers):
        a = model.attribute(TEXT, "rollout", layer=layer)
        got = a.scores.double().numpy()
        worst = max(worst, np.abs(got - np.array(loop_rollout(W, layer))).max())
        assert np.abs(got.sum(axis=-1) - 1.0).max() <= 1e-6
    assert worst <= 1e-6, worst
    assert a.per_layer.shape == (model.config.n_layers,) + got.shape
    L = got.shape[0]
    for l in range(model.config.n_layers):  # per_layer = each layer's Ã (the flow's capacities too)
        mean = [[sum(W[l, :, i, j]) / W.shape[1] for j in range(L)] for i in range(L)]
        tilde = [[(0.5 * mean[i][j] + (0.5 if i == j else 0.0)) / (0.5 * sum(mean[i]) + 0.5) for j in range(L)]
                 for i in range(L)]
        assert np.abs(a.per_layer[l].double().numpy() - np.array(tilde)).max() <= 1e-6
    assert torch.equal(model.attribute(TEXT, "rollout").scores, a.scores)  # default: the last layer


def test_rollout_follows_the_masks(tiny):
    """Causal and sliding-window layers: the weights are 0 outside the mask, and so is the rollout
    above the diagonal (a token never draws on a later one)."""
    for name in ("gpt2", "gemma3"):
        a = tiny(name).attribute(TEXT, "rollout")
        assert a.scores.triu(1).abs().max() == 0.0
        assert a.scores.diagonal().min() > 0.0


def test_rollout_reach_follows_gemma_sliding_windows(tiny):
    """Gemma 3's sliding layers (window 6): each layer's Ã is 0 exactly outside its mask, and the
    rollout reaches input j from output i exactly where the boolean product of the masks does
    (two sliding layers: i − j ≤ 10; the full layer above reaches every earlier token)."""
    from attnscope.positions import layer_mask_np

    model = tiny("gemma3")
    text = "Every token looks at every other token and decides how much to listen to it."
    a = model.attribute(text, "rollout", layer=1)
    L = len(a.tokens)
    assert L > 12 and model.config.layer_types[:2] == ["sliding", "sliding"]
    reach = np.eye(L, dtype=bool)
    for i in range(model.config.n_layers):
        allowed = layer_mask_np(model.config, i, L)  # (L, L) bool
        assert np.array_equal(a.per_layer[i].numpy() > 0, allowed)
        reach = (allowed.astype(int) @ reach.astype(int)) > 0
        R = model.attribute(text, "rollout", layer=i).scores.numpy()
        assert np.array_equal(R > 0, reach), i
        if i == 1:  # two windows of 6: the last token (L − 1 > 10) does not reach the first
            assert R[L - 1, 0] == 0.0 and R[L - 1, L - 11] > 0.0
    assert R[L - 1, 0] > 0.0  # the full layer on top does


def test_rollout_float64_twin(model):
    """The NumPy formulas on the float64 forward from the weights agree with the torch method on
    the model's float32 weights, and with the loop on the same float64 weights."""
    if model.config.kind == "seq2seq":
        f, prefix = reference_model_seq2seq.forward_seq2seq(model, TEXT), "encoder."
    else:
        f, prefix = reference_model.forward(model, TEXT), ""
    n = model.config.n_layers
    R = RA.rollout(RA.residual_attention(RA.mean_weights(f, n, prefix)))  # (n_layers, L, L)
    W64 = np.stack([f[f"{prefix}layers.{i}.attn.weights"] for i in range(n)])
    assert np.abs(R[-1] - np.array(loop_rollout(W64, n - 1))).max() <= 1e-12
    torch_scores = model.attribute(TEXT, "rollout").scores.double().numpy()
    assert np.abs(R[-1] - torch_scores).max() <= 1e-6  # measured ≤ 1.1e-7 (MiniLM)


def test_flow_equals_a_hand_written_edmonds_karp(model):
    for layer in (0, model.config.n_layers - 1):
        a = model.attribute(SHORT, "flow", layer=layer)
        values = np.array(flow_values(a.per_layer.double().numpy(), layer))
        assert np.abs(a.details["values"].double().numpy() - values).max() <= 1e-6
        expected = values / values.sum(axis=-1, keepdims=True)
        assert np.abs(a.scores.double().numpy() - expected).max() <= 1e-6
        assert np.abs(a.scores.double().sum(-1).numpy() - 1.0).max() <= 1e-6


def test_flow_capacities_are_the_rollout_matrices(minilm):
    f, r = minilm.attribute(SHORT, "flow"), minilm.attribute(SHORT, "rollout")
    assert torch.equal(f.per_layer, r.per_layer)


def test_flow_float64_twin_on_reference_weights(minilm):
    """The twin on the float64 forward against the hand-written Edmonds–Karp on the same matrices."""
    f = reference_model.forward(minilm, SHORT)
    A = RA.residual_attention(RA.mean_weights(f, minilm.config.n_layers))
    values, scores = RA.attention_flow(A, 2)
    assert np.abs(values - np.array(flow_values(A, 2))).max() <= 1e-9


# ----------------------------------------------------------------------------------------------
# what is refused, in one sentence
# ----------------------------------------------------------------------------------------------

def test_t5_decoder_stack_is_refused(tiny):
    t5 = tiny("t5")
    assert t5.attribute(TEXT, "rollout", stack="encoder").scores.shape[0] == len(t5.encode(TEXT).tokens[0])
    with pytest.raises(InputError, match="decoder .*not implemented"):
        t5.attribute(TEXT, "rollout", stack="decoder")
    with pytest.raises(InputError, match="one stack"):
        tiny("gpt2").attribute(TEXT, "rollout", stack="decoder")


@pytest.mark.parametrize("call, words", [
    (dict(method="nope"), "unknown attribution method 'nope'"),
    (dict(method="rollout", layer=6), "layer 6 is out of range; the model has 6 layers"),
    (dict(method="rollout", layer=-7), "layer -7 is out of range"),
    (dict(method="rollout", layer=True), "layer True is out of range"),
    (dict(method="rollout", target=3), "rollout scores every output position .* takes no target"),
    (dict(method="flow", max_tokens=3), "attention flow of 9 tokens would take too long"),
])
def test_bad_input_is_one_clear_error(minilm, call, words):
    with pytest.raises(InputError, match=words):
        minilm.attribute(TEXT, **call)


def test_bad_text_is_one_clear_error(minilm):
    with pytest.raises(InputError, match="one text .*got list"):
        minilm.attribute([TEXT], "rollout")
    with pytest.raises(InputError, match="512"):
        minilm.attribute("word " * 600, "rollout")


def test_a_text_without_tokens_is_one_clear_error(tiny):
    with pytest.raises(InputError, match="one non-empty text"):
        tiny("gpt2").attribute("", "rollout")


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_text_is_refused_by_every_method(minilm, text):
    """norm and value_zeroing refused '' but rollout, attention, alti … read MiniLM's [CLS] [SEP]
    alone as the text and returned a 2 × 2 (or 2-long) row of numbers about nothing."""
    from attnscope.attribution import METHODS
    for method in METHODS:
        with pytest.raises(InputError, match="one non-empty text"):
            minilm.attribute(text, method)


def test_layers_whose_weights_never_reach_the_hook_are_named(tiny, monkeypatch):
    """Rollout averages each layer's weights in a hook as the pass runs; a model whose layers never
    hand their weights to it gets one error naming those layers, never uninitialised numbers."""
    model = tiny("gpt2")
    real = type(model).trace

    def hooks_for_layer_0_only(self, texts, *args, hooks=None, **kw):
        fn = next(iter(hooks.values()))
        return real(self, texts, *args, hooks={"layers.0.attn.weights": fn}, **kw)
    monkeypatch.setattr(type(model), "trace", hooks_for_layer_0_only)
    n = model.config.n_layers
    with pytest.raises(InputError, match=f"layers {', '.join(map(str, range(1, n)))} passed no attention weights"):
        model.attribute(TEXT, "rollout")


@pytest.mark.parametrize("max_tokens", ["64", None, 0, -1, True, 2.5])
def test_flow_max_tokens_that_is_no_positive_integer_is_one_clear_error(minilm, max_tokens):
    with pytest.raises(InputError, match=f"max_tokens must be a positive integer, got {re.escape(repr(max_tokens))}"):
        minilm.attribute(TEXT, "flow", max_tokens=max_tokens)
