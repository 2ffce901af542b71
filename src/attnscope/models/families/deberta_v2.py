"""DeBERTa-v2 and -v3 (microsoft/deberta-v3-xsmall … -large, mdeberta-v3-base, deberta-v2-xlarge's
relatives without convolution, IDEA-CCNL's Chinese Erlangshen-DeBERTa-v2): disentangled attention
(:mod:`attnscope.modules.deberta`), model_type ``deberta-v2``.

Settings read from ``config.json`` (transformers' defaults when absent): ``relative_attention``
(False), ``max_relative_positions`` (−1 → ``max_position_embeddings``), ``position_buckets``
(−1: none), ``pos_att_type`` (a list or "p2c|c2p"), ``share_att_key`` (False), ``norm_rel_ebd``
("layer_norm" or "none"), ``position_biased_input`` (True), ``embedding_size`` (hidden_size),
``type_vocab_size`` (0), ``layer_norm_eps`` (1e-7). ``conv_kernel_size`` > 0 (the convolution
beside the first layer of deberta-v2-xlarge/-xxlarge) is refused, as is ``z_steps``.

Hugging Face names → attnscope names (``{i}`` = layer)::

    embeddings.word_embeddings / position_embeddings / token_type_embeddings
                                                   embed.token_embedding / position_embedding / segment_embedding
    embeddings.embed_proj                          embed.proj             (E → d, no bias; when E ≠ d)
    embeddings.LayerNorm                           embed.norm
    encoder.rel_embeddings                         rel_embeddings         (2k, d), shared by the layers
    encoder.LayerNorm                              rel_norm               (with norm_rel_ebd "layer_norm")
    encoder.layer.{i}.attention.self.{query,key,value}_proj   layers.{i}.attn.W_qkv  (rows Q; K; V)
    encoder.layer.{i}.attention.self.pos_key_proj             layers.{i}.attn.pos_key_proj    (not shared)
    encoder.layer.{i}.attention.self.pos_query_proj           layers.{i}.attn.pos_query_proj  (not shared)
    encoder.layer.{i}.attention.output.dense / LayerNorm      layers.{i}.attn.W_O / ln1
    encoder.layer.{i}.intermediate.dense                      layers.{i}.ffn.W_1
    encoder.layer.{i}.output.dense / LayerNorm                layers.{i}.ffn.W_2 / ln2

Keys may carry the prefix ``deberta.`` (DebertaV2ForMaskedLM, …); heads are not used. English
checkpoints ship a SentencePiece vocabulary (read from ``tokenizer.json``), the Chinese ones a
BERT ``vocab.txt``.
"""

from __future__ import annotations

from ...errors import ModelLoadError
from ...i18n import error
from ...modules.deberta import POS_ATT_TYPES, DebertaConfig
from ..deberta_model import DebertaModel
from ..registry import Family, WeightRule, hf_activation, hf_extra, register, setting, tokenizer_by_files
from .bert import LAYER_NAMES as BERT_LAYER_NAMES
from .bert import LayerNames, encoder_rules


def _pos_att_type(hf: dict, source: str) -> tuple:
    t = hf.get("pos_att_type")
    if t is None:
        return ()
    if isinstance(t, str):
        t = [x.strip() for x in t.lower().split("|") if x.strip()]
    if not isinstance(t, list) or any(x not in POS_ATT_TYPES for x in t):
        raise error(ModelLoadError, "errors.config_deberta_pos_att", source=source, got=repr(hf.get("pos_att_type")))
    return tuple(dict.fromkeys(t))


def config_from_hf(hf: dict, source: str) -> DebertaConfig:
    for key in ("conv_kernel_size", "z_steps"):
        if (hf.get(key) or 0) > 0:
            raise error(ModelLoadError, "errors.config_deberta_conv", source=source, field=key, value=hf[key])
    d = setting(hf, "hidden_size", source, 1536)
    n_heads = setting(hf, "num_attention_heads", source, 24)
    n_pos = setting(hf, "max_position_embeddings", source, 512)
    max_rel = setting(hf, "max_relative_positions", source, -1)
    norm_rel = [x.strip() for x in str(setting(hf, "norm_rel_ebd", source, "none", str)).lower().split("|")]
    E = setting(hf, "embedding_size", source, d)
    head_dim = setting(hf, "attention_head_size", source, None)
    return DebertaConfig(
        vocab_size=setting(hf, "vocab_size", source), d_model=d, n_heads=n_heads,
        n_layers=setting(hf, "num_hidden_layers", source, 24), d_ff=setting(hf, "intermediate_size", source, 6144),
        head_dim=head_dim if head_dim is not None and head_dim != d // n_heads else None,
        max_positions=n_pos, type_vocab_size=setting(hf, "type_vocab_size", source, 0),
        position="learned" if setting(hf, "position_biased_input", source, True, bool) else "none",
        norm="post", embed_norm=True, final_norm=False,
        activation=hf_activation(setting(hf, "hidden_act", source, "gelu", str), source),
        layer_norm_eps=float(setting(hf, "layer_norm_eps", source, 1e-7, float)),
        dropout=float(setting(hf, "hidden_dropout_prob", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attention_probs_dropout_prob", source, 0.1, float)),
        pad_token_id=setting(hf, "pad_token_id", source, 0),
        embedding_size=E if E != d else None,
        relative_attention=setting(hf, "relative_attention", source, False, bool),
        max_relative_positions=max_rel if max_rel >= 1 else n_pos,
        position_buckets=max(setting(hf, "position_buckets", source, -1), 0),
        pos_att_type=_pos_att_type(hf, source),
        share_att_key=setting(hf, "share_att_key", source, False, bool),
        norm_rel_embed="layer_norm" in norm_rel,
        extra=hf_extra(hf),
    )


#: A DeBERTa layer's names under ``encoder.layer.{i}.``: BERT's, with ``_proj`` on Q, K, V.
LAYER_NAMES: LayerNames = {
    **BERT_LAYER_NAMES,
    "attn.W_qkv": ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj"),
}
#: The position projections of a layer that does not share the content ones (share_att_key False).
POS_PROJ_NAMES = {"c2p": ("attn.pos_key_proj", "attention.self.pos_key_proj"),
                  "p2c": ("attn.pos_query_proj", "attention.self.pos_query_proj")}


def rules(config: DebertaConfig) -> list[WeightRule]:
    names = dict(LAYER_NAMES)
    if config.relative_attention and not config.share_att_key:
        names.update(POS_PROJ_NAMES[t] for t in config.pos_att_type)
    out = encoder_rules(config, names)
    if config.embedding_size is not None:
        out.append(WeightRule("embed.proj.weight", ("embeddings.embed_proj.weight",)))
    if config.relative_attention:
        out.append(WeightRule("rel_embeddings.weight", ("encoder.rel_embeddings.weight",)))
        if config.norm_rel_embed:
            out += [WeightRule(f"rel_norm.{p}", (f"encoder.LayerNorm.{p}",)) for p in ("weight", "bias")]
    return out


FAMILY = register(Family(
    name="deberta-v2", model_types=("deberta-v2",), prefixes=("deberta.",), config_from_hf=config_from_hf,
    rules=rules, tokenizer_kind=tokenizer_by_files("bpe-roberta"), model_class=DebertaModel,
))
