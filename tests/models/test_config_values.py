"""Every number a family reads from config.json is checked where it is read (registry.setting):
a zero, a negative size, a NaN or an infinity is one ModelLoadError naming the file, the key and
the value, never a ZeroDivisionError at load or attention weights of NaN afterwards."""

import json
import math
import shutil

import pytest

import attnscope
from attnscope import ModelLoadError
from attnscope.config import DecoderConfig, TransformerConfig
from attnscope.errors import ConfigError
from attnscope.models.registry import family_for
from tests.models.test_configs import BERT_BASE_CHINESE, GPT2


def _copy_with(src, tmp_path, **changes):
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))  # NaN and Infinity as Python's json writes them
    return folder


@pytest.mark.parametrize("value", [0, -1.0, float("nan")], ids=["zero", "negative", "nan"])
def test_gemma3_query_pre_attn_scalar(decoder_dirs, tmp_path, value):
    folder = _copy_with(decoder_dirs["gemma3"], tmp_path, query_pre_attn_scalar=value)
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(folder)
    assert str(e.value).startswith(f"{folder / 'config.json'}: 'query_pre_attn_scalar' must be ")
    assert f"got {value!r}" in str(e.value)


@pytest.mark.parametrize("value, why", [(-1, "a positive number"), (0, "a positive number"),
                                        (float("nan"), "a finite number"), (float("inf"), "a finite number")])
def test_bert_layer_norm_eps(tiny_dirs, tmp_path, value, why):
    folder = _copy_with(tiny_dirs["bert"], tmp_path, layer_norm_eps=value)
    with pytest.raises(ModelLoadError, match=f"config.json: 'layer_norm_eps' must be {why}, got {value!r}"):
        attnscope.load(folder)


def test_the_untouched_folders_load_with_finite_weights(decoder_dirs, tiny_dirs):
    for folder in (decoder_dirs["gemma3"], tiny_dirs["bert"]):
        w = attnscope.load(folder).trace("hello world", names=["layers.0.attn.weights"])["layers.0.attn.weights"]
        assert w.isfinite().all()


def _config(hf):
    return family_for(hf["model_type"]).config_from_hf(hf, "config.json")


@pytest.mark.parametrize("hf, key, value, message", [
    (BERT_BASE_CHINESE, "hidden_size", 0, "'hidden_size' must be a positive integer, got 0"),
    (BERT_BASE_CHINESE, "num_attention_heads", -12, "'num_attention_heads' must be a positive integer, got -12"),
    (BERT_BASE_CHINESE, "hidden_size", 770, "d_model (770) must be divisible by config.n_heads (12)"),
    (BERT_BASE_CHINESE, "num_hidden_layers", 0, "'num_hidden_layers' must be a positive integer, got 0"),
    (BERT_BASE_CHINESE, "type_vocab_size", -1, "'type_vocab_size' must be 0 or more, got -1"),
    (BERT_BASE_CHINESE, "hidden_dropout_prob", 1.5, "'hidden_dropout_prob' is a dropout probability"),
    (BERT_BASE_CHINESE, "attention_probs_dropout_prob", float("nan"), "must be a finite number, got nan"),
    (GPT2, "layer_norm_epsilon", -1e-5, "'layer_norm_epsilon' must be a positive number, got -1e-05"),
    (GPT2, "n_positions", 0, "'n_positions' must be a positive integer, got 0"),
    (GPT2, "n_head", 0, "'n_head' must be a positive integer, got 0"),
])
def test_impossible_numbers_are_named(hf, key, value, message):
    with pytest.raises((ModelLoadError, ConfigError), match=message.replace("(", r"\(").replace(")", r"\)")):
        _config({**hf, key: value})


LLAMA = {"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 100, "rms_norm_eps": 1e-6, "rope_theta": 1e4}


def test_decoder_settings():
    hf = LLAMA
    assert _config(hf).rope_theta == 1e4
    for key, value, message in [
        ("rms_norm_eps", float("nan"), "'rms_norm_eps' must be a finite number, got nan"),
        ("rms_norm_eps", 0.0, "'rms_norm_eps' must be a positive number, got 0.0"),
        ("rope_theta", float("inf"), "rope_theta must be a positive number, got inf"),
        ("rope_theta", -10000.0, "rope_theta must be a positive number, got -10000.0"),
        ("num_key_value_heads", 0, "'num_key_value_heads' must be a positive integer, got 0"),
        ("intermediate_size", -1, "'intermediate_size' must be a positive integer, got -1"),
    ]:
        with pytest.raises(ModelLoadError, match=message):
            _config({**hf, key: value})


@pytest.mark.parametrize("eps", [0.0, -1e-5, math.nan, math.inf])
def test_the_config_classes_refuse_an_impossible_epsilon(eps):
    for cls in (TransformerConfig, DecoderConfig):
        with pytest.raises(ConfigError, match="config.layer_norm_eps must be a positive finite number"):
            cls(layer_norm_eps=eps)
    with pytest.raises(ConfigError, match="config.rope_theta must be a positive finite number, got inf"):
        DecoderConfig(rope_theta=math.inf)


@pytest.mark.parametrize("name, key", [("bert", "num_hidden_layers"), ("gpt2", "n_layer")])
@pytest.mark.parametrize("stream", [False, True])
def test_more_layers_than_the_weights_hold_are_refused_before_building(tiny_dirs, tmp_path, name, key, stream):
    """num_hidden_layers: 10**9 built layer after layer (days; the test's timeout stops it). Each layer
    holds at least d_model weights: 10**9 × 32 bytes is more than the folder's weight files hold."""
    import signal
    folder = _copy_with(tiny_dirs[name], tmp_path, **{key: 10**9})
    held = sum(f.stat().st_size for f in folder.iterdir() if f.suffix in (".safetensors", ".bin"))
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("still building after 20 s"))
    signal.alarm(20)
    try:
        with pytest.raises(ModelLoadError) as e:
            attnscope.load(folder, stream_layers=stream)
    finally:
        signal.alarm(0)
    assert str(e.value) == (f"{folder / 'config.json'} describes 1,000,000,000 layers of width 32, more than its "
                            f"weights ({held:,} bytes) can hold; check its number of layers (num_hidden_layers, "
                            "n_layer, num_layers)")
