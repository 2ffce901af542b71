"""Bad checkpoints of the encoder families: one ModelLoadError each, naming the file and the key."""

import json
import re
import shutil

import pytest
from safetensors.torch import load_file, save_file

import attnscope
from attnscope import ModelLoadError


def _copy(encoder_dirs, name, tmp_path):
    folder = tmp_path / name
    shutil.copytree(encoder_dirs[name], folder)
    return folder


def _edit_config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def _drop_weight(folder, key):
    sd = load_file(str(folder / "model.safetensors"))
    del sd[key]
    save_file(sd, str(folder / "model.safetensors"))


@pytest.mark.parametrize("name,key", [
    ("albert", "albert.encoder.embedding_hidden_mapping_in.weight"),
    ("electra", "electra.embeddings_project.bias"),
    ("distilbert", "distilbert.transformer.layer.1.sa_layer_norm.weight"),
    ("deberta_v3", "encoder.rel_embeddings.weight"),
    ("deberta_v2", "deberta.encoder.layer.0.attention.self.pos_key_proj.weight"),
    ("xlm_roberta", "roberta.encoder.layer.1.attention.self.value.bias"),
])
def test_a_missing_weight_is_named(name, key, encoder_dirs, tmp_path):
    folder = _copy(encoder_dirs, name, tmp_path)
    _drop_weight(folder, key)
    short = key.split(".", 1)[1] if key.startswith(("albert.", "electra.", "distilbert.", "deberta.", "roberta.")) else key
    with pytest.raises(ModelLoadError, match=re.escape(f"model.safetensors: missing weight {short!r}")):
        attnscope.load(folder)


def test_albert_inner_groups_are_refused(encoder_dirs, tmp_path):
    folder = _copy(encoder_dirs, "albert", tmp_path)
    _edit_config(folder, inner_group_num=2)
    with pytest.raises(ModelLoadError, match=r"config\.json: inner_group_num = 2 is not supported"):
        attnscope.load(folder)


def test_deberta_convolution_is_refused(encoder_dirs, tmp_path):
    folder = _copy(encoder_dirs, "deberta_v3", tmp_path)
    _edit_config(folder, conv_kernel_size=3)
    with pytest.raises(ModelLoadError, match=r"conv_kernel_size = 3 is not supported"):
        attnscope.load(folder)


def test_deberta_unknown_relative_term(encoder_dirs, tmp_path):
    folder = _copy(encoder_dirs, "deberta_v3", tmp_path)
    _edit_config(folder, pos_att_type="p2c|p2p")
    with pytest.raises(ModelLoadError, match=r"pos_att_type must list 'c2p' and/or 'p2c', got 'p2c\|p2p'"):
        attnscope.load(folder)


def test_a_sentencepiece_model_without_tokenizer_json(encoder_dirs, tmp_path):
    folder = _copy(encoder_dirs, "xlm_roberta", tmp_path)
    (folder / "tokenizer.json").unlink()
    (folder / "sentencepiece.bpe.model").write_bytes(b"\x00")
    with pytest.raises(ModelLoadError, match=r"has the SentencePiece model sentencepiece\.bpe\.model but no "
                                             r"tokenizer\.json.*AutoTokenizer"):
        attnscope.load(folder)
    assert attnscope.load(folder, tokenizer=False).tokenizer is None  # the weights alone still load


def test_a_text_past_the_positions(encoders):
    model = encoders["deberta_v2"]
    with pytest.raises(attnscope.InputError, match=r"longer than the model's limit of 64 positions"):
        model.trace("我" * 80)


def test_save_and_load_a_deberta_trace(encoders, tmp_path):
    model = encoders["deberta_v3"]
    tr = model.trace(["the quick brown fox", "a b"], names=["layers.0.attn.q", "layers.0.attn.k", "layers.0.attn.bias",
                                                            "layers.0.attn.weights"])
    back = type(tr).load(tr.save(tmp_path / "t"))
    assert type(back.config) is type(model.config) and back.config.pos_att_type == model.config.pos_att_type
    n = tr.lengths[1]
    assert n < tr.input_ids.shape[1]  # padded
    assert (back.weights(0, text=1) - tr["layers.0.attn.weights"][1, :, :n, :n]).abs().max() <= 1e-6
    lean = type(tr)({k: v for k, v in back.items() if not k.endswith("weights")}, tokens=back.tokens,
                    input_ids=back.input_ids, attention_mask=back.attention_mask, model_name=back.model_name,
                    family=back.family, config=back.config)
    assert (lean.weights(0, text=1) - back.weights(0, text=1)).abs().max() <= 1e-6  # from q, k and the bias
