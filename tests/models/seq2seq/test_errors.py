"""Bad input to the encoder–decoder models: one clear error each."""

import json
import re
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import attnscope
from attnscope import InputError, ModelLoadError


def _copy(dirs, name, tmp_path):
    folder = tmp_path / name
    shutil.copytree(dirs[name], folder)
    return folder


def test_a_target_without_a_source(seq2seq):
    with pytest.raises(InputError, match=r"a target needs its source"):
        seq2seq["t5"].trace(None, "Die Katze")


def test_a_source_without_a_target_in_trace(seq2seq):
    with pytest.raises(InputError, match=r"needs a target text for the decoder"):
        seq2seq["bart"].trace("The cat")


def test_sources_and_targets_must_pair(seq2seq):
    with pytest.raises(InputError, match=r"2 source text\(s\) but 1 target\(s\)"):
        seq2seq["bart"].trace(["a", "b"], ["c"])


@pytest.mark.parametrize("target", [5, 2.5, b"Die Katze", {"a": 1}])
def test_a_target_of_another_type(seq2seq, target):
    """A target that is neither a string nor a list of strings is named, not a TypeError from list()."""
    for call in (seq2seq["t5"].trace, seq2seq["bart"].logits, seq2seq["bart"].loss):
        with pytest.raises(InputError, match=r"the target must be a string or a list of strings .*, got "
                           + type(target).__name__):
            call("The cat", target)


def test_a_source_past_the_positions(seq2seq):
    with pytest.raises(InputError, match=r"longer than the model's limit of 64 positions"):
        seq2seq["bart"].generate("the cat " * 60)
    with pytest.raises(InputError, match=r"longer than the model's limit of 512 positions"):
        seq2seq["t5"].trace("the cat " * 400, "x")


def test_truncate_reaches_the_target(seq2seq):
    """The sentence about a target past the decoder's positions says truncate=True keeps its first
    tokens: it does, for trace, logits and loss (it raised the same sentence again)."""
    model = seq2seq["bart"]  # 64 positions: the start token and 63 labels
    long = " ".join(["word"] * 70)
    full = model.tokenizer.backend.encode(long).ids  # <s> … </s>
    assert len(full) > 63
    with pytest.raises(InputError, match=r"longer than max_length = 63 positions"):
        model.trace("the cat", long)
    tr = model.trace("the cat", long, truncate=True, names=[])
    want = [model.config.decoder_start_token_id] + full[:62] + [full[-1]]  # the first labels, then </s>
    assert tr.decoder_input_ids[0].tolist() == want
    assert model.logits("the cat", long, truncate=True).shape[1] == 64
    assert torch.isfinite(model.loss("the cat", long, truncate=True))


def test_too_many_new_tokens_for_learned_positions(seq2seq):
    with pytest.raises(attnscope.ConfigError, match=r"max_new_tokens = 64 passes the decoder's 64 positions"):
        seq2seq["bart"].generate("the cat", max_new_tokens=64)


def test_forward_needs_the_decoder_input(seq2seq):
    model = seq2seq["t5"]
    with pytest.raises(InputError, match=r"needs the decoder's input too"):
        model(model.encode("a b").input_ids)


@pytest.mark.parametrize("name,key", [
    ("t5", "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
    ("t5_v11", "lm_head.weight"),
    ("t5", "decoder.block.2.layer.1.EncDecAttention.k.weight"),
    ("bart", "final_logits_bias"),
    ("bart", "model.decoder.layers.1.encoder_attn.v_proj.bias"),
])
def test_a_missing_weight_is_named(name, key, seq2seq_dirs, tmp_path):
    folder = _copy(seq2seq_dirs, name, tmp_path)
    sd = load_file(str(folder / "model.safetensors"))
    del sd[key]
    save_file(sd, str(folder / "model.safetensors"))
    short = key[len("model."):] if key.startswith("model.") else key
    with pytest.raises(ModelLoadError, match=re.escape(f"missing weight {short!r}")):
        attnscope.load(folder)


def test_an_encoder_only_t5_checkpoint(seq2seq_dirs, tmp_path):
    folder = _copy(seq2seq_dirs, "t5", tmp_path)
    sd = {k: v for k, v in load_file(str(folder / "model.safetensors")).items() if not k.startswith("decoder.")}
    save_file(sd, str(folder / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"missing weight 'decoder\.block\.0"):
        attnscope.load(folder)


@pytest.mark.parametrize("change,message", [
    ({"feed_forward_proj": "gated-tanh"}, r"feed_forward_proj 'gated-tanh' is not supported"),
])
def test_unsupported_t5_settings(change, message, seq2seq_dirs, tmp_path):
    folder = _copy(seq2seq_dirs, "t5", tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, **change}))
    with pytest.raises(ModelLoadError, match=message):
        attnscope.load(folder)


def test_mbart_style_bart_is_refused(seq2seq_dirs, tmp_path):
    folder = _copy(seq2seq_dirs, "bart", tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "normalize_before": True}))
    with pytest.raises(ModelLoadError, match=r"normalize_before / add_final_layer_norm"):
        attnscope.load(folder)


def test_save_and_load_a_seq2seq_trace(seq2seq, tmp_path):
    from attnscope.trace.seq2seq import Seq2SeqTrace

    tr = seq2seq["bart_zh"].trace(["我喜欢人工智能", "你好"], ["你好世界。", "我"], names="decoder.layers.*.cross_attn.*")
    back = Seq2SeqTrace.load(tr.save(tmp_path / "t"))
    assert back.target_tokens == tr.target_tokens and back.config.n_decoder_layers == 2
    assert (back.weights(1, attention="cross", text=1) - tr.weights(1, attention="cross", text=1)).abs().max() == 0


def test_a_trace_shows_a_summary_in_jupyter(seq2seq):
    tr = seq2seq["t5"].trace("the cat", "die Katze", names=["decoder.layers.0.cross_attn.weights"])
    html = tr._repr_html_()
    assert "source length" in html and "attention='encoder'|'self'|'cross'" in html


@pytest.mark.parametrize("buckets,distance", [(8, 1), (8, 4), (2, 20), (32, 16)])
def test_t5_buckets_without_a_log_range(buckets, distance, seq2seq_dirs, tmp_path):
    """A max_distance at or below the decoder's exact buckets (half of them) makes ln(D/e) ≤ 0, and
    fewer than 4 buckets leave the encoder none: the buckets come out negative or past the table
    (an IndexError from the embedding before); one sentence at load instead."""
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-40, 41)
    try:  # transformers' own buckets: out of the table, or a ZeroDivisionError (no exact bucket at all)
        out = [T5Attention._relative_position_bucket(rel, bidirectional=bi, num_buckets=buckets, max_distance=distance)
               for bi in (False, True)]
        assert any(bool((b < 0).any() or (b >= buckets).any()) for b in out)
    except ZeroDivisionError:
        pass
    folder = _copy(seq2seq_dirs, "t5", tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(relative_attention_num_buckets=buckets, relative_attention_max_distance=distance)
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError,
                       match=rf"config.json.*relative_buckets must be an integer ≥ 4 .* got {buckets} and {distance}"):
        attnscope.load(folder)
