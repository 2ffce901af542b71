"""OLMo 2 (AllenAI): norms after attention and after the MLP, none before them, and QK-norm over
all heads at once.

One layer is the recipe ``post_block`` (:mod:`attnscope.recipe`)::

    attn_resid = x + RMSNorm_attn(Attn(x))              post_attention_layernorm → ln_attn_post
    out        = attn_resid + RMSNorm_ffn(MLP(attn_resid))   post_feedforward_layernorm → ln_ffn_post

(in Llama, ``post_attention_layernorm`` is the norm *before* the MLP; here it is the norm on
attention's output: the shared weight table maps it by the recipe's norms). QK-norm
(``self_attn.q_norm`` of H·head_dim features, ``k_norm`` of H_kv·head_dim) normalises all of a
token's query features, and all its key features, together before the split into heads — the
span ``"all"``. SwiGLU MLP, rotary positions, a final norm; ``attention_bias`` on q, k, v and o.
transformers' OLMo 2 RMSNorm multiplies by its weight before casting back to the input's dtype
(Llama after it): the same numbers in float32, OLMo 2's rounding in half precision
(``norm_weight_first``).

Weights: the shared decoder table (:mod:`.decoder_family`).
"""

from __future__ import annotations

from ...config import DecoderConfig
from .. import decoder_family as D
from ..registry import setting


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    theta, scaling, _ = D.rope_settings(hf, source)
    bias = bool(setting(hf, "attention_bias", source, False, bool))
    return D.decoder_config(hf, source, rope_theta=theta, rope_scaling=scaling, bias=bias, out_bias=bias,
                            norm="post_block", qk_norm=True, qk_norm_span="all", norm_weight_first=True,
                            # transformers' Olmo2Config defaults where a config.json leaves them out
                            layer_norm_eps=float(setting(hf, "rms_norm_eps", source, 1e-5, float)),
                            max_positions=setting(hf, "max_position_embeddings", source, 2048))


FAMILY = D.register_decoder("olmo2", config_from_hf)
