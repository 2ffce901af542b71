"""The two real GGUF models read by attnscope equal transformers' reading of the same files:
every tensor bit for bit, and every config value (see tests/models/decoders/reference.py)."""

from __future__ import annotations

import pytest
import torch

from attnscope.models.gguf import load_gguf
from attnscope.models.packages import package_model_path
from tests.memory_report import release_memory
from tests.models.decoders.reference import reference, tensor_digest

MODELS = ("smollm2-135m", "gemma-3-270m")


@pytest.fixture(scope="module")
def loaded():
    """``get(name)``: the checkpoint of a model package, one held at a time (0.5-1.1 GB each)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache.clear()
            release_memory()
            cache[name] = load_gguf(package_model_path(name), tokenizer=False, progress=False)
        return cache[name]
    yield get
    cache.clear()


@pytest.fixture(scope="module")
def ref(request):
    cache = {}

    def get(name, fresh=False):
        if fresh or name not in cache:
            cache[name] = reference(request.config, package_model_path(name), fresh=fresh)
        return cache[name]
    return get


def _mismatches(ckpt, r) -> list[str]:
    bad = []
    for name, (shape, _dtype, digest) in r["tensors"].items():
        if name == "lm_head.weight" and ckpt.config["tie_word_embeddings"]:
            name = "model.embed_tokens.weight"  # transformers lists the tied head too
        t = ckpt.state_dict.get(name)
        if t is None:
            bad.append(f"{name}: missing")
        elif list(t.shape) != shape:
            bad.append(f"{name}: shape {list(t.shape)} != {shape}")
        elif tensor_digest(t) != digest:
            bad.append(f"{name}: values differ")
    return bad


@pytest.mark.parametrize("name", MODELS, scope="module")
def test_state_dict_equals_transformers_bit_for_bit(name, loaded, ref):
    ckpt = loaded(name)
    r = ref(name)
    bad = _mismatches(ckpt, r)
    if bad:  # a stale cache must not fail the test: recompute with transformers once
        r = ref(name, fresh=True)
        bad = _mismatches(ckpt, r)
    assert not bad, bad[:10]
    expected = set(r["tensors"]) - ({"lm_head.weight"} if ckpt.config["tie_word_embeddings"] else set())
    assert set(ckpt.state_dict) == expected
    assert r["lm_head_tied"] == ckpt.config["tie_word_embeddings"] is True
    assert all(t.dtype == torch.float32 for t in ckpt.state_dict.values())


def _hf_rope(cfg: dict) -> dict:
    rp = cfg.get("rope_parameters") or {}
    if "full_attention" in rp:
        return {"rope_theta": rp["full_attention"]["rope_theta"],
                "rope_local_base_freq": rp["sliding_attention"]["rope_theta"]}
    return {"rope_theta": rp.get("rope_theta", cfg.get("rope_theta"))}


@pytest.mark.parametrize("name", MODELS, scope="module")
def test_config_equals_transformers(name, loaded, ref):
    ours = loaded(name).config
    hf = ref(name)["config"]
    keys = ["model_type", "hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "head_dim", "rms_norm_eps", "max_position_embeddings", "vocab_size",
            "tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "attention_bias"]
    if ours["model_type"] == "gemma3_text":
        keys += ["hidden_activation", "sliding_window", "layer_types", "query_pre_attn_scalar",
                 "final_logit_softcapping", "attn_logit_softcapping"]
    else:
        keys += ["hidden_act", "mlp_bias"]
    for k in keys:
        assert ours[k] == hf[k], (k, ours[k], hf[k])
    for k, v in _hf_rope(hf).items():
        assert ours[k] == v, (k, ours[k], v)
    assert ours["rope_scaling"] is None


def test_facts_of_the_files(loaded):
    """What the issue states about the two files, from the files."""
    s = loaded("smollm2-135m").config
    assert (s["num_hidden_layers"], s["num_attention_heads"], s["num_key_value_heads"], s["rope_theta"]) == (30, 9, 3, 1e5)
    assert s["pad_token_id"] == s["eos_token_id"] == 2
    g = loaded("gemma-3-270m")
    c = g.config
    assert (c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]) == (18, 4, 1, 256)
    assert [i for i, t in enumerate(c["layer_types"]) if t == "full_attention"] == [5, 11, 17]
    assert (c["sliding_window"], c["rope_local_base_freq"], c["rope_theta"], c["query_pre_attn_scalar"]) == \
        (512, 10000.0, 1e6, 256)
    # the three values the file lacks are reported as documented defaults
    assert {"layer_types", "rope_local_base_freq", "query_pre_attn_scalar"} <= set(g.defaults)
    assert g.qtypes["model.embed_tokens.weight"] == "Q8_0"
    assert {"Q4_K", "Q5_0", "Q6_K", "Q8_0", "F32"} == set(g.qtypes.values())


def test_gemma_norms_are_hf_w_not_one_plus_w(loaded):
    """The file stores 1 + w; the state dict holds w (stored − 1 exactly)."""
    from attnscope.models.gguf_file import GGUFFile

    g = loaded("gemma-3-270m")
    with GGUFFile(g.path) as f:
        stored = f.dequantize(f.tensors["blk.0.attn_q_norm.weight"])
        out_norm = f.dequantize(f.tensors["output_norm.weight"])
    assert torch.equal(g.state_dict["model.layers.0.self_attn.q_norm.weight"], stored - 1)
    assert torch.equal(g.state_dict["model.norm.weight"], out_norm - 1)


def test_float64_is_float32_widened(loaded):
    ck32 = loaded("smollm2-135m")
    ck64 = load_gguf(package_model_path("smollm2-135m"), dtype=torch.float64, tokenizer=False, progress=False)
    assert set(ck64.state_dict) == set(ck32.state_dict)
    for k, v in ck64.state_dict.items():
        assert v.dtype == torch.float64 and torch.equal(v, ck32.state_dict[k].double()), k
