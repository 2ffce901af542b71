"""Settings that name tokens (eos_token_id, forced_bos_token_id, …) are read by one function,
models.registry.token_ids, for decoder configs and encoder–decoder generation settings: an id or a
list of ids; anything else is one sentence naming the file and the key."""

import pytest

from attnscope.errors import ModelLoadError
from attnscope.models.decoder_family import decoder_config
from attnscope.models.registry import token_ids
from attnscope.models.seq2seq_generation import generation_settings

LLAMA = {"hidden_size": 16, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 32,
         "vocab_size": 50, "max_position_embeddings": 64, "rms_norm_eps": 1e-6}


def test_an_id_or_a_list():
    assert token_ids(None, "eos_token_id", "c.json") == []
    assert token_ids(7, "eos_token_id", "c.json") == [7]
    assert token_ids([1, 2], "eos_token_id", "c.json") == [1, 2]
    for bad in (-1, True, "2", [1, None], 1.0):
        with pytest.raises(ModelLoadError, match=r"^c\.json: 'eos_token_id' must be a token id or a list of them, got "):
            token_ids(bad, "eos_token_id", "c.json")


def test_decoder_config_reads_eos_with_it():
    assert decoder_config({**LLAMA, "eos_token_id": [3, 4]}, "config.json").eos_token_ids == [3, 4]
    with pytest.raises(ModelLoadError, match=r"config\.json: 'eos_token_id' must be a token id or a list of them"):
        decoder_config({**LLAMA, "eos_token_id": "</s>"}, "config.json")


def test_generation_settings_read_token_settings_with_it(tmp_path):
    s = generation_settings({"eos_token_id": 1, "forced_bos_token_id": 0}, tmp_path, "config.json")
    assert s["eos_token_ids"] == [1] and s["generation"]["forced_bos_token_id"] == 0
    with pytest.raises(ModelLoadError, match=r"config\.json: 'forced_eos_token_id' must be a token id"):
        generation_settings({"eos_token_id": 1, "forced_eos_token_id": [2, -2]}, tmp_path, "config.json")
