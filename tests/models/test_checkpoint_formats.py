"""The same weights load from every layout real checkpoints use: safetensors or pytorch_model.bin,
keys with a task-head prefix or without, TF-era LayerNorm gamma/beta, sharded safetensors."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import attnscope

TEXT = "The cat sat on the mat."


def _same_output(a, b):
    return torch.equal(a.run(TEXT), b.run(TEXT))


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("name,prefix", [("bert", "bert."), ("roberta", ""), ("gpt2", "")])
def test_pytorch_model_bin_with_or_without_prefix(name, prefix, tiny_dirs, tiny_models, tmp_path):
    folder = _copy(tiny_dirs[name], tmp_path / name)
    sd = load_file(str(folder / "model.safetensors"))
    # roberta/gpt2 were saved with their prefix (roberta., transformer.); strip it; bert gets one
    strip = {"roberta": "roberta.", "gpt2": "transformer."}.get(name)
    sd = {(prefix + (k[len(strip):] if strip and k.startswith(strip) else k)): v for k, v in sd.items()}
    (folder / "model.safetensors").unlink()
    torch.save(sd, folder / "pytorch_model.bin")
    assert _same_output(attnscope.load(folder), tiny_models[name])


def test_layernorm_gamma_beta_names(tiny_dirs, tiny_models, tmp_path):
    folder = _copy(tiny_dirs["bert"], tmp_path / "old")
    sd = load_file(str(folder / "model.safetensors"))
    sd = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
          for k, v in sd.items()}
    save_file(sd, str(folder / "model.safetensors"))
    assert _same_output(attnscope.load(folder), tiny_models["bert"])


def _shard(folder, stem: str, save) -> None:
    """Split the folder's model.safetensors into two shards ``{stem}-0000i-of-00002.{ext}`` written by
    ``save(tensors, path)``, listed in ``{stem}.{ext}.index.json`` as checkpoints ship them."""
    sd = load_file(str(folder / "model.safetensors"))
    keys = sorted(sd)
    name, ext = stem.split(".")
    shards = {f"{name}-00001-of-00002.{ext}": keys[: len(keys) // 2], f"{name}-00002-of-00002.{ext}": keys[len(keys) // 2:]}
    for fname, ks in shards.items():
        save({k: sd[k] for k in ks}, str(folder / fname))
    (folder / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {k: f for f, ks in shards.items() for k in ks}}
    (folder / f"{stem}.index.json").write_text(json.dumps(index))


def test_sharded_safetensors(tiny_dirs, tiny_models, tmp_path):
    folder = _copy(tiny_dirs["gpt2"], tmp_path / "sharded")
    _shard(folder, "model.safetensors", save_file)
    assert _same_output(attnscope.load(folder), tiny_models["gpt2"])


def test_sharded_pytorch_model_bin(tiny_dirs, tiny_models, tmp_path):
    """pytorch_model.bin in shards listed by pytorch_model.bin.index.json (older large checkpoints;
    transformers loads them): it was refused as "has no weights"."""
    folder = _copy(tiny_dirs["gpt2"], tmp_path / "sharded-bin")
    _shard(folder, "pytorch_model.bin", torch.save)
    assert _same_output(attnscope.load(folder), tiny_models["gpt2"])
    (folder / "pytorch_model-00002-of-00002.bin").unlink()
    with pytest.raises(attnscope.ModelLoadError, match=r"pytorch_model-00002-of-00002\.bin not found \(listed in "
                                                       r"pytorch_model\.bin\.index\.json\)"):
        attnscope.load(folder)


def test_unused_weights_are_listed(tiny_models, minilm):
    assert minilm.unused_weights == ["embeddings.position_ids", "pooler.dense.bias", "pooler.dense.weight"]
    assert any(k.startswith("cls.predictions") for k in tiny_models["bert-chinese"].unused_weights)
    assert tiny_models["gpt2"].unused_weights == []  # lm_head is tied to wte, not stored


def test_dtype_and_device_arguments(tiny_dirs):
    m = attnscope.load(tiny_dirs["gpt2"], dtype=torch.float64)
    assert m.dtype == torch.float64 and m.run(TEXT).dtype == torch.float64
    assert not m.training


@pytest.mark.parametrize("layout", ["language_model.model.", "model.language_model."])
def test_multimodal_gemma3_in_either_key_layout(tmp_path, layout):
    """A Gemma3ForConditionalGeneration checkpoint loads its text model whichever layout transformers
    saved: ``language_model.model.*`` (before 4.52, and 5.x again) or ``model.language_model.*``
    (4.52 – 4.57), which was refused as "missing weight 'model.embed_tokens.weight'". Logits are
    transformers' multimodal model's on text alone."""
    import transformers
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig

    from tests.models.decoders.tiny import randomise, write_tokenizer

    transformers.logging.set_verbosity_error()
    text = Gemma3TextConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=5,
                            query_pre_attn_scalar=8, max_position_embeddings=128, bos_token_id=1, eos_token_id=2,
                            pad_token_id=0, layer_types=["sliding_attention", "full_attention"])
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=28, patch_size=14)
    hf = Gemma3ForConditionalGeneration(Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                                                     image_token_index=299, boi_token_index=297, eoi_token_index=298))
    randomise(hf, 5, one_plus_w_norms=True)
    hf.eval()
    folder = tmp_path / layout.strip(".")
    hf.save_pretrained(str(folder))
    write_tokenizer(folder, 300)
    if layout == "model.language_model.":  # the module paths, as 4.52 – 4.57 saved them
        save_file({k: v.contiguous() for k, v in hf.state_dict().items() if k != "lm_head.weight"},
                  str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert any(k.startswith(layout) for k in load_file(str(folder / "model.safetensors")))
    model = attnscope.load(folder)
    ids = model.encode("Every token looks at the tokens before it and decides.").input_ids
    with torch.no_grad():
        got, want = model.lm_logits(model(ids)), hf(input_ids=ids).logits
    assert float((got - want).abs().max()) <= 1e-4
