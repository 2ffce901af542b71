"""``attnscope.load(path.gguf)`` for every decoder architecture equals transformers' model of the
same file (llama GQA/MQA, mistral's window, qwen2's biases, gemma3), and what a GGUF file or a
config cannot give is one ModelLoadError naming it."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import attnscope
from attnscope.errors import ModelLoadError
from tests.models.decoders.gguf_writer import hf_weights, write_gguf
from tests.models.decoders.tiny import hf_model, hf_run

CASES = {
    "llama-gqa": ("llama", dict(heads=4, kv=2)),
    "llama-mqa": ("llama", dict(heads=4, kv=1)),
    "mistral": ("mistral", dict(heads=4, kv=2)),
    "qwen2": ("qwen2", dict(heads=4, kv=2)),
    # head_dim 256, as every real Gemma 3 but 27B: a GGUF file does not store query_pre_attn_scalar,
    # which llama.cpp (and attnscope) take to be head_dim and transformers to be 256
    "gemma3": ("gemma3_text", dict(heads=4, kv=1, head_dim=256)),
}


def _write(tmp_path, case, qtype="F32"):
    model_type, kw = CASES[case]
    head_dim = kw.get("head_dim", 8)
    sd = hf_weights(model_type, heads=kw["heads"], kv=kw["kv"], head_dim=head_dim, tied=case != "qwen2")
    name = "Mistral tiny" if model_type == "mistral" else None
    return write_gguf(tmp_path / f"{case}-{qtype}.gguf", model_type, sd, heads=kw["heads"], kv=kw["kv"],
                      head_dim=head_dim, qtype=qtype, name=name, sliding_window=6, context=64)


@pytest.mark.parametrize("case", list(CASES))
def test_gguf_model_equals_transformers(tmp_path, case):
    path = _write(tmp_path, case, "Q8_0")
    model = attnscope.load(path)
    assert isinstance(model, attnscope.models.DecoderModel) and model.family == CASES[case][0].removesuffix("_text")
    assert model.gguf["qtypes"]["model.layers.0.self_attn.q_proj.weight"] == "Q8_0"
    ids = torch.tensor([[1] + [3 + (7 * i) % 60 for i in range(40)]])  # 41 tokens: past the window of 6
    ref = hf_run(hf_model(path), ids)
    tr = model.trace(attnscope.tokenizer.Batch(ids, torch.ones_like(ids), torch.zeros_like(ids),
                                               [[str(i) for i in ids[0].tolist()]], [""]),
                     names=["layers.*.attn.weights", "final_norm"])
    for i, a in enumerate(ref["attentions"]):
        assert float((tr[f"layers.{i}.attn.weights"] - a).abs().max()) <= 1e-5
    with torch.no_grad():
        logits = model.lm_logits(model(ids))
    assert float((logits - ref["logits"]).abs().max()) <= 2e-5


def test_package_names_and_gguf_paths_load(tmp_path):
    path = _write(tmp_path, "llama-gqa")
    plain = tmp_path / "model.bin"
    shutil.copy(path, plain)  # a GGUF file is known by its magic bytes too
    a, b = attnscope.load(path), attnscope.load(plain)
    assert torch.equal(a.embed.token_embedding.weight, b.embed.token_embedding.weight)
    with pytest.raises(ModelLoadError, match="not found"):
        attnscope.load(tmp_path / "missing.gguf")


@pytest.mark.parametrize("edit, message", [
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, r"rope_scaling type 'yarn' is not supported; attnscope "
                                                              r"runs rotary positions of type default, linear, dynamic, llama3"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, r"needs a positive 'low_freq_factor'"),
    ({"rope_parameters": {"rope_type": "linear"}}, r"rope_parameters of type 'linear' needs a positive 'factor'"),
    ({"num_key_value_heads": 3}, r"num_attention_heads \(8\) must be a multiple of num_key_value_heads \(3\)"),
    ({"hidden_act": "relu"}, r"activation 'relu' is not supported for a gated MLP"),
    ({"partial_rotary_factor": 0.5}, r"partial_rotary_factor = 0.5"),
    ({"sliding_window": 4}, r"is it a mistral checkpoint"),
    ({"head_dim": 7}, r"rotary positions rotate pairs of features; the head width must be even, got 7"),
])
def test_bad_decoder_configs(decoder_dirs, tmp_path, edit, message):
    folder = tmp_path / "m"
    shutil.copytree(decoder_dirs["llama_gqa"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(edit)
    if "rope_scaling" in edit:
        cfg.pop("rope_parameters")
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match=message):
        attnscope.load(folder)


def test_gemma_layer_types_win_over_the_pattern(decoder_dirs, tmp_path):
    folder = tmp_path / "g"
    shutil.copytree(decoder_dirs["gemma3"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["_sliding_window_pattern"] == 6  # says: layer 5 full, 0-4 sliding
    m = attnscope.load(folder)
    assert m.config.layer_types == ["sliding", "sliding", "full"]  # layer_types says otherwise, and wins
    del cfg["layer_types"]
    cfg["_sliding_window_pattern"] = 2
    (folder / "config.json").write_text(json.dumps(cfg))
    assert attnscope.load(folder).config.layer_types == ["sliding", "full", "sliding"]
    cfg["rope_parameters"] = None
    cfg.update(rope_theta=1e6, rope_local_base_freq=10000.0)  # the Hub's spelling
    (folder / "config.json").write_text(json.dumps(cfg))
    c = attnscope.load(folder).config
    assert (c.rope_theta, c.rope_local_theta, c.query_scale) == (1e6, 1e4, 24 ** -0.5)


def test_qwen2_use_sliding_window_false_turns_the_window_off(decoders):
    assert decoders["qwen2_full"].config.sliding_window is None
    assert decoders["qwen2_window"].config.layer_types == ["full", "sliding"]
