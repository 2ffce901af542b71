"""The tiny decoder checkpoints are what their names say (checked through transformers), so the
families' parity tests built on them test what they claim."""

from __future__ import annotations

import json

import pytest
import torch

from tests.models.decoders.tiny import BUILDERS, build_all, hf_model, hf_run, max_abs_diff

TEXT = "Every token looks at the tokens before it and decides how much to listen."


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tiny-decoders"))


def _ids(folder):
    from tokenizers import Tokenizer

    return torch.tensor([Tokenizer.from_file(str(folder / "tokenizer.json")).encode(TEXT).ids])


def _beyond(att: torch.Tensor, w: int) -> float:
    L = att.shape[-1]
    i = torch.arange(L)
    return float(att[..., (i[:, None] - i[None, :]) >= w].sum())


@pytest.mark.parametrize("name", list(BUILDERS))
def test_folder_runs_in_float32_and_float64(dirs, name):
    d = dirs[name]
    files = {p.name for p in d.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= files
    ids = _ids(d)
    assert ids[0, 0] == 1 and ids.shape[1] > 12  # <bos> first; longer than every window
    a = hf_run(hf_model(d), ids)
    b = hf_run(hf_model(d, dtype=torch.float64), ids, dtype=torch.float64)
    cfg = json.loads((d / "config.json").read_text())
    assert len(a["attentions"]) == cfg["num_hidden_layers"] and len(a["hidden_states"]) == cfg["num_hidden_layers"] + 1
    assert a["attentions"][0].shape == (1, cfg["num_attention_heads"], ids.shape[1], ids.shape[1])
    assert b["logits"].dtype == torch.float64
    d_ = max_abs_diff(a, b)
    assert 0 < d_["attentions"] < 1e-4 and 0 < d_["hidden_states"] < 1e-4, d_  # float32 really is float32


def test_what_each_checkpoint_exercises(dirs):
    cfg = {n: json.loads((d / "config.json").read_text()) for n, d in dirs.items()}
    assert cfg["llama_gqa"]["num_attention_heads"] == 4 * cfg["llama_gqa"]["num_key_value_heads"]
    assert cfg["llama_mqa"]["num_key_value_heads"] == 1
    assert cfg["llama3_scaled"]["rope_parameters"]["rope_type"] == "llama3"
    assert cfg["gemma3"]["query_pre_attn_scalar"] != cfg["gemma3"]["head_dim"]
    from safetensors import safe_open
    with safe_open(str(dirs["qwen2_full"] / "model.safetensors"), "pt") as f:
        assert "model.layers.0.self_attn.q_proj.bias" in set(f.keys())
    # windows: no weight at distance >= window on windowed layers, weight there on full ones
    runs = {n: hf_run(hf_model(dirs[n]), _ids(dirs[n])) for n in ("mistral_window", "qwen2_window", "qwen2_full", "gemma3")}
    assert all(_beyond(a, 5) == 0 for a in runs["mistral_window"]["attentions"])
    q = runs["qwen2_window"]["attentions"]
    assert _beyond(q[0], 6) > 0 and _beyond(q[1], 6) == 0  # max_window_layers = 1
    assert all(_beyond(a, 6) > 0 for a in runs["qwen2_full"]["attentions"])  # use_sliding_window false
    g = runs["gemma3"]["attentions"]
    assert _beyond(g[0], 6) == 0 and _beyond(g[1], 6) == 0 and _beyond(g[2], 6) > 0
