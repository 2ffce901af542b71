"""BLOOM (BigScience 2022): a pre-LN decoder with ALiBi instead of position vectors, a LayerNorm on
the embeddings, a fused ``query_key_value`` and a tied output layer.

One layer is GPT-2's (``norm="pre"``, GELU-tanh MLP with biases, a final LayerNorm); what differs
is where positions act: no position embedding, and every head adds ``slope_h · key position`` to
its scaled scores (the position scheme ``alibi``, :mod:`attnscope.positions`; trace name
``layers.{i}.attn.bias``), with positions counted over real tokens as transformers does.

Hugging Face names → attnscope names (``{i}`` = layer)::

    word_embeddings               embed.token_embedding   (also the tied output layer)
    word_embeddings_layernorm     embed.norm
    h.{i}.input_layernorm         layers.{i}.ln1
    h.{i}.self_attention.query_key_value   layers.{i}.attn.W_qkv   (rows per head [q_h; k_h; v_h]
                                                                    → [W_Q; W_K; W_V], see below)
    h.{i}.self_attention.dense    layers.{i}.attn.W_O
    h.{i}.post_attention_layernorm layers.{i}.ln2
    h.{i}.mlp.dense_h_to_4h       layers.{i}.ffn.W_1
    h.{i}.mlp.dense_4h_to_h       layers.{i}.ffn.W_2
    ln_f                          ln_f

BLOOM's fused projection is laid out head by head: its 3·d rows are, for each head h, the d_head
rows of q_h, then of k_h, then of v_h (``view(H, 3, d_head)``), where attnscope's ``W_qkv`` holds
all of W_Q, then W_K, then W_V. Keys may carry the prefix ``transformer.`` (BloomForCausalLM).
"""

from __future__ import annotations

from typing import Sequence

import torch

from ...config import TransformerConfig
from ...errors import ModelLoadError
from ...i18n import error
from ..registry import Family, WeightRule, hf_extra, register, setting, setting_of, token_ids

Tensor = torch.Tensor


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    if setting(hf, "apply_residual_connection_post_layernorm", source, False, bool):
        raise error(ModelLoadError, "errors.config_bloom_residual", source=source)
    # the Hub's own BLOOM configs spell n_embed / num_attention_heads / num_hidden_layers (bloom-560m):
    # transformers reads them as hidden_size (n_embed first), n_head and n_layer
    d = setting_of(hf, ("n_embed", "hidden_size"), source, 64)
    pad = setting(hf, "pad_token_id", source, 3)
    return TransformerConfig(
        vocab_size=setting(hf, "vocab_size", source, 250880),
        d_model=d,
        n_heads=setting_of(hf, ("n_head", "num_attention_heads"), source, 8),
        n_layers=setting_of(hf, ("n_layer", "num_hidden_layers"), source, 2),
        d_ff=4 * d,
        # ALiBi has no table of positions, so no context limit (config.context_limit, as transformers);
        # BLOOM was trained on 2,048 tokens
        max_positions=setting(hf, "seq_length", source, 2048),
        type_vocab_size=0, position="alibi", norm="pre", embed_norm=True, final_norm=True,
        activation="gelu_tanh",  # bloom_gelu_forward: tanh GELU with 0.79788456 ≈ √(2/π)
        layer_norm_eps=float(setting(hf, "layer_norm_epsilon", source, 1e-5, float)),
        dropout=float(setting(hf, "hidden_dropout", source, 0.0, float)),
        attn_dropout=float(setting(hf, "attention_dropout", source, 0.0, float)),
        bias=True, causal=True, pad_token_id=pad,
        # generation stops there: BloomConfig's default is 2 (</s>), as transformers' generate reads it
        eos_token_ids=token_ids(hf.get("eos_token_id", 2), "eos_token_id", source),
        extra=hf_extra(hf, bos_token_id=hf.get("bos_token_id")),
    )


def per_head_to_blocks(n_heads: int):
    """``combine`` for the fused projection: BLOOM's rows ``(H, 3, d_head, …)`` → ``(3, H, d_head, …)``,
    i.e. [W_Q; W_K; W_V] (weights (3d, d) and biases (3d,) alike)."""
    def combine(ts: Sequence[Tensor]) -> Tensor:
        t = ts[0]
        rest = t.shape[1:]
        return t.reshape(n_heads, 3, -1, *rest).transpose(0, 1).reshape(t.shape)  # (3·H·d_head, …)
    return combine


def rules(config: TransformerConfig) -> list[WeightRule]:
    out = [WeightRule("embed.token_embedding.weight", ("word_embeddings.weight",))]
    out += [WeightRule(f"embed.norm.{p}", (f"word_embeddings_layernorm.{p}",)) for p in ("weight", "bias")]
    out += [WeightRule(f"ln_f.{p}", (f"ln_f.{p}",)) for p in ("weight", "bias")]
    qkv = per_head_to_blocks(config.n_heads)
    for i in range(config.n_layers):
        src, dst = f"h.{i}.", f"layers.{i}."
        for ours, theirs in (("ln1", "input_layernorm"), ("ln2", "post_attention_layernorm"),
                             ("attn.W_O", "self_attention.dense"), ("ffn.W_1", "mlp.dense_h_to_4h"),
                             ("ffn.W_2", "mlp.dense_4h_to_h")):
            out += [WeightRule(f"{dst}{ours}.{p}", (f"{src}{theirs}.{p}",)) for p in ("weight", "bias")]
        out += [WeightRule(f"{dst}attn.W_qkv.{p}", (f"{src}self_attention.query_key_value.{p}",), qkv)
                for p in ("weight", "bias")]
    return out


FAMILY = register(Family(
    name="bloom", model_types=("bloom",), prefixes=("transformer.",), config_from_hf=config_from_hf,
    rules=rules, tokenizer_kind="bpe-gpt2", lm_head=True,
))
