"""Tiny synthetic GGUF files written with ``gguf.GGUFWriter``, laid out as llama.cpp's converter
lays out Hugging Face checkpoints (Q/K rows permuted for llama, 1 + w norms for Gemma), for the
GGUF tests: parity with transformers on every architecture and one ModelLoadError per defect."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

ARCH_OF = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "gemma3_text": "gemma3"}


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py ``LlamaModel.permute``: halves → adjacent pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_weights(model_type: str, *, layers: int = 2, hidden: int = 32, heads: int = 4, kv: int = 2,
               head_dim: int = 8, ff: int = 64, vocab: int = 64, tied: bool = True, seed: int = 0) -> dict:
    """A random Hugging Face state dict (numpy float32) of the given family."""
    g = np.random.default_rng(seed)
    r = lambda *s: g.normal(0, 0.2, s).astype(np.float32)  # noqa: E731
    norm = lambda n: (g.normal(0, 0.1, n) + (0.0 if model_type == "gemma3_text" else 1.0)).astype(np.float32)  # noqa: E731
    sd = {"model.embed_tokens.weight": r(vocab, hidden), "model.norm.weight": norm(hidden)}
    if not tied:
        sd["lm_head.weight"] = r(vocab, hidden)
    for i in range(layers):
        p = f"model.layers.{i}."
        sd.update({p + "self_attn.q_proj.weight": r(heads * head_dim, hidden),
                   p + "self_attn.k_proj.weight": r(kv * head_dim, hidden),
                   p + "self_attn.v_proj.weight": r(kv * head_dim, hidden),
                   p + "self_attn.o_proj.weight": r(hidden, heads * head_dim),
                   p + "mlp.gate_proj.weight": r(ff, hidden), p + "mlp.up_proj.weight": r(ff, hidden),
                   p + "mlp.down_proj.weight": r(hidden, ff), p + "input_layernorm.weight": norm(hidden),
                   p + "post_attention_layernorm.weight": norm(hidden)})
        if model_type == "qwen2":
            sd.update({p + "self_attn.q_proj.bias": r(heads * head_dim), p + "self_attn.k_proj.bias": r(kv * head_dim),
                       p + "self_attn.v_proj.bias": r(kv * head_dim)})
        if model_type == "gemma3_text":
            sd.update({p + "self_attn.q_norm.weight": norm(head_dim), p + "self_attn.k_norm.weight": norm(head_dim),
                       p + "pre_feedforward_layernorm.weight": norm(hidden),
                       p + "post_feedforward_layernorm.weight": norm(hidden)})
    return sd


_TO_GGUF = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
            "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
            "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
            "input_layernorm": "attn_norm"}


def gguf_name(hf: str, model_type: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, i, *rest = hf.split(".")
    part, kind = ".".join(rest[:-1]), rest[-1]
    if model_type == "gemma3_text":
        extra = {"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                 "post_feedforward_layernorm": "post_ffw_norm"}
    else:
        extra = {"post_attention_layernorm": "ffn_norm"}
    return f"blk.{i}.{extra.get(part, _TO_GGUF.get(part))}.{kind}"


def write_gguf(path: Path, model_type: str, sd: dict, *, heads: int = 4, kv: int = 2, head_dim: int = 8,
               context: int = 128, qtype: str = "F32", name: Optional[str] = None, drop_keys=(),
               extra_keys: Optional[dict] = None, extra_tensors: Optional[dict] = None,
               arch: Optional[str] = None, tokenizer: str = "gpt2", sliding_window: int = 16) -> Path:
    """Write ``sd`` (a Hugging Face state dict) as llama.cpp would, with a small byte-level vocabulary.

    ``qtype`` is the storage of 2-D weights ("F32", "F16", "Q8_0"…; 1-D tensors stay F32).
    ``drop_keys`` leaves metadata keys out (their suffix after ``{arch}.``, or a full key),
    ``extra_keys`` adds or overrides keys (full names), ``extra_tensors`` adds raw tensors
    (name → (array, GGMLQuantizationType or None)).
    """
    import gguf

    arch = arch or ARCH_OF[model_type]
    w = gguf.GGUFWriter(str(path), arch)
    hidden = sd["model.embed_tokens.weight"].shape[1]
    vocab = sd["model.embed_tokens.weight"].shape[0]
    layers = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("model.layers."))
    ff = sd["model.layers.0.mlp.gate_proj.weight"].shape[0]
    keys = {
        f"{arch}.context_length": (context, "u32"), f"{arch}.embedding_length": (hidden, "u32"),
        f"{arch}.block_count": (layers, "u32"), f"{arch}.feed_forward_length": (ff, "u32"),
        f"{arch}.attention.head_count": (heads, "u32"), f"{arch}.attention.head_count_kv": (kv, "u32"),
        f"{arch}.rope.freq_base": (10000.0 if model_type != "gemma3_text" else 1e6, "f32"),
        f"{arch}.attention.layer_norm_rms_epsilon": (1e-6, "f32"),
        "general.name": (name or f"tiny {model_type}", "str"),
    }
    if model_type == "gemma3_text" or head_dim * heads != hidden:
        keys[f"{arch}.attention.key_length"] = (head_dim, "u32")
        keys[f"{arch}.attention.value_length"] = (head_dim, "u32")
    if model_type == "gemma3_text":
        keys[f"{arch}.attention.sliding_window"] = (sliding_window, "u32")
    if model_type in ("llama", "mistral"):
        keys[f"{arch}.rope.dimension_count"] = (head_dim, "u32")
        keys[f"{arch}.vocab_size"] = (vocab, "u32")
    for k in drop_keys:
        keys.pop(k, None)
        keys.pop(f"{arch}.{k}", None)
    adders = {"u32": w.add_uint32, "f32": w.add_float32, "str": w.add_string, "bool": w.add_bool,
              "i32": w.add_int32, "arr": w.add_array}
    for k, (v, kind) in keys.items():
        if k == "general.name":
            w.add_name(v)
        else:
            adders[kind](k, v)
    _add_tokenizer(w, vocab, tokenizer)
    for k, v in (extra_keys or {}).items():
        kind = "bool" if isinstance(v, bool) else "u32" if isinstance(v, int) else "f32" if isinstance(v, float) \
            else "str" if isinstance(v, str) else "arr"
        adders[kind](k, v)
    q = getattr(gguf.GGMLQuantizationType, qtype)
    for hf, t in sd.items():
        t = np.asarray(t, dtype=np.float32)
        n = gguf_name(hf, model_type)
        if model_type in ("llama", "mistral") and (".attn_q." in n or ".attn_k." in n):
            t = llama_cpp_permute(t, heads if ".attn_q." in n else kv)
        if model_type == "gemma3_text" and n.endswith("norm.weight"):
            t = t + np.float32(1.0)
        if t.ndim == 2 and q != gguf.GGMLQuantizationType.F32:
            data = gguf.quants.quantize(t, q)
            w.add_tensor(n, data, raw_shape=data.shape, raw_dtype=q)
        else:
            w.add_tensor(n, t)
    for n, (arr, raw) in (extra_tensors or {}).items():
        if raw is None:
            w.add_tensor(n, arr)
        else:
            w.add_tensor(n, arr, raw_shape=arr.shape, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def _add_tokenizer(w, vocab: int, kind: str) -> None:
    if kind == "none":
        return
    if kind == "gpt2":
        from tokenizers import pre_tokenizers

        alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        base = specials + alphabet
        tokens = base[:vocab - 1] + [f"<extra_{i}>" for i in range(max(0, vocab - 1 - len(base)))]
        tokens.append(tokens[3] + tokens[4])  # one merge, so that the merge list is not empty
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_types([3 if t in specials else 1 for t in tokens])
        w.add_token_merges([f"{tokens[3]} {tokens[4]}"])
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_pad_token_id(2)
        w.add_unk_token_id(0)
    else:
        w.add_tokenizer_model(kind)
        w.add_token_list([f"<t{i}>" for i in range(vocab)])
