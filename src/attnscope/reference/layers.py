"""The rest of a Transformer layer in float64: the norms, linear maps, activations, and the
regrouping of features into heads (one fused projection, shared k/v heads)."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import ConfigError
from ..i18n import error
from .arrays import Array, as_f64


def layer_norm(x, weight=None, bias=None, eps: float = 1e-5) -> Array:
    """``(x − mean) / √(var + ε) · weight + bias`` over the last axis (biased variance, as torch)."""
    x = as_f64(x)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if weight is not None:
        y = y * as_f64(weight)
    if bias is not None:
        y = y + as_f64(bias)
    return y


def rms_norm(x, weight=None, eps: float = 1e-6, offset: float = 0.0) -> Array:
    """``x / √(mean(x²) + ε) · (offset + w)`` over the last axis (Llama: offset 0, Gemma: 1)."""
    x = as_f64(x)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    if weight is None:
        return y * (offset + 1.0) if offset else y
    return y * (offset + as_f64(weight))


def linear(x, weight, bias=None) -> Array:
    """``x @ Wᵀ + b`` with ``W (out, in)`` as stored by ``nn.Linear``."""
    y = as_f64(x) @ as_f64(weight).T
    return y if bias is None else y + as_f64(bias)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x, approximate: str = "none") -> Array:
    """GELU: ``x·Φ(x)`` exactly (erf), or the tanh approximation (GPT-2's ``gelu_new``)."""
    x = as_f64(x)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def relu(x) -> Array:
    return np.maximum(as_f64(x), 0.0)


def split_heads(x, n_heads: int) -> Array:
    """``(..., L, d_model)`` → ``(..., H, L, d_head)``: head i is features i·d_head … (i+1)·d_head."""
    x = as_f64(x)
    *lead, L, d = x.shape
    return np.moveaxis(x.reshape(*lead, L, n_heads, d // n_heads), -2, -3)


def merge_heads(x) -> Array:
    """``(..., H, L, d_head)`` → ``(..., L, H·d_head)``: heads concatenated along features."""
    x = np.moveaxis(as_f64(x), -3, -2)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def split_qkv(fused, n_heads: int, n_kv_heads: Optional[int] = None) -> tuple[Array, Array, Array]:
    """The fused product ``X·W_QKV (..., L, (H + 2·H_kv)·d)`` → ``Q (..., L, H·d)``, ``K``, ``V``
    ``(..., L, H_kv·d)``: its columns are [Q | K | V] (GPT-2's ``c_attn``, Phi-3's ``qkv_proj``).
    Nothing is computed; the columns are only regrouped."""
    x = as_f64(fused)
    kv = n_heads if n_kv_heads is None else n_kv_heads
    width = x.shape[-1]
    if width % (n_heads + 2 * kv):
        raise error(ConfigError, "errors.reference_fused_width", width=width, blocks=n_heads + 2 * kv)
    d = width // (n_heads + 2 * kv)
    return x[..., :n_heads * d], x[..., n_heads * d:(n_heads + kv) * d], x[..., (n_heads + kv) * d:]


def head_columns(head: int, d_head: int) -> slice:
    """The columns of head ``head`` in a matrix that holds every head side by side (Q, K, V, the
    concatenated outputs, W_Q's columns): ``head·d_head … (head + 1)·d_head − 1``."""
    return slice(int(head) * int(d_head), (int(head) + 1) * int(d_head))


def kv_head(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The key/value head that query head ``head`` reads: ``head // (n_heads / n_kv_heads)``."""
    return int(head) // (int(n_heads) // int(n_kv_heads))
