"""Mistral: Llama's layers with a sliding window on every layer (``sliding_window``, 4096 in
Mistral 7B v0.1 and when the config leaves it out, as transformers; ``null`` in later versions
turns it off).

A query at position i sees keys i − window + 1 … i (``q − k < window``, as transformers and
Mistral's reference code). Weights: the shared decoder table (:mod:`.decoder_family`).
"""

from __future__ import annotations

from ...config import DecoderConfig
from .. import decoder_family as D
from ..registry import setting


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    theta, scaling, _ = D.rope_settings(hf, source)
    n_layers = setting(hf, "num_hidden_layers", source)
    # absent: transformers' MistralConfig default, 4096 (Mistral 7B v0.1's); null: no window
    window = setting(hf, "sliding_window", source, None) if "sliding_window" in hf else 4096
    return D.decoder_config(hf, source, rope_theta=theta, rope_scaling=scaling, sliding_window=window,
                            layer_types=D.window_layer_types(n_layers, window, hf.get("layer_types"), source))


FAMILY = D.register_decoder("mistral", config_from_hf)
