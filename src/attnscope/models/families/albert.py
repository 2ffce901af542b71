"""ALBERT (albert-base-v2 … albert-xxlarge-v2, albert_chinese_*): BERT with factorised embeddings
and one set of layer weights shared by every layer.

* The embeddings have width ``embedding_size`` E (128 in every released size), LayerNorm'ed in E,
  then ``encoder.embedding_hidden_mapping_in`` maps them to ``hidden_size`` (trace name
  ``embed.projected``).
* ``num_hidden_groups`` groups of weights (1 in every released checkpoint) serve the
  ``num_hidden_layers`` layers: layer i uses group ``⌊i·groups / n_layers⌋``. attnscope keeps one
  module per layer whose parameters are the group's, so the trace still names each layer
  (``layers.{i}.attn.weights`` is layer i's attention over its own input).
* ``inner_group_num`` > 1 (several different layers inside a group, run one after the other as
  one "layer") is not supported: no released checkpoint uses it.

Hugging Face names → attnscope names (``{i}`` = layer, ``{g}`` = its group)::

    embeddings.word_embeddings / token_type_embeddings / position_embeddings / LayerNorm
                                                      embed.token_embedding / segment_embedding /
                                                      position_embedding / norm          (width E)
    encoder.embedding_hidden_mapping_in               embed.proj                         (E → d_model)
    encoder.albert_layer_groups.{g}.albert_layers.0.
        attention.{query,key,value}                   layers.{i}.attn.W_qkv   (rows stacked Q; K; V)
        attention.dense                               layers.{i}.attn.W_O
        attention.LayerNorm                           layers.{i}.ln1
        ffn                                           layers.{i}.ffn.W_1
        ffn_output                                    layers.{i}.ffn.W_2
        full_layer_layer_norm                         layers.{i}.ln2

Keys may carry the prefix ``albert.`` (AlbertForMaskedLM, AlbertForPreTraining); the pooler and
the heads are not used. English checkpoints ship a SentencePiece ``tokenizer.json``, the Chinese
ones a BERT ``vocab.txt``; both load.
"""

from __future__ import annotations

from ...errors import ModelLoadError
from ...i18n import error
from ...modules.encoder_variants import EncoderConfig
from ..encoder_model import EncoderModel, with_encoder_options
from ..registry import Family, WeightRule, register, setting, tokenizer_by_files
from .bert import LAYERNORM_RENAMES, LayerNames, encoder_config, encoder_rules

#: transformers' AlbertConfig defaults (albert-xxlarge's sizes) where they are not BERT's
ALBERT_DEFAULTS = {"hidden_size": 4096, "num_attention_heads": 64, "intermediate_size": 16384, "hidden_act": "gelu_new"}


def config_from_hf(hf: dict, source: str) -> EncoderConfig:
    inner = setting(hf, "inner_group_num", source, 1)
    if inner != 1:
        raise error(ModelLoadError, "errors.config_albert_inner_group", source=source, inner=inner)
    base = encoder_config(hf, source, layer_norm_eps=1e-12, type_vocab_size=2, defaults=ALBERT_DEFAULTS)
    n_layers = base.n_layers
    groups = setting(hf, "num_hidden_groups", source, 1)
    if not 1 <= groups <= n_layers:
        raise error(ModelLoadError, "errors.config_albert_groups", source=source, n_layers=n_layers, got=groups)
    return with_encoder_options(base, embedding_size=setting(hf, "embedding_size", source, 128), layer_groups=groups)


#: An ALBERT layer's names under ``encoder.albert_layer_groups.{g}.albert_layers.0.``
LAYER_NAMES: LayerNames = {
    "attn.W_qkv": ("attention.query", "attention.key", "attention.value"),
    "attn.W_O": "attention.dense",
    "ln1": "attention.LayerNorm",
    "ffn.W_1": "ffn",
    "ffn.W_2": "ffn_output",
    "ln2": "full_layer_layer_norm",
}


def rules(config: EncoderConfig) -> list[WeightRule]:
    out = encoder_rules(config, LAYER_NAMES, lambda i: f"encoder.albert_layer_groups.{config.group_of(i)}.albert_layers.0.")
    if config.factorised:
        out += [WeightRule(f"embed.proj.{p}", (f"encoder.embedding_hidden_mapping_in.{p}",)) for p in ("weight", "bias")]
    return out


FAMILY = register(Family(
    name="albert", model_types=("albert",), prefixes=("albert.",), config_from_hf=config_from_hf, rules=rules,
    tokenizer_kind=tokenizer_by_files("bpe-roberta"), renames=LAYERNORM_RENAMES, model_class=EncoderModel,
))
