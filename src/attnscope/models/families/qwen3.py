"""Qwen3 (dense): Qwen2's layers with QK-norm and without Qwen2's fixed q/k/v biases.

What differs from Qwen2 (:mod:`.qwen2`, whose window rules it shares: ``use_sliding_window``,
``max_window_layers``, ``layer_types``):

* QK-norm: RMSNorm of each head's q and k over head_dim (``self_attn.q_norm`` / ``k_norm``, one
  scale of head_dim shared by the heads), before the rotation — the span ``"head"`` (Gemma 3's);
* ``attention_bias`` (default false) puts biases on q, k, v *and* o together, as in Llama;
* ``head_dim`` is its own setting (transformers' default 128, not hidden_size / heads).

Weights: the shared decoder table (:mod:`.decoder_family`), with q_norm and k_norm.
"""

from __future__ import annotations

import dataclasses

from ...config import DecoderConfig
from .. import decoder_family as D
from ..registry import setting
from . import qwen2


def config_from_hf(hf: dict, source: str) -> DecoderConfig:
    head_dim = setting(hf, "head_dim", source, 128)
    bias = bool(setting(hf, "attention_bias", source, False, bool))
    base = qwen2.config_from_hf(dict(hf, head_dim=head_dim), source)  # sizes, RoPE, windows
    return dataclasses.replace(base, bias=bias, out_bias=bias, qk_norm=True, qk_norm_span="head")


FAMILY = D.register_decoder("qwen3", config_from_hf)
