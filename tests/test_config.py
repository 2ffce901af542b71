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
