"""config.norm names a layer recipe; DecoderConfig's QK-norm span; dicts written before the recipes."""

import pytest

from attnscope.config import DecoderConfig, TransformerConfig
from attnscope.errors import ConfigError
from attnscope.recipe import layer_recipe_names

SMALL = dict(vocab_size=40, d_model=16, n_heads=4, n_layers=2, d_ff=24)


def test_norm_is_one_of_the_registered_recipes():
    assert set(layer_recipe_names()) >= {"post", "pre", "sandwich", "post_block"}
    for name in ("post", "pre", "sandwich", "post_block"):
        assert DecoderConfig(**SMALL, norm=name).recipe.name == name
        assert TransformerConfig(**SMALL, norm=name).recipe.name == name
    with pytest.raises(ConfigError, match=r"config.norm = 'peri' is unknown; choose one of post, pre, sandwich, "
                                          r"post_block"):
        DecoderConfig(**SMALL, norm="peri")


def test_qk_norm_span():
    assert DecoderConfig(**SMALL).qk_norm_span == "head"
    assert DecoderConfig(**SMALL, qk_norm=True, qk_norm_span="all").qk_norm_span == "all"
    with pytest.raises(ConfigError, match=r"config.qk_norm_span = 'heads' is unknown; choose one of head, all"):
        DecoderConfig(**SMALL, qk_norm_span="heads")


def test_a_dict_saved_with_the_sandwich_flag_reads_as_the_sandwich_recipe():
    """A trace saved before the recipes records ``sandwich_norm: true`` (Gemma 3) in its config."""
    old = DecoderConfig(**SMALL, qk_norm=True).to_dict()
    old.pop("qk_norm_span")  # not written then either
    gemma = TransformerConfig.from_dict(dict(old, sandwich_norm=True))
    assert isinstance(gemma, DecoderConfig) and gemma.norm == "sandwich" and gemma.qk_norm_span == "head"
    llama = TransformerConfig.from_dict(dict(old, sandwich_norm=False))
    assert llama.norm == "pre"
    again = TransformerConfig.from_dict(gemma.to_dict())
    assert again == gemma and "sandwich_norm" not in gemma.to_dict()


@pytest.mark.parametrize("scaling, field", [
    ({"rope_type": "linear"}, "factor"),
    ({"rope_type": "dynamic", "factor": 0}, "factor"),
    ({"rope_type": "linear", "factor": "2"}, "factor"),
    ({"rope_type": "llama3", "factor": 8.0}, "low_freq_factor"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": float("inf"),
      "original_max_position_embeddings": 64}, "high_freq_factor"),
])
def test_rope_scaling_needs_its_numbers(scaling, field):
    # a model loaded from the Hub is checked field by field (models.decoder_family); a DecoderConfig
    # built by hand was not: a KeyError from deep in the rotary tables, or factor 0 → inf speeds
    with pytest.raises(ConfigError, match=rf"config.rope_scaling\['{field}'\] must be a positive finite number"):
        DecoderConfig(**SMALL, rope_scaling=scaling)


def test_llama3_scaling_needs_high_above_low():
    bad = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 64}  # no band to blend over: refused as a loaded config is
    with pytest.raises(ConfigError, match="llama3 needs high_freq_factor > low_freq_factor, got 4.0 and 4.0"):
        DecoderConfig(**SMALL, rope_scaling=bad)
    DecoderConfig(**SMALL, rope_scaling=dict(bad, high_freq_factor=4.5))
