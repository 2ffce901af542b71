"""Every defect of a GGUF file is one ModelLoadError that names it (small synthetic files)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.errors import ConfigError, ModelLoadError
from attnscope.i18n import error_message
from attnscope.models.gguf import load_gguf
from tests.models.decoders.gguf_writer import hf_weights, write_gguf


def _file(tmp_path, model_type="llama", name="m.gguf", **kw):
    sd = kw.pop("sd", None) or hf_weights(model_type, heads=4, kv=kw.get("kv", 2), head_dim=kw.get("head_dim", 8))
    return write_gguf(tmp_path / name, model_type, sd, **kw)


def _raises(path, match, **kw):
    with pytest.raises(ModelLoadError, match=match):
        load_gguf(path, progress=False, **kw)


def test_unsupported_architecture(tmp_path):
    _raises(_file(tmp_path, arch="phi3"), r"GGUF architecture 'phi3' is not supported")


def test_unsupported_quantization_type(tmp_path):
    import gguf

    sd = hf_weights("llama", heads=4, kv=2)
    up = sd.pop("model.layers.0.mlp.up_proj.weight").astype(np.float64)  # written as F64
    p = write_gguf(tmp_path / "f64.gguf", "llama", sd, extra_tensors={"blk.0.ffn_up.weight": (up, None)})
    assert gguf.GGMLQuantizationType.F64.name == "F64"
    _raises(p, r"blk\.0\.ffn_up\.weight is stored as F64, which attnscope cannot dequantize \(supported: F32, F16, .*Q4_K")


def test_unknown_ggml_type_id(tmp_path):
    p = _file(tmp_path)
    data = bytearray(p.read_bytes())
    from attnscope.models.gguf_file import GGUFFile
    with GGUFFile(p) as f:
        info = f.tensors["token_embd.weight"]
    # the type id sits right before the u64 offset at the end of the tensor's table row
    name = b"token_embd.weight"
    at = data.index(name) + len(name) + 4 + 8 * len(info.shape)
    data[at:at + 4] = (999).to_bytes(4, "little")
    p.write_bytes(bytes(data))
    _raises(p, r"token_embd\.weight has unknown ggml type 999")


@pytest.mark.parametrize("key", ["context_length", "embedding_length", "block_count", "feed_forward_length",
                                 "attention.head_count", "attention.layer_norm_rms_epsilon"])
def test_missing_required_key(tmp_path, key):
    _raises(_file(tmp_path, drop_keys=[key]), rf"no 'llama\.{key}'.*no documented default")


def test_missing_gemma_keys_without_default(tmp_path):
    sd = hf_weights("gemma3_text", heads=4, kv=1, head_dim=16)
    for key in ("attention.sliding_window", "rope.freq_base", "attention.key_length"):
        p = write_gguf(tmp_path / f"{key}.gguf", "gemma3_text", sd, heads=4, kv=1, head_dim=16, drop_keys=[key])
        _raises(p, rf"no 'gemma3\.{key}'")


def test_documented_defaults_are_reported(tmp_path):
    ck = load_gguf(_file(tmp_path, drop_keys=["attention.head_count_kv", "rope.freq_base"], kv=4), progress=False)
    assert ck.config["num_key_value_heads"] == 4 and ck.config["rope_theta"] == 10000.0
    assert {"num_key_value_heads", "rope_theta"} <= set(ck.defaults)


def test_wrong_value_type(tmp_path):
    _raises(_file(tmp_path, extra_keys={"llama.block_count": "two"}), r"llama\.block_count' must be an integer")


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_more_layers_than_the_file_can_hold(tmp_path, model_type):
    """block_count 10**9 listed every layer's weight names (Gemma 3: its layer types) for hours; more
    layers than the file's bytes can hold is refused at once (10**5 here: the old code's error was another)."""
    kv, hd = (1, 16) if model_type == "gemma3_text" else (2, 8)
    sd = hf_weights(model_type, heads=4, kv=kv, head_dim=hd)
    arch = "gemma3" if model_type == "gemma3_text" else "llama"
    p = write_gguf(tmp_path / "m.gguf", model_type, sd, kv=kv, head_dim=hd, extra_keys={f"{arch}.block_count": 10**5})
    with pytest.raises(ModelLoadError) as e:
        load_gguf(p, progress=False)
    assert f"m.gguf describes 100,000 layers of width 32, more than its weights ({p.stat().st_size:,} bytes)" in str(e.value)
    # the count came from the file's header: the message names its key, not config.json's
    for lang in ("en", "zh"):
        msg = error_message(e.value, lang)
        assert f"'{arch}.block_count'" in msg and "num_hidden_layers" not in msg, msg


def test_bad_head_counts_and_partial_rotary(tmp_path):
    _raises(_file(tmp_path, extra_keys={"llama.attention.head_count_kv": 3}), r"head_count_kv = 3 must divide")
    _raises(_file(tmp_path, name="r.gguf", extra_keys={"llama.rope.dimension_count": 4}), r"partial rotary")


def test_unknown_rope_scaling(tmp_path):
    _raises(_file(tmp_path, extra_keys={"llama.rope.scaling.type": "longrope", "llama.rope.scaling.factor": 4.0}),
            r"rope\.scaling\.type = 'longrope' is not supported")


def test_rope_freqs_that_are_not_llama3(tmp_path):
    bad = np.linspace(1, 3, 4).astype(np.float32)  # head_dim 8 → 4 frequencies, no plateau at 1 and factor
    bad[1] = 7.0
    _raises(_file(tmp_path, extra_tensors={"rope_freqs.weight": (bad, None)}), r"does not follow Llama 3")


def test_missing_and_unknown_tensors(tmp_path):
    sd = hf_weights("llama", heads=4, kv=2)
    del sd["model.layers.1.mlp.up_proj.weight"]
    _raises(write_gguf(tmp_path / "a.gguf", "llama", sd), r"no tensor for model\.layers\.1\.mlp\.up_proj\.weight")
    p = _file(tmp_path, name="b.gguf", extra_tensors={"blk.0.mystery.weight": (np.zeros(4, np.float32), None)})
    _raises(p, r"tensor 'blk\.0\.mystery\.weight' is not part of a llama model")


def test_shape_that_disagrees_with_metadata(tmp_path):
    _raises(_file(tmp_path, extra_keys={"llama.feed_forward_length": 32}), r"mlp\.gate_proj\.weight has shape")


def test_qwen2_without_biases(tmp_path):
    sd = hf_weights("llama", heads=4, kv=2)
    _raises(write_gguf(tmp_path / "q.gguf", "qwen2", sd, arch="qwen2"), r"blk\.0\.attn_q\.bias")


def test_not_a_gguf_file_truncated_and_missing(tmp_path):
    (tmp_path / "x.gguf").write_bytes(b"PK\x03\x04 not gguf at all")
    _raises(tmp_path / "x.gguf", r"is not a GGUF file")
    (tmp_path / "e.gguf").write_bytes(b"")
    _raises(tmp_path / "e.gguf", r"cannot read")
    p = _file(tmp_path)
    data = p.read_bytes()
    (tmp_path / "t.gguf").write_bytes(data[: len(data) - 100])
    _raises(tmp_path / "t.gguf", r"past the end of the file")
    (tmp_path / "h.gguf").write_bytes(data[:40])
    _raises(tmp_path / "h.gguf", r"truncated GGUF header")
    (tmp_path / "v.gguf").write_bytes(b"GGUF" + (1).to_bytes(4, "little") + data[8:])
    _raises(tmp_path / "v.gguf", r"GGUF version 1 is not supported")
    _raises(tmp_path / "missing.gguf", r"missing\.gguf not found")


def test_missing_tokenizer(tmp_path):
    _raises(_file(tmp_path, tokenizer="none"), r"no tokenizer\.ggml\.tokens")
    ck = load_gguf(tmp_path / "m.gguf", tokenizer=False, progress=False)  # weights alone need no vocabulary
    assert ck.tokenizer is None


def test_dtype_must_be_float(tmp_path):
    with pytest.raises(ConfigError, match="float32 or torch.float64"):
        load_gguf(_file(tmp_path), dtype=torch.float16)
