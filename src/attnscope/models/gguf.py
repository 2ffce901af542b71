"""GGUF checkpoints (llama.cpp's format) → a Hugging Face config dict and state dict.

``load_gguf(path)`` reads a ``.gguf`` file of architecture llama (Llama, SmolLM2, Mistral),
qwen2 or gemma3 (text), and returns what a Hub folder would hold::

    ckpt = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    ckpt.config["num_key_value_heads"]              # 3, the config.json values
    ckpt.state_dict["model.layers.0.self_attn.q_proj.weight"].shape   # (576, 576) float32
    ckpt.tokenizer                                  # GGUFTokenizer (see gguf_tokenizer)

Weights are dequantized tensor by tensor (and large ones a chunk of rows at a time) with the
``gguf`` package's dequantizers, to float32 (or float64: the same values, widened). Two things
llama.cpp's converter did to the Hugging Face weights are undone, so that the state dict equals
the one ``transformers`` builds from the same file:

* **Q/K row permutation** (llama only): llama.cpp's rotary embedding rotates adjacent pairs
  (x0, x1), (x2, x3)…, Hugging Face's rotates halves (x_i, x_{i+d/2}); the converter reorders
  the rows of each head of ``q_proj`` / ``k_proj`` (``permute`` in convert_hf_to_gguf.py), and
  :func:`unpermute_qk` puts them back. Qwen2 and Gemma 3 use half rotation in llama.cpp too,
  and were not permuted.
* **Gemma's norm offset**: Gemma's RMSNorm multiplies by (1 + w); the converter stores 1 + w,
  so every ``*norm.weight`` (QK-norms too) comes back as the stored value − 1, Hugging Face's w.

Every unsupported architecture, tensor type, unknown or missing tensor, or a missing metadata
key without a documented default (:data:`gguf_config.DOCUMENTED_DEFAULTS`) is a ModelLoadError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Union

import torch

from ..errors import ConfigError, ModelLoadError
from ..i18n import error
from .gguf_config import DOCUMENTED_DEFAULTS, SUPPORTED_ARCHITECTURES, config_from_gguf, llama3_from_factors
from .gguf_file import CHUNK_BYTES, GGUFFile, TensorInfo

if TYPE_CHECKING:
    from .gguf_tokenizer import GGUFTokenizer

__all__ = ["GGUFCheckpoint", "load_gguf", "read_gguf_config", "gguf_state_dict", "gguf_names", "hf_tensor", "hf_name",
           "check_complete", "unpermute_qk",
           "DOCUMENTED_DEFAULTS", "SUPPORTED_ARCHITECTURES"]

# GGUF name (after "blk.N.") → Hugging Face name (after "model.layers.N."), and an architecture's own
_BLOCK = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}
_BLOCK_ARCH = {
    # Gemma 3 has four norms per block (sandwich norms around attention and MLP)
    "gemma3": {"post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
               "post_ffw_norm": "post_feedforward_layernorm"},
}
_TOP = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLK = re.compile(r"blk\.(\d+)\.([a-z_]+)\.(weight|bias)")
#: tensors that carry no weight of the Hugging Face model (read into the config instead)
_NOT_WEIGHTS = {"rope_freqs.weight"}


def hf_name(gguf_name: str, arch: str) -> Optional[str]:
    """The Hugging Face state-dict key of a GGUF tensor (``blk.3.attn_q.weight`` →
    ``model.layers.3.self_attn.q_proj.weight``), or None for a name this architecture lacks."""
    m = _BLK.fullmatch(gguf_name)
    if m:
        part = _BLOCK_ARCH.get(arch, {}).get(m[2], _BLOCK.get(m[2]))
        if part is None or (m[2] in ("attn_q_norm", "attn_k_norm") and arch != "gemma3"):
            return None
        return f"model.layers.{m[1]}.{part}.{m[3]}"
    base, _, kind = gguf_name.rpartition(".")
    if base in _TOP and kind == "weight":
        return f"{_TOP[base]}.weight"
    return None


def unpermute_qk(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo llama.cpp's ``permute(w, n_head)`` of a q or k projection (weight (n_heads·d, in) or
    bias (n_heads·d,)): within each head, rows ``2j, 2j+1`` (a rotated pair) go back to ``j, j+d/2``."""
    d = w.shape[0] // n_heads
    return w.reshape(n_heads, d // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape).contiguous()


@dataclass
class GGUFCheckpoint:
    """What :func:`load_gguf` read.

    Attributes:
        path: the ``.gguf`` file.
        architecture: GGUF's ``general.architecture`` ("llama", "qwen2", "gemma3").
        config: Hugging Face ``config.json`` dict (``model_type`` "llama", "mistral", "qwen2" or
            "gemma3_text"), Hub spelling (``rope_theta``, ``rope_scaling``, ``layer_types``…).
        defaults: config keys the file does not store → where their value comes from.
        state_dict: Hugging Face name → tensor (float32 or float64, on CPU). No ``lm_head.weight``
            when ``config["tie_word_embeddings"]``: the head is ``model.embed_tokens.weight``.
        qtypes: Hugging Face name → the GGUF storage type ("Q4_K", "F32", …), for display.
        metadata: the file's scalar metadata (arrays of more than 64 items left out).
        tokenizer: the :class:`~.gguf_tokenizer.GGUFTokenizer` (None with ``tokenizer=False``).
    """

    path: Path
    architecture: str
    config: dict
    defaults: dict
    state_dict: dict = field(repr=False)
    qtypes: dict = field(repr=False)
    metadata: dict = field(repr=False)
    tokenizer: Optional[GGUFTokenizer] = field(default=None, repr=False)


def read_gguf_config(path: Union[str, Path, GGUFFile]) -> tuple[dict, dict]:
    """``(config, defaults)`` of a GGUF file without reading its weights (see :func:`load_gguf`)."""
    f = path if isinstance(path, GGUFFile) else GGUFFile(path)
    config, defaults = config_from_gguf(f.metadata, f.tensors, f.path)
    if (config.get("rope_scaling") or {}).get("_from_tensor"):
        factors = f.dequantize(f.tensors["rope_freqs.weight"], torch.float64).tolist()
        orig = f.metadata.get(f"{f.architecture}.rope.scaling.original_context_length")
        config["rope_scaling"] = llama3_from_factors(factors, config["rope_theta"], config["head_dim"], orig, f.path)
    return config, defaults


def gguf_state_dict(f: GGUFFile, config: dict, *, dtype: torch.dtype = torch.float32,
                    progress: Optional[Callable[[TensorInfo], None]] = None) -> tuple[dict, dict]:
    """``(state_dict, qtypes)``: every weight of ``f`` under its Hugging Face name, dequantized.

    ``progress`` is called after each tensor. Raises ModelLoadError for a tensor name the
    architecture does not have, a shape that disagrees with ``config``, or a missing weight.
    """
    sd: dict[str, torch.Tensor] = {}
    qtypes: dict[str, str] = {}
    for name, info in gguf_names(f).items():
        sd[name] = hf_tensor(f, info, config, dtype)
        qtypes[name] = info.qtype.name
        if progress is not None:
            progress(info)
    check_complete(sd, config, f.architecture, f.path)
    return sd, qtypes


def gguf_names(f: GGUFFile) -> dict[str, TensorInfo]:
    """Hugging Face name → the file's tensor, for every weight of ``f``, in file order (the
    tensors that carry no weight left out); ModelLoadError for a name the architecture lacks."""
    arch = f.architecture
    out = {}
    for info in f.iter_tensors():
        if info.name in _NOT_WEIGHTS:
            continue
        name = hf_name(info.name, arch)
        if name is None:
            raise error(ModelLoadError, "errors.gguf_foreign_tensor", path=f.path, name=repr(info.name), arch=arch)
        out[name] = info
    return out


def hf_tensor(f: GGUFFile, info: TensorInfo, config: dict, dtype: torch.dtype = torch.float32, *,
              chunk_bytes: int = CHUNK_BYTES) -> torch.Tensor:
    """One tensor of ``f`` dequantized to ``dtype`` as Hugging Face holds it: llama's q/k rows put
    back in order, Gemma's norms less 1 (see the module docstring); shape ``info.shape``.
    ``chunk_bytes``: see :meth:`.gguf_file.GGUFFile.dequantize`."""
    arch = f.architecture
    w = f.dequantize(info, dtype, chunk_bytes=chunk_bytes)
    if arch == "llama" and (".attn_q." in info.name or ".attn_k." in info.name):
        heads = config["num_attention_heads"] if ".attn_q." in info.name else config["num_key_value_heads"]
        hd = config["head_dim"]
        if w.shape[0] != heads * hd:
            raise error(ModelLoadError, "errors.gguf_qk_rows", path=f.path, name=info.name, rows=w.shape[0],
                        heads=heads, head_dim=hd)
        w = unpermute_qk(w, heads)
    if arch == "gemma3" and (hf_name(info.name, arch) or "").endswith("norm.weight"):
        w -= 1.0  # stored as 1 + w (see the module docstring)
    return w


def _expected_shapes(config: dict, arch: str) -> dict[str, tuple[int, ...]]:
    h, hd, n, kv = config["hidden_size"], config["head_dim"], config["num_attention_heads"], config["num_key_value_heads"]
    ff, V = config["intermediate_size"], config["vocab_size"]
    out = {"model.embed_tokens.weight": (V, h), "model.norm.weight": (h,)}
    if not config["tie_word_embeddings"]:
        out["lm_head.weight"] = (V, h)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.update({p + "self_attn.q_proj.weight": (n * hd, h), p + "self_attn.k_proj.weight": (kv * hd, h),
                    p + "self_attn.v_proj.weight": (kv * hd, h), p + "self_attn.o_proj.weight": (h, n * hd),
                    p + "mlp.gate_proj.weight": (ff, h), p + "mlp.up_proj.weight": (ff, h),
                    p + "mlp.down_proj.weight": (h, ff), p + "input_layernorm.weight": (h,),
                    p + "post_attention_layernorm.weight": (h,)})
        if arch == "qwen2" or config.get("attention_bias"):
            out.update({p + "self_attn.q_proj.bias": (n * hd,), p + "self_attn.k_proj.bias": (kv * hd,),
                        p + "self_attn.v_proj.bias": (kv * hd,)})
        if arch == "gemma3":
            out.update({p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                        p + "pre_feedforward_layernorm.weight": (h,), p + "post_feedforward_layernorm.weight": (h,)})
    return out


def check_complete(sd: dict, config: dict, arch: str, path) -> None:
    """ModelLoadError unless ``sd`` (name → anything with a ``shape``: tensors, or meta tensors for a
    check before reading) has every weight ``config`` needs, in its shape, and nothing foreign."""
    want = _expected_shapes(config, arch)
    for name, shape in want.items():
        if name not in sd:
            raise error(ModelLoadError, "errors.gguf_no_tensor", path=path, name=name, arch=arch)
        if tuple(sd[name].shape) != shape:
            raise error(ModelLoadError, "errors.gguf_tensor_shape", path=path, name=name, got=tuple(sd[name].shape),
                        expected=shape)
    extra = sorted(set(sd) - set(want))
    optional = {n for n in extra if n.endswith(".bias") or n == "lm_head.weight"}
    if set(extra) - optional:
        raise error(ModelLoadError, "errors.gguf_unexpected_tensors", path=path, names=sorted(set(extra) - optional)[:3],
                    arch=arch)


def load_gguf(path: Union[str, Path], *, dtype: torch.dtype = torch.float32, tokenizer: bool = True,
              progress: Optional[bool] = None) -> GGUFCheckpoint:
    """Read a ``.gguf`` file: config, dequantized state dict and (by default) its tokenizer.

    Args:
        path: the file.
        dtype: torch.float32 (default) or torch.float64.
        tokenizer: also build the tokenizer from the metadata (:func:`gguf_tokenizer.tokenizer_from_gguf`).
        progress: show a progress bar while dequantizing (default: when stderr is a terminal).

    Raises ModelLoadError (see the module docstring) and ConfigError for another dtype.
    """
    if dtype not in (torch.float32, torch.float64):
        raise error(ConfigError, "errors.gguf_dtype", dtype=dtype)
    f = GGUFFile(path)
    try:
        config, defaults = read_gguf_config(f)
        bar = _progress_bar(f, progress)
        try:
            sd, qtypes = gguf_state_dict(f, config, dtype=dtype,
                                         progress=(lambda info: bar.update(info.nbytes)) if bar else None)
        finally:
            if bar:
                bar.close()
        tok = None
        if tokenizer:
            from .gguf_tokenizer import tokenizer_from_metadata
            tok = tokenizer_from_metadata(f.metadata, f.path)
        meta = {k: v for k, v in f.metadata.items() if not (isinstance(v, list) and len(v) > 64)}
        return GGUFCheckpoint(f.path, f.architecture, config, defaults, sd, qtypes, meta, tok)
    finally:
        f.close()


def _progress_bar(f: GGUFFile, progress: Optional[bool]):
    import sys

    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm.auto import tqdm

    total = sum(t.nbytes for t in f.iter_tensors())
    return tqdm(total=total, unit="B", unit_scale=True, desc=f"dequantizing {f.path.name}", leave=False)
