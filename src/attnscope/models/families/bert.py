"""BERT (bert-base-*, bert-base-chinese, MiniLM, all-MiniLM-L6-v2): post-LN encoder.

Hugging Face names → attnscope names (``{i}`` = layer)::

    embeddings.word_embeddings              embed.token_embedding
    embeddings.token_type_embeddings        embed.segment_embedding
    embeddings.position_embeddings          embed.position_embedding
    embeddings.LayerNorm                    embed.norm
    encoder.layer.{i}.attention.self.{query,key,value}   layers.{i}.attn.W_qkv  (rows stacked Q; K; V)
    encoder.layer.{i}.attention.output.dense             layers.{i}.attn.W_O
    encoder.layer.{i}.attention.output.LayerNorm         layers.{i}.ln1
    encoder.layer.{i}.intermediate.dense                 layers.{i}.ffn.W_1
    encoder.layer.{i}.output.dense                       layers.{i}.ffn.W_2
    encoder.layer.{i}.output.LayerNorm                   layers.{i}.ln2

Keys may carry the prefix ``bert.`` (BertForMaskedLM, BertForPreTraining, …). The pooler and the
task heads (``pooler.*``, ``cls.*``) are not used: attnscope shows the encoder.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from ...config import TransformerConfig
from ...errors import ModelLoadError
from ...i18n import error
from ..registry import Family, WeightRule, fuse_rows, hf_activation, hf_extra, register, setting

#: BertConfig's defaults of the sizes and the activation; a relative's config class has its own
#: (ALBERT's xxlarge-like 4096 / 64 heads / gelu_new, ELECTRA's small 256 / 4 heads), given as ``defaults``.
BERT_DEFAULTS = {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu"}


def encoder_config(hf: dict, source: str, *, layer_norm_eps: float, type_vocab_size: int,
                   max_positions_offset: int = 0, defaults: Optional[dict] = None, **extra) -> TransformerConfig:
    """The fields that BERT and RoBERTa share (HF's BertConfig/RobertaConfig key names); a key the
    config leaves out takes transformers' default of the family's config class (``defaults`` over
    :data:`BERT_DEFAULTS`, ``layer_norm_eps``, ``type_vocab_size``)."""
    dflt = {**BERT_DEFAULTS, **(defaults or {})}
    pe = setting(hf, "position_embedding_type", source, "absolute", str)
    if pe != "absolute":
        raise error(ModelLoadError, "errors.config_bert_positions", source=source, kind=repr(pe))
    if setting(hf, "is_decoder", source, False, bool) or setting(hf, "add_cross_attention", source, False, bool):
        raise error(ModelLoadError, "errors.config_bert_decoder", source=source)
    n_positions = setting(hf, "max_position_embeddings", source, 512)
    return TransformerConfig(
        vocab_size=setting(hf, "vocab_size", source),
        d_model=setting(hf, "hidden_size", source, dflt["hidden_size"]),
        n_heads=setting(hf, "num_attention_heads", source, dflt["num_attention_heads"]),
        n_layers=setting(hf, "num_hidden_layers", source, 12),
        d_ff=setting(hf, "intermediate_size", source, dflt["intermediate_size"]),
        max_positions=n_positions - max_positions_offset,
        type_vocab_size=setting(hf, "type_vocab_size", source, type_vocab_size),
        position="learned", position_offset=max_positions_offset,
        norm="post", embed_norm=True, final_norm=False,
        activation=hf_activation(setting(hf, "hidden_act", source, dflt["hidden_act"], str), source),
        layer_norm_eps=float(setting(hf, "layer_norm_eps", source, layer_norm_eps, float)),
        dropout=float(setting(hf, "hidden_dropout_prob", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attention_probs_dropout_prob", source, 0.1, float)),
        pad_token_id=setting(hf, "pad_token_id", source, 0),
        extra=hf_extra(hf, **extra),
    )


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    return encoder_config(hf, source, layer_norm_eps=1e-12, type_vocab_size=2)


#: A family's table of a layer's weights: attnscope's module → the checkpoint's (three for W_qkv).
LayerNames = dict[str, Union[str, tuple[str, ...]]]


def embedding_rules(config: TransformerConfig) -> list[WeightRule]:
    """BERT's embeddings, named alike by its relatives (DistilBERT, ALBERT, ELECTRA, RoBERTa,
    XLM-R, DeBERTa): the token table, the position table (with learned positions), the LayerNorm
    and the segment table (with segment types)."""
    out = [WeightRule("embed.token_embedding.weight", ("embeddings.word_embeddings.weight",))]
    if config.position == "learned":
        out.append(WeightRule("embed.position_embedding.weight", ("embeddings.position_embeddings.weight",)))
    out += [WeightRule(f"embed.norm.{p}", (f"embeddings.LayerNorm.{p}",)) for p in ("weight", "bias")]
    if config.type_vocab_size > 0:
        out.append(WeightRule("embed.segment_embedding.weight", ("embeddings.token_type_embeddings.weight",)))
    return out


def layer_rules(names: LayerNames, src: str, dst: str) -> list[WeightRule]:
    """The weight and bias rules of one layer from a family's table ``names``: attnscope's module
    (under ``dst``) → the checkpoint's (under ``src``); a tuple of three is W_qkv's Q, K, V, whose
    rows are stacked."""
    out = []
    for p in ("weight", "bias"):
        for ours, theirs in names.items():
            if isinstance(theirs, tuple):
                out.append(WeightRule(f"{dst}{ours}.{p}", tuple(f"{src}{t}.{p}" for t in theirs), fuse_rows))
            else:
                out.append(WeightRule(f"{dst}{ours}.{p}", (f"{src}{theirs}.{p}",)))
    return out


#: A BERT layer's names under ``encoder.layer.{i}.`` (RoBERTa, XLM-R and ELECTRA use them too).
LAYER_NAMES: LayerNames = {
    "attn.W_qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "attn.W_O": "attention.output.dense",
    "ln1": "attention.output.LayerNorm",
    "ffn.W_1": "intermediate.dense",
    "ffn.W_2": "output.dense",
    "ln2": "output.LayerNorm",
}


def encoder_rules(config: TransformerConfig, names: Optional[LayerNames] = None,
                  layer: Callable[[int], str] = "encoder.layer.{}.".format) -> list[WeightRule]:
    """Every rule of a BERT-layout encoder: :func:`embedding_rules`, then :func:`layer_rules` of
    ``names`` (BERT's :data:`LAYER_NAMES` when None) with the checkpoint's prefix ``layer(i)`` of
    layer i. RoBERTa, XLM-R and ELECTRA use it as it is, DistilBERT, ALBERT and DeBERTa with their
    own names."""
    rules = embedding_rules(config)
    for i in range(config.n_layers):
        rules += layer_rules(LAYER_NAMES if names is None else names, layer(i), f"layers.{i}.")
    return rules


# Checkpoints written by the original TensorFlow-era code call the LayerNorm parameters gamma/beta.
LAYERNORM_RENAMES = (("LayerNorm.gamma", "LayerNorm.weight"), ("LayerNorm.beta", "LayerNorm.bias"))

FAMILY = register(Family(
    name="bert", model_types=("bert",), prefixes=("bert.",), config_from_hf=config_from_hf,
    rules=encoder_rules, tokenizer_kind="wordpiece", renames=LAYERNORM_RENAMES,
))
