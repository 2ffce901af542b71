"""BART (facebook/bart-base/-large, bart-large-cnn/-xsum, distilbart, fnlp/bart-base-chinese): a
post-LN encoder–decoder with learned positions.

* **Positions**: a learned table of ``max_position_embeddings + 2`` rows per stack, read at
  ``position + 2`` (fairseq's padding-aware numbering left two rows unused; transformers keeps the
  offset). Unlike RoBERTa the numbering ignores padding.
* **Embeddings**: token rows (× √d_model with ``scale_embedding``) + positions, then
  ``layernorm_embedding``.
* **Layers**: post-LN as in BERT; the decoder's have causal self-attention, cross-attention over
  the encoder output, and the FFN, each followed by its LayerNorm. Biases everywhere, 1/√d_head scaling.
* **Logits**: the shared embedding (tied) plus ``final_logits_bias`` (``…ForConditionalGeneration``).

Hugging Face names → attnscope names (``{i}`` = layer; keys may carry the prefix ``model.``)::

    shared                                          shared (= encoder/decoder .embed.token_embedding)
    {encoder,decoder}.embed_positions               {stack}.embed.position_embedding   (max + 2 rows)
    {encoder,decoder}.layernorm_embedding           {stack}.embed.norm
    encoder.layers.{i}.self_attn.{q,k,v}_proj / out_proj   encoder.layers.{i}.attn.W_qkv / W_O
    encoder.layers.{i}.self_attn_layer_norm         encoder.layers.{i}.ln1
    encoder.layers.{i}.fc1 / fc2 / final_layer_norm encoder.layers.{i}.ffn.W_1 / ffn.W_2 / ln2
    decoder.layers.{i}.self_attn / self_attn_layer_norm        decoder.layers.{i}.self_attn / ln1
    decoder.layers.{i}.encoder_attn / encoder_attn_layer_norm  decoder.layers.{i}.cross_attn / ln2
    decoder.layers.{i}.fc1 / fc2 / final_layer_norm decoder.layers.{i}.ffn.W_1 / ffn.W_2 / ln3
    final_logits_bias                               final_logits_bias
    lm_head                                         lm_head_weight   (only when not the shared embedding)

The English checkpoints ship a byte-level BPE (``vocab.json`` + ``merges.txt`` or
``tokenizer.json``: ``<s> … </s>``), the Chinese ones a BERT ``vocab.txt``. mBART (pre-LN, final
norms) is a different model_type and is not loaded. Generation settings (BART's
``forced_bos_token_id``/``forced_eos_token_id``, …): :mod:`attnscope.models.seq2seq_generation`.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...errors import ModelLoadError
from ...i18n import error
from ...modules.seq2seq import Seq2SeqConfig
from ..registry import Family, WeightRule, hf_activation, make_config, register, setting, setting_of, tokenizer_by_files
from ..seq2seq_generation import generation_settings
from ..seq2seq_model import Seq2SeqModel
from .bert import layer_rules


def config_from_hf(hf: dict, source: str) -> Seq2SeqConfig:
    heads = setting_of(hf, ("encoder_attention_heads", "num_attention_heads"), source, 16)
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if (heads if a == "encoder_attention_heads" else setting(hf, a, source, 16)) != setting(hf, b, source, 16):
            raise error(ModelLoadError, "errors.config_bart_sizes", source=source, a=a, a_value=hf.get(a), b=b,
                        b_value=hf.get(b))
    if setting(hf, "add_final_layer_norm", source, False, bool) or setting(hf, "normalize_before", source, False, bool):
        raise error(ModelLoadError, "errors.config_bart_pre_ln", source=source)
    d = setting_of(hf, ("d_model", "hidden_size"), source, 1024)
    n_pos = setting(hf, "max_position_embeddings", source, 1024)
    archs = hf.get("architectures") or []
    gen = generation_settings(hf, Path(source).parent, source)
    return make_config(
        Seq2SeqConfig, source,
        vocab_size=setting(hf, "vocab_size", source), d_model=d,
        n_heads=heads,
        n_layers=setting_of(hf, ("encoder_layers", "num_hidden_layers"), source, 12),
        n_decoder_layers=setting(hf, "decoder_layers", source, 12),
        d_ff=setting(hf, "encoder_ffn_dim", source, 4096), max_positions=n_pos, position_offset=2,
        type_vocab_size=0, position="learned", norm="post", norm_kind="layer", embed_norm=True,
        final_norm=False, activation=hf_activation(setting(hf, "activation_function", source, "gelu", str), source),
        bias=True, scoring="scaled", layer_norm_eps=1e-5,
        dropout=float(setting(hf, "dropout", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attention_dropout", source, 0.0, float)),
        embed_scale=math.sqrt(d) if setting(hf, "scale_embedding", source, False, bool) else 1.0,
        tie_embeddings=setting(hf, "tie_word_embeddings", source, True, bool),
        final_logits_bias=any(isinstance(a, str) and a.endswith("ForConditionalGeneration") for a in archs),
        pad_token_id=setting(hf, "pad_token_id", source, 1), **gen,
        extra={"model_type": hf.get("model_type"), "architectures": archs, "name_or_path": hf.get("_name_or_path")},
    )


def _attention(src: str, dst: str) -> list[WeightRule]:
    return layer_rules({"W_qkv": ("q_proj", "k_proj", "v_proj"), "W_O": "out_proj"}, src + ".", dst + ".")


def _pair(src: str, dst: str) -> list[WeightRule]:
    return layer_rules({dst: src}, "", "")  # weight, then bias


def rules(config: Seq2SeqConfig) -> list[WeightRule]:
    out = [WeightRule(t, ("shared.weight",)) for t in
           ("shared.weight", "encoder.embed.token_embedding.weight", "decoder.embed.token_embedding.weight")]
    for stack in ("encoder", "decoder"):
        out += [WeightRule(f"{stack}.embed.position_embedding.weight", (f"{stack}.embed_positions.weight",))]
        out += _pair(f"{stack}.layernorm_embedding", f"{stack}.embed.norm")
    for i in range(config.n_layers):
        src, dst = f"encoder.layers.{i}.", f"encoder.layers.{i}."
        out += _attention(src + "self_attn", dst + "attn") + _pair(src + "self_attn_layer_norm", dst + "ln1")
        out += _pair(src + "fc1", dst + "ffn.W_1") + _pair(src + "fc2", dst + "ffn.W_2")
        out += _pair(src + "final_layer_norm", dst + "ln2")
    for i in range(config.n_decoder_layers):
        src, dst = f"decoder.layers.{i}.", f"decoder.layers.{i}."
        out += _attention(src + "self_attn", dst + "self_attn") + _pair(src + "self_attn_layer_norm", dst + "ln1")
        out += _attention(src + "encoder_attn", dst + "cross_attn") + _pair(src + "encoder_attn_layer_norm", dst + "ln2")
        out += _pair(src + "fc1", dst + "ffn.W_1") + _pair(src + "fc2", dst + "ffn.W_2")
        out += _pair(src + "final_layer_norm", dst + "ln3")
    if config.final_logits_bias:
        out.append(WeightRule("final_logits_bias", ("final_logits_bias",)))
    if not config.tie_embeddings:
        out.append(WeightRule("lm_head_weight", ("lm_head.weight",)))
    return out


FAMILY = register(Family(
    name="bart", model_types=("bart",), prefixes=("model.",), config_from_hf=config_from_hf, rules=rules,
    tokenizer_kind=tokenizer_by_files("bpe-roberta"), model_class=Seq2SeqModel, lm_head=True,
))
