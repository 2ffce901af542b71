"""Gemma 3 (text model, ``gemma3_text``; also the text part of ``gemma3`` configs).

What differs from Llama:

* token embeddings × √d_model (rounded to the weights' dtype, as transformers does);
* RMSNorm scales by ``(1 + w)`` (the stored w is near 0), four per layer: before and after
  attention, before and after the MLP (sandwich norms); GeGLU MLP (``gelu_pytorch_tanh``);
* QK-norm: RMSNorm of each head's q and k (over head_dim) before the rotation;
* scores × ``query_pre_attn_scalar^-½`` (256 in 270M = head_dim; not always head_dim; 256 when the
  config leaves it out, as transformers' Gemma3TextConfig);
* sliding-window layers (``sliding_window``, 512 in 270M) and full layers: ``layer_types`` when
  given, else every ``sliding_window_pattern``-th layer (default 6: layers 5, 11, 17 of 18) is
  full; the two kinds use different RoPE bases (local 10 000, global 1 000 000 with the global
  scaling, if any);
* a multimodal ``gemma3`` checkpoint loads its text model (``text_config``, weights under
  ``language_model.model.``, or ``model.language_model.`` as transformers 4.52–4.57 saved them; the
  vision tower is left unused);
* optional ``final_logit_softcapping`` (logits = cap·tanh(logits/cap)); attention softcapping
  (Gemma 2) is refused.

Weights: the shared decoder table (:mod:`.decoder_family`), with all four norms.
"""

from __future__ import annotations

import math

from ...config import DecoderConfig
from ...errors import ModelLoadError
from ...i18n import error
from .. import decoder_family as D
from ..registry import setting


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    if isinstance(hf.get("text_config"), dict):  # Gemma3ForConditionalGeneration: its text model
        hf = dict(hf["text_config"], model_type="gemma3_text", architectures=hf.get("architectures"))
    if hf.get("attn_logit_softcapping") is not None:
        raise error(ModelLoadError, "errors.config_gemma_softcap", source=source, value=hf["attn_logit_softcapping"])
    if hf.get("use_bidirectional_attention"):
        raise error(ModelLoadError, "errors.config_gemma_bidirectional", source=source)
    theta, scaling, local = D.rope_settings(hf, source, default_theta=1_000_000.0, local=True)
    n_layers = setting(hf, "num_hidden_layers", source)
    window = setting(hf, "sliding_window", source, 4096)
    types = hf.get("layer_types")
    if types is None:
        # transformers reads sliding_window_pattern (the Hub's older configs); the _sliding_window_pattern it
        # writes beside layer_types only echoes it
        pattern = hf.get("sliding_window_pattern", hf.get("_sliding_window_pattern", 6))
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern <= 0:
            raise error(ModelLoadError, "errors.config_gemma_pattern", source=source, got=repr(pattern))
        types = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers)]
    types = D.window_layer_types(n_layers, window, types, source)
    assert types is not None  # given layer types come back as a list
    head_dim = setting(hf, "head_dim", source, 256)
    scalar = setting(hf, "query_pre_attn_scalar", source, 256, float)  # transformers' default, whatever head_dim is
    d = setting(hf, "hidden_size", source)
    cap = setting(hf, "final_logit_softcapping", source, None, float)
    bias = bool(setting(hf, "attention_bias", source, False, bool))
    return D.decoder_config(
        dict(hf, head_dim=head_dim), source, activation_key="hidden_activation", default_activation="gelu_pytorch_tanh",
        tie_default=True, rope_theta=theta, rope_scaling=scaling, rope_local_theta=local,
        sliding_window=window if "sliding" in types else None, layer_types=types if "sliding" in types else None,
        bias=bias, out_bias=bias, norm_offset=1.0, norm="sandwich", qk_norm=True, embed_scale=math.sqrt(d),
        query_scale=float(scalar) ** -0.5, final_logit_softcap=float(cap) if cap is not None else None)


# a multimodal checkpoint's text model: language_model.model.* (transformers < 4.52 and ≥ 5 write this), or
# model.language_model.* (4.52 – 4.57)
FAMILY = D.register_decoder("gemma3", config_from_hf, model_types=("gemma3_text", "gemma3"), prefixes=("language_model.",),
                            moved=(("model.language_model.", "model."),))
