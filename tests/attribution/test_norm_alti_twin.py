"""The float64 twin (attnscope.reference.attribution_blocks) of norm, globenc, alti and value_zeroing against the
torch methods on the float32 trace, and what the block methods refuse, in one sentence each."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.attribution import attribute
from attnscope.errors import InputError
from attnscope.reference import attribution_blocks as RA

TEXT = "Attention weights alone do not say which tokens matter, the norms do."
NAMES = ["minilm", "llama_gqa", "gemma3", "olmo2", "deberta_v3"]


@pytest.mark.parametrize("name", NAMES)
def test_the_float64_twin_equals_the_methods(minilm, tiny, name):
    model = minilm if name == "minilm" else tiny(name)
    ref = RA.block_methods(model, TEXT, zeroing=True)
    last = model.config.n_layers - 1
    for method in ("norm", "globenc", "alti", "value_zeroing"):
        got = attribute(model, TEXT, method)
        np.testing.assert_allclose(got.per_layer.double().numpy(), ref[method], atol=2e-5, rtol=1e-4)
        want = ref[method][last] if method == "norm" else RA.rollout(ref[method], last)
        np.testing.assert_allclose(got.scores.double().numpy(), want, atol=2e-5, rtol=1e-4)
        if method == "norm":
            np.testing.assert_allclose(got.details["heads"].double().numpy(), ref["norm_heads"], atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("method", ["norm", "globenc", "alti", "value_zeroing"])
def test_the_decoder_of_an_encoder_decoder_is_refused_in_one_sentence(tiny, method):
    model = tiny("t5")
    with pytest.raises(InputError, match="decoder's self- and cross-attention") as e:
        attribute(model, "a short text", method, target="a target")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="decoder's self- and cross-attention"):
        attribute(model, "a short text", method, stack="decoder")
    got = attribute(model, "a short text", method)  # the encoder's stack
    assert torch.equal(attribute(model, "a short text", method, stack="encoder").per_layer, got.per_layer)
    assert got.per_layer.shape[0] == len(model.encoder.layers) and got.scores.shape == (len(got.tokens),) * 2


@pytest.mark.parametrize("method", ["norm", "alti", "value_zeroing"])
def test_a_text_past_the_context_is_one_error(tiny, method):
    model = tiny("gpt2")
    with pytest.raises(InputError):
        attribute(model, "word " * (model.config.max_positions + 10), method)


@pytest.mark.parametrize("method", ["norm", "globenc", "alti", "value_zeroing"])
def test_an_option_it_does_not_take_is_one_error(tiny, method):
    model = tiny("gpt2")
    with pytest.raises(InputError, match="takes no option 'steps'"):
        attribute(model, "a short text", method, steps=5)
    with pytest.raises(InputError, match="one stack"):
        attribute(model, "a short text", method, stack="encoder")
