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

from ..config import TransformerConfig
from ..errors import ModelLoadError
from .registry import Family, WeightRule, fuse_rows, hf_activation, register, setting


def encoder_config(hf: dict, source: str, *, layer_norm_eps: float, type_vocab_size: int,
                   max_positions_offset: int = 0, **extra) -> TransformerConfig:
    """The fields that BERT and RoBERTa share (HF's BertConfig/RobertaConfig key names)."""
    pe = setting(hf, "position_embedding_type", source, "absolute", str)
    if pe != "absolute":
        raise ModelLoadError(f"{source}: position_embedding_type {pe!r} is not supported; attnscope runs "
                             f"'absolute' (learned) positions")
    if setting(hf, "is_decoder", source, False, bool) or setting(hf, "add_cross_attention", source, False, bool):
        raise ModelLoadError(f"{source}: is_decoder / add_cross_attention are not supported; attnscope runs "
                             f"the encoder (use a GPT-2 checkpoint for a decoder)")
    n_positions = setting(hf, "max_position_embeddings", source, 512)
    return TransformerConfig(
        vocab_size=setting(hf, "vocab_size", source),
        d_model=setting(hf, "hidden_size", source, 768),
        n_heads=setting(hf, "num_attention_heads", source, 12),
        n_layers=setting(hf, "num_hidden_layers", source, 12),
        d_ff=setting(hf, "intermediate_size", source, 3072),
        max_positions=n_positions - max_positions_offset,
        type_vocab_size=setting(hf, "type_vocab_size", source, type_vocab_size),
        position="learned", position_offset=max_positions_offset,
        norm="post", embed_norm=True, final_norm=False,
        activation=hf_activation(setting(hf, "hidden_act", source, "gelu", str), source),
        layer_norm_eps=float(setting(hf, "layer_norm_eps", source, layer_norm_eps, float)),
        dropout=float(setting(hf, "hidden_dropout_prob", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attention_probs_dropout_prob", source, 0.1, float)),
        pad_token_id=setting(hf, "pad_token_id", source, 0),
        extra={"model_type": hf.get("model_type"), "architectures": hf.get("architectures"),
               "name_or_path": hf.get("_name_or_path"), **extra},
    )


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    return encoder_config(hf, source, layer_norm_eps=1e-12, type_vocab_size=2)


def encoder_rules(config: TransformerConfig) -> list[WeightRule]:
    """BERT-layout weight names; RoBERTa uses the same ones."""
    rules = [
        WeightRule("embed.token_embedding.weight", ("embeddings.word_embeddings.weight",)),
        WeightRule("embed.position_embedding.weight", ("embeddings.position_embeddings.weight",)),
        WeightRule("embed.norm.weight", ("embeddings.LayerNorm.weight",)),
        WeightRule("embed.norm.bias", ("embeddings.LayerNorm.bias",)),
    ]
    if config.type_vocab_size > 0:
        rules.append(WeightRule("embed.segment_embedding.weight", ("embeddings.token_type_embeddings.weight",)))
    for i in range(config.n_layers):
        src, dst = f"encoder.layer.{i}.", f"layers.{i}."
        for p in ("weight", "bias"):
            rules += [
                WeightRule(f"{dst}attn.W_qkv.{p}", tuple(f"{src}attention.self.{n}.{p}" for n in ("query", "key", "value")),
                           fuse_rows),
                WeightRule(f"{dst}attn.W_O.{p}", (f"{src}attention.output.dense.{p}",)),
                WeightRule(f"{dst}ln1.{p}", (f"{src}attention.output.LayerNorm.{p}",)),
                WeightRule(f"{dst}ffn.W_1.{p}", (f"{src}intermediate.dense.{p}",)),
                WeightRule(f"{dst}ffn.W_2.{p}", (f"{src}output.dense.{p}",)),
                WeightRule(f"{dst}ln2.{p}", (f"{src}output.LayerNorm.{p}",)),
            ]
    return rules


# Checkpoints written by the original TensorFlow-era code call the LayerNorm parameters gamma/beta.
LAYERNORM_RENAMES = (("LayerNorm.gamma", "LayerNorm.weight"), ("LayerNorm.beta", "LayerNorm.bias"))

FAMILY = register(Family(
    name="bert", model_types=("bert",), prefixes=("bert.",), config_from_hf=config_from_hf,
    rules=encoder_rules, tokenizer_kind="wordpiece", renames=LAYERNORM_RENAMES,
))
