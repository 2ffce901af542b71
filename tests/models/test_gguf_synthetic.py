"""Tiny GGUF files written as llama.cpp's converter writes them: attnscope recovers the Hugging
Face weights exactly (F32) and equals transformers' reading of the same file (F32 and quantized),
for llama (GQA and MQA), mistral, qwen2 (biases) and gemma3."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.models.gguf import load_gguf, unpermute_qk
from tests.models.decoders.gguf_writer import hf_weights, llama_cpp_permute, write_gguf

CASES = {
    "llama-gqa": ("llama", dict(heads=4, kv=2)),
    "llama-mqa": ("llama", dict(heads=4, kv=1)),
    "mistral": ("mistral", dict(heads=4, kv=2)),
    "qwen2": ("qwen2", dict(heads=4, kv=2)),
    "gemma3": ("gemma3_text", dict(heads=4, kv=1, head_dim=16)),
}


def _write(tmp_path, case, qtype="F32", tied=True):
    model_type, kw = CASES[case]
    head_dim = kw.get("head_dim", 8)
    sd = hf_weights(model_type, heads=kw["heads"], kv=kw["kv"], head_dim=head_dim, tied=tied)
    name = "Mistral tiny" if model_type == "mistral" else None
    path = write_gguf(tmp_path / f"{case}-{qtype}.gguf", model_type, sd, heads=kw["heads"], kv=kw["kv"],
                      head_dim=head_dim, qtype=qtype, name=name)
    return path, sd


def test_unpermute_inverts_llama_cpp_permute():
    g = np.random.default_rng(0)
    for heads, d, cols in ((4, 8, 5), (1, 64, 3), (3, 2, 1)):
        w = g.normal(size=(heads * d, cols)).astype(np.float32)
        back = unpermute_qk(torch.from_numpy(llama_cpp_permute(w, heads)), heads)
        assert torch.equal(back, torch.from_numpy(w))
        b = g.normal(size=(heads * d,)).astype(np.float32)  # a bias is permuted the same way
        assert torch.equal(unpermute_qk(torch.from_numpy(llama_cpp_permute(b, heads)), heads), torch.from_numpy(b))


@pytest.mark.parametrize("case", list(CASES))
def test_f32_file_gives_back_the_hf_weights(tmp_path, case):
    path, sd = _write(tmp_path, case, tied=case != "qwen2")
    ck = load_gguf(path, tokenizer=False, progress=False)
    assert set(ck.state_dict) == set(sd)
    for k, v in sd.items():
        if case == "gemma3" and k.endswith("norm.weight"):
            v = (v + np.float32(1)) - np.float32(1)  # stored as 1 + w in float32, as llama.cpp does: w to 1 ulp of 1
        assert torch.equal(ck.state_dict[k], torch.from_numpy(v)), k
    assert ck.config["model_type"] == CASES[case][0]
    assert ck.config["tie_word_embeddings"] == (case != "qwen2")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("qtype", ["F32", "Q8_0", "F16"])
def test_equals_transformers_reading_of_the_same_file(tmp_path, case, qtype):
    import transformers

    transformers.logging.set_verbosity_error()
    path, _ = _write(tmp_path, case, qtype=qtype)
    ck = load_gguf(path, tokenizer=False, progress=False)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=path.name)
    ref = hf.state_dict()
    for k, v in ref.items():
        if k == "lm_head.weight" and ck.config["tie_word_embeddings"]:
            k = "model.embed_tokens.weight"
        assert torch.equal(ck.state_dict[k], v.float()), k
    for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers",
              "intermediate_size", "vocab_size", "tie_word_embeddings", "model_type"):
        if k == "model_type" and case == "mistral":
            # transformers calls a llama file "mistral" only when general.name is exactly "mistral";
            # attnscope when the name contains it ("Mistral tiny"); the two classes are the same maths here
            assert (ck.config[k], hf.config.model_type) == ("mistral", "llama")
            continue
        assert ck.config[k] == getattr(hf.config, k), k
    # Qwen2Config has no head_dim attribute: its attention uses hidden_size // num_attention_heads
    hf_head_dim = getattr(hf.config, "head_dim", None) or hf.config.hidden_size // hf.config.num_attention_heads
    assert ck.config["head_dim"] == hf_head_dim


def test_llama3_rope_scaling_from_rope_freqs(tmp_path):
    """Llama 3.1's scaling as llama.cpp stores it (one divisor per frequency) comes back as its
    rope_scaling parameters."""
    import math

    head_dim, theta = 64, 500000.0
    factor, low, high, L = 8.0, 1.0, 4.0, 8192
    divisors = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * theta ** (i / head_dim)
        if wavelen < L / high:
            divisors.append(1.0)
        elif wavelen > L / low:
            divisors.append(factor)
        else:
            s = (L / wavelen - low) / (high - low)
            divisors.append(1 / ((1 - s) / factor + s))
    sd = hf_weights("llama", heads=2, kv=1, head_dim=head_dim, hidden=128)
    path = write_gguf(tmp_path / "l3.gguf", "llama", sd, heads=2, kv=1, head_dim=head_dim,
                      extra_keys={"llama.rope.freq_base": theta},
                      extra_tensors={"rope_freqs.weight": (np.array(divisors, np.float32), None)})
    ck = load_gguf(path, tokenizer=False, progress=False)
    rs = ck.config["rope_scaling"]
    assert rs["rope_type"] == "llama3" and rs["factor"] == factor
    assert (rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]) == (low, high, L)
    assert "rope_freqs.weight" not in ck.state_dict


def test_linear_rope_scaling_and_gemma_pattern_keys(tmp_path):
    sd = hf_weights("gemma3_text", heads=4, kv=1, head_dim=16, layers=4)
    path = write_gguf(tmp_path / "g.gguf", "gemma3_text", sd, heads=4, kv=1, head_dim=16,
                      extra_keys={"gemma3.rope.scaling.type": "linear", "gemma3.rope.scaling.factor": 8.0,
                                  "gemma3.rope.freq_base_swa": 20000.0,
                                  "gemma3.attention.sliding_window_pattern": [True, False, True, True]})
    ck = load_gguf(path, tokenizer=False, progress=False)
    c = ck.config
    assert c["rope_scaling"] == {"rope_type": "linear", "factor": 8.0}
    assert c["rope_local_base_freq"] == 20000.0
    assert c["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"]
    assert "layer_types" not in ck.defaults and "rope_local_base_freq" not in ck.defaults
