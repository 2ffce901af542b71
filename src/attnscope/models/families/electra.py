"""ELECTRA (google/electra-small/base/large-discriminator, the generators, hfl/chinese-electra-*):
BERT's encoder and weight names (prefix ``electra.``) with embeddings of their own width.

When ``embedding_size`` ≠ ``hidden_size`` (electra-small: 128 → 256; the generators) the
LayerNorm'ed embeddings go through ``embeddings_project`` (E → d_model, trace name
``embed.projected``) before the first layer. The discriminator's replaced-token head
(``discriminator_predictions.*``) and the generator's MLM head are not used: attnscope shows the
encoder. English and Chinese checkpoints ship a BERT ``vocab.txt``.

Hugging Face names → attnscope names: those of :mod:`attnscope.models.families.bert`, plus::

    embeddings_project                     embed.proj     (only when embedding_size ≠ hidden_size)
"""

from __future__ import annotations

from ...modules.encoder_variants import EncoderConfig
from ..encoder_model import EncoderModel, with_encoder_options
from ..registry import Family, WeightRule, register, setting
from .bert import LAYERNORM_RENAMES, encoder_config, encoder_rules

#: transformers' ElectraConfig defaults (electra-small's sizes, embedding_size 128) where they are not BERT's
ELECTRA_DEFAULTS = {"hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024}


def config_from_hf(hf: dict, source: str) -> EncoderConfig:
    base = encoder_config(hf, source, layer_norm_eps=1e-12, type_vocab_size=2, defaults=ELECTRA_DEFAULTS)
    return with_encoder_options(base, embedding_size=setting(hf, "embedding_size", source, 128))


def rules(config: EncoderConfig) -> list[WeightRule]:
    out = encoder_rules(config)
    if config.factorised:
        out += [WeightRule(f"embed.proj.{p}", (f"embeddings_project.{p}",)) for p in ("weight", "bias")]
    return out


FAMILY = register(Family(
    name="electra", model_types=("electra",), prefixes=("electra.",), config_from_hf=config_from_hf, rules=rules,
    tokenizer_kind="wordpiece", renames=LAYERNORM_RENAMES, model_class=EncoderModel,
))
