"""T5 (t5-small … t5-11b, T5 v1.1, flan-t5-*, mT5): an encoder–decoder with T5's relative
position bias, RMS LayerNorm and no score scaling.

* **No 1/√d_k.** Scores are q·kᵀ plus the relative bias (scoring ``unscaled``): T5 folds the
  scaling into the initialisation of W_Q (standard deviation (d_model·d_kv)^-½ where W_K gets
  d_model^-½, as Mesh TensorFlow and transformers' ``_init_weights`` do), the "T5-style"
  alternative of the third article in a real model.
* **Relative position bias** (:mod:`attnscope.modules.t5_bias`): 32 log buckets up to distance 128,
  bidirectional in the encoder, causal in the decoder, learned in the first layer of each stack and
  shared by all its layers. Cross-attention has none.
* **RMS LayerNorm** without mean and bias, pre-norm, a final norm per stack; no biases anywhere.
* **FFN**: ``relu`` (T5 v1.0) or gated ``gated-gelu`` (v1.1, flan-t5, mT5: gelu_new(wi_0 x)·wi_1 x).
* **Logits**: with the output layer tied to the shared embedding (T5 v1.0) the last hidden state is
  multiplied by d_model^-½ first; v1.1/flan/mT5 checkpoints have their own ``lm_head.weight`` and no
  rescale. (Checkpoints written by transformers 5 say ``tie_word_embeddings: true`` with
  ``scale_decoder_outputs: false``: tied, not rescaled — unless the file holds an ``lm_head.weight``
  other than ``shared.weight``, a v1.1 checkpoint re-saved, whose matrix the logits use, as
  transformers does; mT5 is never rescaled.)

Hugging Face names → attnscope names (``{i}`` = layer)::

    shared                                                  shared (= encoder/decoder .embed.token_embedding)
    encoder.block.0.layer.0.SelfAttention.relative_attention_bias   encoder.rel_bias.embedding  (buckets, H)
    encoder.block.{i}.layer.0.SelfAttention.{q,k,v} / o    encoder.layers.{i}.attn.W_qkv / W_O
    encoder.block.{i}.layer.0.layer_norm                   encoder.layers.{i}.ln1
    encoder.block.{i}.layer.1.DenseReluDense.wi | wi_0,wi_1 / wo   encoder.layers.{i}.ffn.W_1 / W_2
    encoder.block.{i}.layer.1.layer_norm                   encoder.layers.{i}.ln2
    encoder.final_layer_norm                               encoder.ln_f
    decoder.block.0.layer.0.SelfAttention.relative_attention_bias   decoder.rel_bias.embedding
    decoder.block.{i}.layer.0.SelfAttention / layer_norm   decoder.layers.{i}.self_attn / ln1
    decoder.block.{i}.layer.1.EncDecAttention / layer_norm decoder.layers.{i}.cross_attn / ln2
    decoder.block.{i}.layer.2.DenseReluDense / layer_norm  decoder.layers.{i}.ffn / ln3
    decoder.final_layer_norm                               decoder.ln_f
    lm_head                                                lm_head_weight   (untied checkpoints)

Generation settings: see :mod:`attnscope.models.seq2seq_generation`. T5's relative positions have
no hard length limit; attnscope accepts sources up to ``n_positions`` (512 for the released
checkpoints, their tokenizers' ``model_max_length``) and says so past it.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import ModelLoadError
from ...i18n import error
from ...modules.seq2seq import Seq2SeqConfig
from ..registry import (
    HF_ACTIVATIONS,
    Family,
    WeightRule,
    fuse_rows,
    hf_extra,
    make_config,
    register,
    setting,
    setting_of,
    tokenizer_by_files,
)
from ..seq2seq_generation import generation_settings
from ..seq2seq_model import Seq2SeqModel

ACTIVATIONS = {k: HF_ACTIVATIONS[k] for k in ("relu", "gelu", "gelu_new", "silu", "swish")}


#: What a config leaves out, as transformers' T5Config and MT5Config default it (mT5: mt5-small's sizes)
DEFAULTS = {"t5": {"feed_forward_proj": "relu", "d_ff": 2048, "num_layers": 6, "num_heads": 8},
            "mt5": {"feed_forward_proj": "gated-gelu", "d_ff": 1024, "num_layers": 8, "num_heads": 6}}


def config_from_hf(hf: dict, source: str) -> Seq2SeqConfig:
    dflt = DEFAULTS["mt5" if hf.get("model_type") == "mt5" else "t5"]
    proj = setting(hf, "feed_forward_proj", source, dflt["feed_forward_proj"], str)
    parts = proj.split("-")
    gated = len(parts) == 2 and parts[0] == "gated"
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    if len(parts) > 2 or (len(parts) == 2 and not gated) or act not in ACTIVATIONS:
        raise error(ModelLoadError, "errors.config_t5_ffn", source=source, proj=repr(proj))
    d = setting_of(hf, ("d_model", "hidden_size"), source, 512)
    tie = setting(hf, "tie_word_embeddings", source, True, bool)
    scale = hf.get("scale_decoder_outputs")
    scale = tie if not isinstance(scale, bool) else scale
    if hf.get("model_type") == "mt5":
        scale = False  # mT5 never rescales (transformers' MT5ForConditionalGeneration has no such step)
    n_layers = setting_of(hf, ("num_layers", "num_hidden_layers"), source, dflt["num_layers"])
    gen = generation_settings(hf, Path(source).parent, source)
    return make_config(
        Seq2SeqConfig, source,
        vocab_size=setting(hf, "vocab_size", source), d_model=d,
        n_heads=setting_of(hf, ("num_heads", "num_attention_heads"), source, dflt["num_heads"]),
        head_dim=setting_of(hf, ("d_kv", "head_dim"), source, 64), n_layers=n_layers,
        n_decoder_layers=setting(hf, "num_decoder_layers", source, n_layers),
        d_ff=setting(hf, "d_ff", source, dflt["d_ff"]), max_positions=setting(hf, "n_positions", source, 512),
        type_vocab_size=0, position="t5_relative", norm="pre", norm_kind="rms", embed_norm=False,
        final_norm=True, activation=ACTIVATIONS[act], gated_ffn=gated, bias=False, scoring="unscaled",
        layer_norm_eps=float(setting(hf, "layer_norm_epsilon", source, 1e-6, float)),
        dropout=float(setting(hf, "dropout_rate", source, 0.1, float)), attn_dropout=0.0,
        relative_buckets=setting(hf, "relative_attention_num_buckets", source, 32),
        relative_max_distance=setting(hf, "relative_attention_max_distance", source, 128),
        tie_embeddings=tie, lm_scale=d ** -0.5 if scale else 1.0,
        pad_token_id=setting(hf, "pad_token_id", source, 0), **gen,
        extra=hf_extra(hf, feed_forward_proj=proj),
    )


def _attention(src: str, dst: str) -> list[WeightRule]:
    return [WeightRule(f"{dst}.W_qkv.weight", tuple(f"{src}.{p}.weight" for p in "qkv"), fuse_rows),
            WeightRule(f"{dst}.W_O.weight", (f"{src}.o.weight",))]


def _ffn(src: str, dst: str, gated: bool) -> list[WeightRule]:
    first = (f"{src}.wi_0.weight", f"{src}.wi_1.weight") if gated else (f"{src}.wi.weight",)
    return [WeightRule(f"{dst}.W_1.weight", first, fuse_rows), WeightRule(f"{dst}.W_2.weight", (f"{src}.wo.weight",))]


def rules(config: Seq2SeqConfig) -> list[WeightRule]:
    g = config.gated_ffn
    out = [WeightRule(t, ("shared.weight",)) for t in
           ("shared.weight", "encoder.embed.token_embedding.weight", "decoder.embed.token_embedding.weight")]
    for stack in ("encoder", "decoder"):
        out += [WeightRule(f"{stack}.rel_bias.embedding.weight",
                           (f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",)),
                WeightRule(f"{stack}.ln_f.weight", (f"{stack}.final_layer_norm.weight",))]
    for i in range(config.n_layers):
        src, dst = f"encoder.block.{i}.layer.", f"encoder.layers.{i}."
        out += _attention(src + "0.SelfAttention", dst + "attn") + _ffn(src + "1.DenseReluDense", dst + "ffn", g)
        out += [WeightRule(dst + "ln1.weight", (src + "0.layer_norm.weight",)),
                WeightRule(dst + "ln2.weight", (src + "1.layer_norm.weight",))]
    for i in range(config.n_decoder_layers):
        src, dst = f"decoder.block.{i}.layer.", f"decoder.layers.{i}."
        out += _attention(src + "0.SelfAttention", dst + "self_attn") + _attention(src + "1.EncDecAttention",
                                                                                   dst + "cross_attn")
        out += _ffn(src + "2.DenseReluDense", dst + "ffn", g)
        out += [WeightRule(dst + f"ln{k + 1}.weight", (src + f"{k}.layer_norm.weight",)) for k in range(3)]
    if not config.tie_embeddings:
        out.append(WeightRule("lm_head_weight", ("lm_head.weight",)))
    return out


FAMILY = register(Family(
    name="t5", model_types=("t5", "mt5"), prefixes=(), config_from_hf=config_from_hf, rules=rules,
    tokenizer_kind=tokenizer_by_files("bpe-roberta"), model_class=Seq2SeqModel, lm_head=True,
))
