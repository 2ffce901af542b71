"""GPT-2: a pre-LN decoder with causal self-attention, learned positions and a final LayerNorm.

Hugging Face names → attnscope names (``{i}`` = layer)::

    wte                     embed.token_embedding   (also the tied output layer: logits = h @ wteᵀ)
    wpe                     embed.position_embedding
    h.{i}.ln_1              layers.{i}.ln1
    h.{i}.attn.c_attn       layers.{i}.attn.W_qkv   (Conv1D (d, 3d) → transposed; columns Q | K | V)
    h.{i}.attn.c_proj       layers.{i}.attn.W_O     (transposed)
    h.{i}.ln_2              layers.{i}.ln2
    h.{i}.mlp.c_fc          layers.{i}.ffn.W_1      (transposed)
    h.{i}.mlp.c_proj        layers.{i}.ffn.W_2      (transposed)
    ln_f                    ln_f

Conv1D stores its weight as (in, out), the transpose of nn.Linear's (out, in). Keys may carry the
prefix ``transformer.`` (GPT2LMHeadModel); ``lm_head.weight`` is the tied ``wte`` and the
``attn.bias`` / ``attn.masked_bias`` buffers of old checkpoints are causal masks — none is needed.
"""

from __future__ import annotations

from ...config import TransformerConfig
from ...errors import ModelLoadError
from ...i18n import error
from ..registry import Family, WeightRule, hf_activation, hf_extra, register, setting, setting_of, transpose


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    if setting(hf, "scale_attn_by_inverse_layer_idx", source, False, bool):
        raise error(ModelLoadError, "errors.config_gpt2_layer_scale", source=source)
    if setting(hf, "add_cross_attention", source, False, bool):
        raise error(ModelLoadError, "errors.config_gpt2_cross", source=source)
    d = setting_of(hf, ("n_embd", "hidden_size"), source, 768)
    eos = setting(hf, "eos_token_id", source, 50256)
    return TransformerConfig(
        vocab_size=setting(hf, "vocab_size", source, 50257),
        d_model=d,
        n_heads=setting_of(hf, ("n_head", "num_attention_heads"), source, 12),
        n_layers=setting_of(hf, ("n_layer", "num_hidden_layers"), source, 12),
        d_ff=setting(hf, "n_inner", source, 4 * d),
        max_positions=setting_of(hf, ("n_positions", "max_position_embeddings"), source, 1024),
        type_vocab_size=0, position="learned", norm="pre", embed_norm=False, final_norm=True,
        activation=hf_activation(setting(hf, "activation_function", source, "gelu_new", str), source),
        layer_norm_eps=float(setting(hf, "layer_norm_epsilon", source, 1e-5, float)),
        dropout=float(setting(hf, "resid_pdrop", source, 0.1, float)),
        attn_dropout=float(setting(hf, "attn_pdrop", source, 0.1, float)),
        # GPT-2 can turn the 1/√d_head off; "unscaled" is exactly that.
        scoring="scaled" if setting(hf, "scale_attn_weights", source, True, bool) else "unscaled",
        causal=True,
        # GPT-2 has no padding token; padded positions are masked, their id only has to exist.
        pad_token_id=setting(hf, "pad_token_id", source, eos),
        eos_token_ids=[eos], extra=hf_extra(hf, bos_token_id=hf.get("bos_token_id")),
    )


def rules(config: TransformerConfig) -> list[WeightRule]:
    out = [
        WeightRule("embed.token_embedding.weight", ("wte.weight",)),
        WeightRule("embed.position_embedding.weight", ("wpe.weight",)),
        WeightRule("ln_f.weight", ("ln_f.weight",)),
        WeightRule("ln_f.bias", ("ln_f.bias",)),
    ]
    for i in range(config.n_layers):
        src, dst = f"h.{i}.", f"layers.{i}."
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out += [WeightRule(f"{dst}{ours}.{p}", (f"{src}{theirs}.{p}",)) for p in ("weight", "bias")]
        for ours, theirs in (("attn.W_qkv", "attn.c_attn"), ("attn.W_O", "attn.c_proj"),
                             ("ffn.W_1", "mlp.c_fc"), ("ffn.W_2", "mlp.c_proj")):
            out.append(WeightRule(f"{dst}{ours}.weight", (f"{src}{theirs}.weight",), transpose))
            out.append(WeightRule(f"{dst}{ours}.bias", (f"{src}{theirs}.bias",)))
    return out


FAMILY = register(Family(
    name="gpt2", model_types=("gpt2",), prefixes=("transformer.",), config_from_hf=config_from_hf,
    rules=rules, tokenizer_kind="bpe-gpt2", lm_head=True,
))
