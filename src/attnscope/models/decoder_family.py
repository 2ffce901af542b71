"""What the decoder families (llama, qwen2, qwen3, mistral, gemma3, olmo2) share: reading a Hugging Face
``config.json`` into a :class:`~attnscope.config.DecoderConfig`, and the weight-name table.

Hugging Face names → attnscope names (``{i}`` = layer)::

    model.embed_tokens                  embed.token_embedding   (also the output layer when tied)
    model.layers.{i}.input_layernorm    layers.{i}.ln1
    self_attn.q_proj | k_proj | v_proj  layers.{i}.attn.W_qkv   rows [W_Q; W_K; W_V], biases too (Qwen2)
    self_attn.o_proj                    layers.{i}.attn.W_O
    self_attn.q_norm | k_norm           layers.{i}.attn.q_norm | k_norm      (Gemma 3, Qwen3, OLMo 2)
    post_attention_layernorm            layers.{i}.ln2          (Llama, Qwen2, Qwen3, Mistral: the norm before the MLP)
                                        layers.{i}.ln_attn_post (Gemma 3, OLMo 2: the norm after attention)
    pre_feedforward_layernorm           layers.{i}.ln2          (Gemma 3)
    post_feedforward_layernorm          layers.{i}.ln_ffn_post  (Gemma 3, OLMo 2)

Which norms a layer has is its recipe's (``config.norm``: pre, sandwich, post_block); OLMo 2 has
no ``input_layernorm`` and no ``pre_feedforward_layernorm``.
    mlp.gate_proj | up_proj             layers.{i}.ffn.W_1      rows [W_gate; W_up]
    mlp.down_proj                       layers.{i}.ffn.W_2
    model.norm                          ln_f
    lm_head                             lm_head_weight          (only when not tied to the embedding)

RoPE settings are read in both spellings: transformers 5 writes ``rope_parameters`` (one dict,
or one per layer type for Gemma 3), Hub checkpoints and GGUF files ``rope_theta`` /
``rope_scaling`` / ``rope_local_base_freq``. Scaling kinds run: default, linear, dynamic, llama3.
"""

from __future__ import annotations

import math
from typing import Optional

from ..config import ROPE_FIELDS, ROPE_TYPES, DecoderConfig
from ..errors import ModelLoadError
from ..i18n import error
from .decoder_model import DecoderModel
from .registry import Family, WeightRule, fuse_rows, hf_activation, hf_extra, make_config, register, setting, token_ids


def _rope_dict(d, source: str, what: str) -> tuple[Optional[float], Optional[dict]]:
    """``(theta, scaling or None)`` of one RoPE parameter dict (either spelling)."""
    if d is None:
        return None, None
    if not isinstance(d, dict):
        raise error(ModelLoadError, "errors.config_rope_object", source=source, what=what, got=repr(d))
    kind = d.get("rope_type", d.get("type", "default"))
    theta = d.get("rope_theta")
    if theta is not None and (isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0 < theta < math.inf):
        raise error(ModelLoadError, "errors.config_rope_theta", source=source, what=what, got=repr(theta))
    if kind in (None, "default"):
        return theta, None
    if kind not in ROPE_TYPES:
        raise error(ModelLoadError, "errors.config_rope_type", source=source, what=what, kind=repr(kind),
                    supported=", ".join(ROPE_TYPES))
    need = ROPE_FIELDS[kind]
    scaling = {"rope_type": kind}
    for key in need:
        v = d.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise error(ModelLoadError, "errors.config_rope_needs", source=source, what=what, kind=repr(kind),
                        field=repr(key), got=repr(v))
        scaling[key] = v
    if kind == "llama3" and not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
        raise error(ModelLoadError, "errors.config_llama3_factors", source=source, what=what,
                    high=scaling["high_freq_factor"], low=scaling["low_freq_factor"])
    return theta, scaling


def rope_settings(hf: dict, source: str, *, default_theta: float = 10000.0,
                  local: bool = False) -> tuple[float, Optional[dict], Optional[float]]:
    """``(theta, scaling, local_theta)`` from a config dict in either spelling (see the module
    docstring), with transformers' precedence: a ``rope_scaling`` wins over ``rope_parameters``
    (Gemma 3: over its full layers' dict), and a dict's own ``rope_theta`` over the top-level
    ``rope_theta``, which wins over the family's default. ``local``: the family has sliding layers
    with their own base (Gemma 3)."""
    params, old = hf.get("rope_parameters"), hf.get("rope_scaling")
    local_theta: Optional[float] = None
    if isinstance(params, dict) and ("full_attention" in params or "sliding_attention" in params):
        full = params.get("full_attention")
        if old and isinstance(full, dict) and isinstance(old, dict):
            full = {**full, **old}
        theta, scaling = _rope_dict(old if old and not isinstance(full, dict) else full, source,
                                    "rope_scaling" if old else "rope_parameters.full_attention")
        local_theta, local_scaling = _rope_dict(params.get("sliding_attention"), source,
                                                "rope_parameters.sliding_attention")
        if local_scaling is not None:
            raise error(ModelLoadError, "errors.config_local_rope_scaling", source=source,
                        kind=repr(local_scaling["rope_type"]))
    else:
        theta, scaling = _rope_dict(old or params or {}, source, "rope_scaling" if old else "rope_parameters")
    if theta is None and hf.get("rope_theta") is not None:
        theta, _ = _rope_dict({"rope_theta": hf["rope_theta"]}, source, "config")
    if local and local_theta is None:
        local_theta = float(setting(hf, "rope_local_base_freq", source, 10000.0, float))
    return float(theta if theta is not None else default_theta), scaling, local_theta


def decoder_config(hf: dict, source: str, *, activation_key: str = "hidden_act", default_activation: str = "silu",
                   tie_default: bool = False, **fields) -> DecoderConfig:
    """The settings every decoder family shares, read from ``hf``; ``fields`` are the family's own."""
    d = setting(hf, "hidden_size", source)
    n_heads = setting(hf, "num_attention_heads", source)
    n_kv = setting(hf, "num_key_value_heads", source, n_heads)
    head_dim = setting(hf, "head_dim", source, None)
    if head_dim is None:
        if n_heads <= 0 or d % n_heads:
            raise error(ModelLoadError, "errors.config_head_dim", source=source, d=d, n_heads=n_heads)
        head_dim = d // n_heads
    if n_kv <= 0 or n_heads % n_kv:
        raise error(ModelLoadError, "errors.config_kv_heads", source=source, n_heads=n_heads, n_kv=n_kv)
    if hf.get("partial_rotary_factor") not in (None, 1, 1.0):
        raise error(ModelLoadError, "errors.config_partial_rotary", source=source, field="partial_rotary_factor",
                    value=hf["partial_rotary_factor"])
    # transformers reads one key per family (Gemma 3: hidden_activation; a hidden_act beside it is not read)
    act = hf.get(activation_key) or default_activation
    eos = token_ids(hf.get("eos_token_id"), "eos_token_id", source)
    pad = hf.get("pad_token_id")
    pad = pad if isinstance(pad, int) and not isinstance(pad, bool) else (eos[0] if eos else 0)
    base = dict(
        vocab_size=setting(hf, "vocab_size", source), d_model=d, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim,
        n_layers=setting(hf, "num_hidden_layers", source), d_ff=setting(hf, "intermediate_size", source),
        max_positions=setting(hf, "max_position_embeddings", source, 4096),
        layer_norm_eps=float(setting(hf, "rms_norm_eps", source, 1e-6, float)),
        # the gate's activation: silu (SwiGLU: Llama, Qwen2, Mistral) or gelu_tanh (GeGLU: Gemma)
        activation=hf_activation(act, source, ("silu", "gelu_tanh", "gelu"), "errors.config_gated_activation"),
        attn_dropout=0.0, dropout=0.0,
        tie_embeddings=bool(setting(hf, "tie_word_embeddings", source, tie_default, bool)),
        pad_token_id=pad, bos_token_id=hf.get("bos_token_id") if isinstance(hf.get("bos_token_id"), int) else None,
        eos_token_ids=eos,
        extra=hf_extra(hf),
    )
    base.update(fields)
    return make_config(DecoderConfig, source, **base)


def window_layer_types(n_layers: int, window: Optional[int], layer_types, source: str) -> Optional[list]:
    """``layer_types`` in attnscope's spelling ("full"/"sliding") from the Hub's
    ("full_attention"/"sliding_attention"), or all sliding when only a window is given (Mistral)."""
    if layer_types is not None:
        table = {"full_attention": "full", "sliding_attention": "sliding"}
        if not isinstance(layer_types, list) or len(layer_types) != n_layers or \
                any(t not in table for t in layer_types):
            raise error(ModelLoadError, "errors.config_layer_types", source=source, n_layers=n_layers,
                        got=repr(layer_types))
        out = [table[t] for t in layer_types]
        if window is None and "sliding" in out:
            raise error(ModelLoadError, "errors.config_no_window", source=source)
        return out
    return ["sliding"] * n_layers if window is not None else None


def rules(config: DecoderConfig) -> list[WeightRule]:
    """The weight table of the module docstring for ``config``."""
    out = [WeightRule("embed.token_embedding.weight", ("model.embed_tokens.weight",)),
           WeightRule("ln_f.weight", ("model.norm.weight",))]
    if not config.tie_embeddings:
        out.append(WeightRule("lm_head_weight", ("lm_head.weight",)))
    norms = config.recipe.norms  # the layer's norm modules, in the recipe's order
    # Hugging Face names the norm after attention's output "post_attention_layernorm" when the layer
    # has one (Gemma 3, OLMo 2) and then the norm before the MLP "pre_feedforward_layernorm"; in a
    # pre-norm layer (Llama) "post_attention_layernorm" is the norm before the MLP.
    post_attn = "ln_attn_post" in norms
    hf_norms = {"ln1": "input_layernorm", "ln_attn_post": "post_attention_layernorm",
                "ln2": "pre_feedforward_layernorm" if post_attn else "post_attention_layernorm",
                "ln_ffn_post": "post_feedforward_layernorm"}
    for i in range(config.n_layers):
        src, dst = f"model.layers.{i}.", f"layers.{i}."
        att = src + "self_attn."
        qkv = tuple(f"{att}{p}_proj.weight" for p in "qkv")
        out.append(WeightRule(f"{dst}attn.W_qkv.weight", qkv, fuse_rows))
        if config.bias:
            out.append(WeightRule(f"{dst}attn.W_qkv.bias", tuple(f"{att}{p}_proj.bias" for p in "qkv"), fuse_rows))
        out.append(WeightRule(f"{dst}attn.W_O.weight", (att + "o_proj.weight",)))
        if config.out_bias:
            out.append(WeightRule(f"{dst}attn.W_O.bias", (att + "o_proj.bias",)))
        if config.qk_norm:
            out += [WeightRule(f"{dst}attn.q_norm.weight", (att + "q_norm.weight",)),
                    WeightRule(f"{dst}attn.k_norm.weight", (att + "k_norm.weight",))]
        out += [WeightRule(f"{dst}{n}.weight", (f"{src}{hf_norms[n]}.weight",)) for n in norms]
        out.append(WeightRule(f"{dst}ffn.W_1.weight", (src + "mlp.gate_proj.weight", src + "mlp.up_proj.weight"),
                              fuse_rows))
        out.append(WeightRule(f"{dst}ffn.W_2.weight", (src + "mlp.down_proj.weight",)))
        if config.mlp_bias:
            out.append(WeightRule(f"{dst}ffn.W_1.bias", (src + "mlp.gate_proj.bias", src + "mlp.up_proj.bias"),
                                  fuse_rows))
            out.append(WeightRule(f"{dst}ffn.W_2.bias", (src + "mlp.down_proj.bias",)))
    return out


def register_decoder(name: str, config_from_hf, *, model_types: Optional[tuple[str, ...]] = None,
                     prefixes: tuple[str, ...] = (), moved: tuple[tuple[str, str], ...] = ()) -> Family:
    """Register a decoder family (``model_types`` default ``(name,)``): the weight table of
    :func:`rules`, a byte-level BPE tokenizer, a :class:`~attnscope.models.DecoderModel`."""
    return register(Family(name=name, model_types=model_types or (name,), prefixes=prefixes,
                           config_from_hf=config_from_hf, rules=rules, tokenizer_kind="bpe-gpt2", lm_head=False,
                           model_class=DecoderModel, moved=moved))
