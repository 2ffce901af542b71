"""Qwen2 (and Qwen2.5): Llama's layers with biases on the q, k and v projections (none on o).

A sliding window is used only when ``use_sliding_window`` is true, and then on layers
``max_window_layers`` and later (transformers writes this as ``layer_types``, which wins when
present); ``use_sliding_window: false`` — every released Qwen2 — turns the window off whatever
``sliding_window`` says. Weights: the shared decoder table (:mod:`.decoder_family`).
"""

from __future__ import annotations

from ...config import DecoderConfig
from .. import decoder_family as D
from ..registry import setting


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    theta, scaling, _ = D.rope_settings(hf, source)
    n_layers = setting(hf, "num_hidden_layers", source)
    window, types = None, None
    if setting(hf, "use_sliding_window", source, False, bool):
        window = setting(hf, "sliding_window", source, 4096)
        types = hf.get("layer_types")
        if types is None:
            first = setting(hf, "max_window_layers", source, 28)
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(n_layers)]
        types = D.window_layer_types(n_layers, window, types, source)
        assert types is not None  # given layer types come back as a list
        if "sliding" not in types:
            window, types = None, None
    return D.decoder_config(hf, source, rope_theta=theta, rope_scaling=scaling, bias=True, out_bias=False,
                            sliding_window=window, layer_types=types)


FAMILY = D.register_decoder("qwen2", config_from_hf)
