"""Llama (1, 2, 3, 3.1+; also SmolLM, TinyLlama): RMSNorm, SwiGLU, rotary positions, grouped-query heads.

``config.json`` → :class:`~attnscope.config.DecoderConfig`: ``hidden_size`` d_model,
``num_attention_heads`` / ``num_key_value_heads`` (GQA: 9 query heads share 3 k/v heads in
SmolLM2-135M), ``head_dim`` (default d_model / heads), ``rms_norm_eps``, RoPE base and scaling
(``rope_parameters`` or ``rope_theta`` + ``rope_scaling``: Llama 3's "llama3", "linear",
"dynamic"), ``attention_bias`` (q/k/v and o), ``mlp_bias``, ``tie_word_embeddings`` (default
false). The weight names are the shared decoder table (:mod:`.decoder_family`).
"""

from __future__ import annotations

from ...config import DecoderConfig
from ...errors import ModelLoadError
from ...i18n import error
from .. import decoder_family as D
from ..registry import setting


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    if hf.get("sliding_window") is not None and hf.get("model_type") == "llama":
        raise error(ModelLoadError, "errors.config_llama_window", source=source)
    theta, scaling, _ = D.rope_settings(hf, source)
    bias = bool(setting(hf, "attention_bias", source, False, bool))
    return D.decoder_config(hf, source, rope_theta=theta, rope_scaling=scaling, bias=bias, out_bias=bias,
                            mlp_bias=bool(setting(hf, "mlp_bias", source, False, bool)))


FAMILY = D.register_decoder("llama", config_from_hf)
