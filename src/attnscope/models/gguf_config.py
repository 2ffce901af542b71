"""A Hugging Face ``config.json`` dict rebuilt from a GGUF file's metadata.

The dict is spelled as the Hub's ``config.json`` files are (``rope_theta``, ``rope_scaling``,
``rope_local_base_freq``, ``layer_types``), so that a decoder family reads a GGUF file and a Hub
folder with the same code. Every value comes from the file, except the ones in
:data:`DOCUMENTED_DEFAULTS`, which the file format does not store; each has its source there, and
:func:`config_from_gguf` reports which of them it used. A required key that is missing is a
:class:`ModelLoadError` naming it.

llama.cpp keys are ``{arch}.{name}`` (``llama.attention.head_count``); the architectures read
here are ``llama`` (Llama 1–3, SmolLM, and Mistral, which llama.cpp converts as ``llama``),
``qwen2`` and ``gemma3`` (its text model).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

from ..errors import ModelLoadError
from ..i18n import Msg, error
from .model_class import check_layers_fit, weight_bytes

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "gemma3")

#: Values a GGUF file does not store, filled in as ``transformers`` and llama.cpp do.
DOCUMENTED_DEFAULTS: dict[str, str] = {
    "num_key_value_heads": "= num_attention_heads when `{arch}.attention.head_count_kv` is absent (no GQA), "
                           "as llama.cpp and transformers' LlamaConfig do",
    "rope_theta": "10000.0 when `{arch}.rope.freq_base` is absent (llama, qwen2), llama.cpp's and "
                  "transformers' default",
    "head_dim": "hidden_size // num_attention_heads when `{arch}.attention.key_length` is absent "
                "(llama, qwen2), as llama.cpp does",
    "rope_local_base_freq": "10000.0 (Gemma 3's RoPE base on sliding-window layers) when "
                            "`gemma3.rope.freq_base_swa` is absent: llama.cpp hard-codes it, "
                            "transformers' Gemma3TextConfig defaults to it",
    "layer_types": "Gemma 3's 5:1 pattern when `gemma3.attention.sliding_window_pattern` is absent: "
                   "layer i is full attention when (i + 1) % 6 == 0 (layers 5, 11, 17 of 18), else sliding; "
                   "transformers' `_sliding_window_pattern` = 6, llama.cpp's `set_swa_pattern(6)`",
    "query_pre_attn_scalar": "Gemma 3's query scale 1/sqrt(query_pre_attn_scalar) is not stored: head_dim "
                             "(= 256, transformers' Gemma3TextConfig default, for every Gemma 3 but 27B), and "
                             "hidden_size / num_attention_heads (168) for the 27B model (62 layers, hidden 5376), "
                             "as llama.cpp's gemma3 loader does",
    "use_sliding_window": "False for qwen2: llama.cpp runs Qwen2 with full attention and stores no window; "
                          "transformers' Qwen2Config default",
    "hidden_act": "silu (llama, qwen2) / gelu_pytorch_tanh (gemma3): the activation is fixed per architecture "
                  "in llama.cpp and not stored",
}


def _need(meta: dict, key: str, path, kind=None) -> Any:
    if key not in meta:
        raise error(ModelLoadError, "errors.gguf_meta_missing", path=path, field=repr(key))
    v = meta[key]
    if kind is not None and (isinstance(v, bool) or not isinstance(v, kind)):
        raise error(ModelLoadError, "errors.gguf_meta_kind", path=path, field=repr(key), kind=_kind_name(kind), got=repr(v))
    return v


def _kind_name(kind):
    """"an integer", "a number", "a string", "an integer or a number": a :class:`Msg` (a word of
    the error's language), or a type's own name."""
    if isinstance(kind, tuple):
        out = _kind_name(kind[0])
        for k in kind[1:]:
            out = Msg("errors.gguf_kind_or", a=out, b=_kind_name(k))
        return out
    return Msg(f"errors.gguf_kind_{kind.__name__}") if kind in (int, float, str) else kind.__name__


def config_from_gguf(meta: dict, tensor_names, path="GGUF file") -> tuple[dict, dict[str, str]]:
    """``(config, defaults)`` for a file with metadata ``meta`` and these tensor names.

    ``config`` is a Hub-style ``config.json`` dict; ``defaults`` maps each key that took a value
    from :data:`DOCUMENTED_DEFAULTS` to the reason. Raises ModelLoadError for an architecture other
    than llama, qwen2 and gemma3, a required key that is missing or of the wrong type, per-layer
    head counts, partial rotary embeddings, or an unknown RoPE scaling type.
    """
    arch = meta.get("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise error(ModelLoadError, "errors.gguf_arch", path=path, arch=repr(arch),
                    supported=", ".join(SUPPORTED_ARCHITECTURES))
    names = set(tensor_names)
    k = lambda name: f"{arch}.{name}"  # noqa: E731
    defaults: dict[str, str] = {}

    def default(key: str, value):
        defaults[key] = DOCUMENTED_DEFAULTS[key].replace("{arch}", arch)
        return value

    hidden = _need(meta, k("embedding_length"), path, int)
    n_heads = meta.get(k("attention.head_count"))
    if isinstance(n_heads, list):
        raise error(ModelLoadError, "errors.gguf_heads_per_layer", path=path, field=k("attention.head_count"),
                    first=n_heads[:4])
    n_heads = _need(meta, k("attention.head_count"), path, int)
    if n_heads <= 0:
        raise error(ModelLoadError, "errors.gguf_positive", path=path, field=k("attention.head_count"), got=n_heads)
    n_kv = meta.get(k("attention.head_count_kv"))
    if isinstance(n_kv, list):
        raise error(ModelLoadError, "errors.gguf_kv_per_layer", path=path, field=k("attention.head_count_kv"))
    if n_kv is None:
        n_kv = default("num_key_value_heads", n_heads)
    elif not isinstance(n_kv, int) or n_kv <= 0 or n_heads % n_kv:
        raise error(ModelLoadError, "errors.gguf_kv_divide", path=path, kv_key=k("attention.head_count_kv"),
                    n_kv=repr(n_kv), field=k("attention.head_count"), n_heads=n_heads)
    if k("attention.key_length") in meta or arch == "gemma3":  # required for gemma3: no documented default
        head_dim = _need(meta, k("attention.key_length"), path, int)
    else:
        if hidden % n_heads:
            raise error(ModelLoadError, "errors.gguf_head_dim", path=path, hidden_key=k("embedding_length"),
                        hidden=hidden, heads_key=k("attention.head_count"), n_heads=n_heads,
                        length_key=k("attention.key_length"))
        head_dim = default("head_dim", hidden // n_heads)
    v_len = meta.get(k("attention.value_length"), head_dim)
    if v_len != head_dim:
        raise error(ModelLoadError, "errors.gguf_value_length", path=path, field=k("attention.value_length"),
                    v_len=v_len, head_dim=head_dim)
    rot = meta.get(k("rope.dimension_count"), head_dim)
    if rot != head_dim:
        raise error(ModelLoadError, "errors.gguf_partial_rotary", path=path, field=k("rope.dimension_count"), rot=rot,
                    head_dim=head_dim)

    vocab = meta.get(k("vocab_size"))
    if vocab is None:
        tokens = meta.get("tokenizer.ggml.tokens")
        if not isinstance(tokens, list):
            raise error(ModelLoadError, "errors.gguf_no_vocab", path=path, field=repr(k("vocab_size")))
        vocab = len(tokens)
    if k("rope.freq_base") in meta or arch == "gemma3":  # required for gemma3: no documented default
        theta = float(_need(meta, k("rope.freq_base"), path, (int, float)))
    else:
        theta = default("rope_theta", 10000.0)

    config: dict[str, Any] = {
        "hidden_size": hidden,
        "num_hidden_layers": _need(meta, k("block_count"), path, int),
        "intermediate_size": _need(meta, k("feed_forward_length"), path, int),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "rms_norm_eps": float(_need(meta, k("attention.layer_norm_rms_epsilon"), path, (int, float))),
        "rope_theta": theta,
        "rope_scaling": _rope_scaling(meta, arch, names, theta, head_dim, path),
        "max_position_embeddings": _need(meta, k("context_length"), path, int),
        "vocab_size": vocab,
        # llama.cpp writes output.weight only when the LM head is not the embedding matrix
        "tie_word_embeddings": "output.weight" not in names,
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta.get("tokenizer.ggml.eos_token_id"),
        "pad_token_id": meta.get("tokenizer.ggml.padding_token_id"),
        "unk_token_id": meta.get("tokenizer.ggml.unknown_token_id"),
        "_name_or_path": meta.get("general.name"),
    }
    # before the per-layer lists below (Gemma 3's layer types) and the per-layer weight names
    check_layers_fit(config["num_hidden_layers"], hidden, weight_bytes(Path(path)), path, repr(k("block_count")))
    if arch == "llama":
        config.update(_llama(meta, names, path, default))
    elif arch == "qwen2":
        config.update(_qwen2(config, names, path, default))
    else:
        config.update(_gemma3(meta, config, path, default))
    return config, defaults


def _llama(meta: dict, names: set, path, default) -> dict:
    label = " ".join(str(meta.get(key, "")) for key in ("general.name", "general.basename")).lower()
    # llama.cpp converts MistralForCausalLM as "llama"; the name is the only trace of it
    model_type = "mistral" if "mistral" in label else "llama"
    window = meta.get("llama.attention.sliding_window")
    out = {
        "model_type": model_type,
        "architectures": ["MistralForCausalLM" if model_type == "mistral" else "LlamaForCausalLM"],
        "hidden_act": default("hidden_act", "silu"),
        "attention_bias": "blk.0.attn_q.bias" in names,
        "mlp_bias": "blk.0.ffn_up.bias" in names,
    }
    if model_type == "mistral":
        out["sliding_window"] = window
    elif window is not None:
        raise error(ModelLoadError, "errors.gguf_llama_window", path=path, window=window)
    return out


def _qwen2(config: dict, names: set, path, default) -> dict:
    for part in ("q", "k", "v"):
        if f"blk.0.attn_{part}.bias" not in names:
            raise error(ModelLoadError, "errors.gguf_qwen2_bias", path=path, part=part)
    return {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_act": default("hidden_act", "silu"),
        "use_sliding_window": default("use_sliding_window", False),
        "sliding_window": None,
        "max_window_layers": config["num_hidden_layers"],
    }


def _gemma3(meta: dict, config: dict, path, default) -> dict:
    n_layers = config["num_hidden_layers"]
    window = _need(meta, "gemma3.attention.sliding_window", path, int)
    pattern = meta.get("gemma3.attention.sliding_window_pattern")
    if pattern is None:
        layer_types = default("layer_types", [
            "full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n_layers)])
    elif isinstance(pattern, list):  # one flag per layer: True = sliding window
        if len(pattern) != n_layers:
            raise error(ModelLoadError, "errors.gguf_pattern_length", path=path, n=len(pattern), n_layers=n_layers)
        layer_types = ["sliding_attention" if p else "full_attention" for p in pattern]
    elif isinstance(pattern, int) and pattern > 0:  # every pattern-th layer is global
        layer_types = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers)]
    else:
        raise error(ModelLoadError, "errors.gguf_pattern_kind", path=path, pattern=repr(pattern))
    if "gemma3.rope.freq_base_swa" in meta:
        local = float(_need(meta, "gemma3.rope.freq_base_swa", path, (int, float)))
    else:
        local = default("rope_local_base_freq", 10000.0)
    if n_layers == 62 and config["hidden_size"] == 5376:  # Gemma 3 27B, as llama.cpp tells it apart
        scalar = default("query_pre_attn_scalar", config["hidden_size"] // config["num_attention_heads"])
    else:
        scalar = default("query_pre_attn_scalar", config["head_dim"])
    return {
        "model_type": "gemma3_text",
        "architectures": ["Gemma3ForCausalLM"],
        "hidden_activation": default("hidden_act", "gelu_pytorch_tanh"),
        "sliding_window": window,
        "layer_types": layer_types,
        "rope_local_base_freq": local,
        "query_pre_attn_scalar": scalar,
        "final_logit_softcapping": meta.get("gemma3.final_logit_softcapping"),
        "attn_logit_softcapping": meta.get("gemma3.attn_logit_softcapping"),
        "attention_bias": False,
    }


# ----------------------------------------------------------------------------------------------
# RoPE scaling
# ----------------------------------------------------------------------------------------------

def _rope_scaling(meta: dict, arch: str, names: set, theta: float, head_dim: int, path) -> Optional[dict]:
    """``rope_scaling`` as the Hub spells it, from ``{arch}.rope.scaling.*``, or for Llama 3.1+
    from the ``rope_freqs.weight`` tensor (read later; here only marked for :func:`llama3_from_factors`)."""
    kind = meta.get(f"{arch}.rope.scaling.type")
    factor = meta.get(f"{arch}.rope.scaling.factor")
    orig = meta.get(f"{arch}.rope.scaling.original_context_length")
    if "rope_freqs.weight" in names:
        if kind not in (None, "none"):
            raise error(ModelLoadError, "errors.gguf_rope_both", path=path, arch=arch, kind=repr(kind))
        # llama.cpp stores Llama 3's frequency-dependent scaling as one factor per frequency;
        # gguf.py turns them back into the "llama3" parameters once the tensor is read
        return {"rope_type": "llama3", "_from_tensor": "rope_freqs.weight"}
    if kind in (None, "none"):
        if factor not in (None, 1.0, 0.0):
            raise error(ModelLoadError, "errors.gguf_rope_factor_alone", path=path, arch=arch, factor=factor)
        return None
    if not isinstance(factor, (int, float)) or factor <= 0:
        raise error(ModelLoadError, "errors.gguf_rope_factor", path=path, arch=arch, kind=repr(kind),
                    factor=repr(factor))
    if kind == "linear":
        return {"rope_type": "linear", "factor": float(factor)}
    if kind == "yarn":
        out = {"rope_type": "yarn", "factor": float(factor)}
        if orig is not None:
            out["original_max_position_embeddings"] = int(orig)
        for gkey, hkey in (("yarn_beta_fast", "beta_fast"), ("yarn_beta_slow", "beta_slow"),
                           ("attn_factor", "attention_factor")):
            if f"{arch}.rope.scaling.{gkey}" in meta:
                out[hkey] = float(meta[f"{arch}.rope.scaling.{gkey}"])
        return out
    raise error(ModelLoadError, "errors.gguf_rope_type", path=path, arch=arch, kind=repr(kind))


def llama3_from_factors(factors, theta: float, head_dim: int, original_max_position: Optional[int],
                        path="GGUF file") -> dict:
    """Llama 3's ``rope_scaling`` (``factor``, ``low_freq_factor``, ``high_freq_factor``,
    ``original_max_position_embeddings``) recovered from llama.cpp's per-frequency divisors.

    llama.cpp's converter divides frequency i by ``factors[i]``: 1 for short wavelengths
    (< L / high), ``factor`` for long ones (> L / low), ``1 / ((1 - s) / factor + s)`` between, with
    ``s = (L / wavelength - low) / (high - low)`` linear in 1 / wavelength. The two ends of that
    line give low and high for the context L (8192, Llama 3.1's, when the file does not say;
    only L / low and L / high matter). The result is checked by recomputing every factor.
    """
    f = [float(x) for x in factors]
    if len(f) != head_dim // 2:
        raise error(ModelLoadError, "errors.gguf_rope_freqs_count", path=path, n=len(f), half=head_dim // 2)
    factor = max(f)
    L = float(original_max_position or 8192)
    inv = [theta ** (-(2 * i) / head_dim) for i in range(len(f))]
    wavelen = [2 * math.pi / x for x in inv]
    mid = [i for i, x in enumerate(f) if not (math.isclose(x, 1.0, rel_tol=1e-6) or math.isclose(x, factor, rel_tol=1e-6))]
    if factor <= 1.0 or len(mid) < 2:
        raise error(ModelLoadError, "errors.gguf_rope_freqs_shape", path=path)
    s = {i: (1.0 / f[i] - 1.0 / factor) / (1.0 - 1.0 / factor) for i in mid}
    i, j = mid[0], mid[-1]
    a = (s[i] - s[j]) / (L / wavelen[i] - L / wavelen[j])  # s = a * (L / wavelen) - b
    b = a * L / wavelen[i] - s[i]
    low, high = (_tidy(x) for x in (b / a, (b + 1.0) / a))  # 1.0000002 → 1.0: the checkpoint's own numbers
    out = {"rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": high,
           "original_max_position_embeddings": int(L)}
    for n, (x, w) in enumerate(zip(f, wavelen)):
        if w < L / high:
            want = 1.0
        elif w > L / low:
            want = factor
        else:
            sm = (L / w - low) / (high - low)
            want = 1.0 / ((1 - sm) / factor + sm)
        if not math.isclose(x, want, rel_tol=1e-4):
            raise error(ModelLoadError, "errors.gguf_rope_freqs_value", path=path, n=n, x=x, want=f"{want:.6g}")
    return out


def _tidy(x: float) -> float:
    r = round(x, 3)
    return r if abs(r - x) <= 1e-4 * abs(x) else x
