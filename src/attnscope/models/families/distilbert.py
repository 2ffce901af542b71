"""DistilBERT (distilbert-base-uncased, distilbert-base-multilingual-cased): BERT with half the
layers, no segment embeddings and its own weight names; otherwise BERT's post-LN encoder with
learned positions (a checkpoint trained with ``sinusoidal_pos_embds`` stores its fixed table in
the same weight, so it loads the same way).

Hugging Face names → attnscope names (``{i}`` = layer)::

    embeddings.word_embeddings                    embed.token_embedding
    embeddings.position_embeddings                embed.position_embedding
    embeddings.LayerNorm                          embed.norm               (ε = 1e-12, fixed)
    transformer.layer.{i}.attention.{q,k,v}_lin   layers.{i}.attn.W_qkv    (rows stacked Q; K; V)
    transformer.layer.{i}.attention.out_lin       layers.{i}.attn.W_O
    transformer.layer.{i}.sa_layer_norm           layers.{i}.ln1
    transformer.layer.{i}.ffn.lin1                layers.{i}.ffn.W_1
    transformer.layer.{i}.ffn.lin2                layers.{i}.ffn.W_2
    transformer.layer.{i}.output_layer_norm       layers.{i}.ln2

Keys may carry the prefix ``distilbert.`` (DistilBertForMaskedLM, …); task heads are not used.
"""

from __future__ import annotations

from ...config import TransformerConfig
from ..registry import Family, WeightRule, hf_activation, hf_extra, register, setting, setting_of
from .bert import LayerNames, encoder_rules


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    return TransformerConfig(
        vocab_size=setting(hf, "vocab_size", source),
        d_model=setting_of(hf, ("dim", "hidden_size"), source, 768),
        n_heads=setting_of(hf, ("n_heads", "num_attention_heads"), source, 12),
        n_layers=setting_of(hf, ("n_layers", "num_hidden_layers"), source, 6),
        d_ff=setting(hf, "hidden_dim", source, 3072),
        max_positions=setting(hf, "max_position_embeddings", source, 512),
        type_vocab_size=0, position="learned", norm="post", embed_norm=True, final_norm=False,
        activation=hf_activation(setting(hf, "activation", source, "gelu", str), source),
        layer_norm_eps=1e-12,  # DistilBERT's LayerNorms do not read the config
        dropout=float(setting(hf, "dropout", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attention_dropout", source, 0.1, float)),
        pad_token_id=setting(hf, "pad_token_id", source, 0),
        extra=hf_extra(hf, sinusoidal_pos_embds=bool(hf.get("sinusoidal_pos_embds", False))),
    )


#: A DistilBERT layer's names under ``transformer.layer.{i}.``
LAYER_NAMES: LayerNames = {
    "attn.W_qkv": ("attention.q_lin", "attention.k_lin", "attention.v_lin"),
    "attn.W_O": "attention.out_lin",
    "ln1": "sa_layer_norm",
    "ffn.W_1": "ffn.lin1",
    "ffn.W_2": "ffn.lin2",
    "ln2": "output_layer_norm",
}


def rules(config: TransformerConfig) -> list[WeightRule]:
    # BERT's embedding names (no segment table: type_vocab_size 0), DistilBERT's layers
    return encoder_rules(config, LAYER_NAMES, "transformer.layer.{}.".format)


FAMILY = register(Family(
    name="distilbert", model_types=("distilbert",), prefixes=("distilbert.",), config_from_hf=config_from_hf,
    rules=rules, tokenizer_kind="wordpiece",
))
