"""The float64 steps that every family's layer is made of, read from a loaded model's modules:
a linear layer, the norms, an activation, the attention of all heads, the fused Q/K/V, the
feed-forward and BERT's whole layer. :mod:`.reference_model` (the single-stack families),
:mod:`.reference_model_deberta` and :mod:`.reference_model_seq2seq` compose them; each step's
formula is in :mod:`attnscope.reference`. Arrays are float64 ``(L, ·)``; per head ``(H, L, ·)``."""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import reference as R
from .errors import InputError

Array = np.ndarray


def silu(x) -> Array:
    """SiLU (swish): ``x·σ(x) = x / (1 + e^(−x))``, the gate of SwiGLU (Llama, Qwen2, Mistral)."""
    x = R.as_f64(x)
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-x))


def activation(name: str, x) -> Array:
    """The activation a config names ("gelu", "gelu_tanh", "relu", "silu") applied to ``x``, float64."""
    fns = {"gelu": R.gelu, "gelu_tanh": lambda v: R.gelu(v, "tanh"), "relu": R.relu, "silu": silu}
    if name not in fns:
        raise InputError(f"unknown activation {name!r}; the float64 path knows {', '.join(fns)}")
    return fns[name](x)


def linear_of(x: Array, lin) -> Array:
    """``x Wᵀ + b`` of an ``nn.Linear`` in float64."""
    return R.linear(x, lin.weight, lin.bias)


def layer_norm_of(x: Array, norm) -> Array:
    """An ``nn.LayerNorm`` in float64 (its γ, β and ε)."""
    return R.layer_norm(x, norm.weight, norm.bias, float(norm.eps))


def rms_norm_of(x: Array, norm) -> Array:
    """attnscope's RMSNorm in float64 (its w, ε and offset: Gemma's 1 + w)."""
    return R.rms_norm(x, norm.weight, float(norm.eps), float(norm.offset))


def attention(q: Array, k: Array, v: Array, allowed: Array, factor: float, prefix: str,
              bias: Optional[Array] = None) -> dict:
    """Every head's scores, scaled, masked, weights and z; query head h reads k/v head h // group.
    ``q (H, L, d)``, ``k, v (H_kv, S, d)``, ``allowed (L, S)``; ``bias (H, L, S)``: an additive
    score term (T5's position bias, DeBERTa's scaled c2p + p2c), added after the scaling, before
    the mask, as the kernels do (``masked = scores · factor + bias``)."""
    group = q.shape[0] // k.shape[0]
    kk, vv = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (H, S, d)
    scores = R.raw_scores(q, kk)  # (H, L, S)
    scaled = scores * factor
    biased = scaled if bias is None else scaled + bias
    masked = np.where(allowed[None], biased, -np.inf)
    weights = R.softmax(masked)
    z = R.weighted_sum(weights, vv)  # (H, L, d_v)
    out = {f"{prefix}.scores": scores, f"{prefix}.scaled": scaled, f"{prefix}.masked": masked,
           f"{prefix}.weights": weights, f"{prefix}.z": z, f"{prefix}.merged": R.merge_heads(z),
           f"{prefix}.allowed": allowed}
    if bias is not None:
        out[f"{prefix}.bias"] = bias
    return out


def qkv(a_in: Array, attn) -> tuple[Array, Array, Array]:
    """x W_Q + b, x W_K + b, x W_V + b from the fused projection: (H, L, d), (H_kv, L, d) × 2."""
    H, Hkv, d = attn.n_heads, attn.n_kv_heads, attn.d_head
    y = linear_of(a_in, attn.W_qkv)  # (L, (H + 2 H_kv)·d)
    q, k, v = y[:, :H * d], y[:, H * d:(H + Hkv) * d], y[:, (H + Hkv) * d:]
    return R.split_heads(q, H), R.split_heads(k, Hkv), R.split_heads(v, Hkv)


def feed_forward(ffn, act: str, f_in: Array, p: str, gated: bool) -> dict:
    """``{p}.ffn.*`` of a feed-forward module on ``f_in (L, d)``: ``pre`` → act → ``hidden`` → ``out``;
    gated (Llama, T5 v1.1: ``W_1`` = [W_gate; W_up]): ``gate_pre``, ``up``, ``gate`` = act(gate_pre),
    ``hidden`` = gate ⊙ up."""
    f: dict = {}
    if gated:
        d_ff = ffn.W_2.weight.shape[1]
        gu = linear_of(f_in, ffn.W_1)  # (L, 2·d_ff): [W_gate; W_up]
        f[f"{p}.ffn.gate_pre"], f[f"{p}.ffn.up"] = gu[:, :d_ff], gu[:, d_ff:]
        f[f"{p}.ffn.gate"] = activation(act, f[f"{p}.ffn.gate_pre"])
        f[f"{p}.ffn.hidden"] = f[f"{p}.ffn.gate"] * f[f"{p}.ffn.up"]
    else:
        f[f"{p}.ffn.pre"] = linear_of(f_in, ffn.W_1)
        f[f"{p}.ffn.hidden"] = activation(act, f[f"{p}.ffn.pre"])
    f[f"{p}.ffn.out"] = linear_of(f[f"{p}.ffn.hidden"], ffn.W_2)
    return f


def encoder_layer(model, i: int, x: Array, allowed: Array, attend=None) -> dict:
    """One BERT-style layer (post-LN, or pre-LN as GPT-2): every trace name of ``layers.{i}``.
    ``attend(q, k, v, prefix) → dict``: the attention of a family with its own score terms
    (DeBERTa's); by default :func:`attention` with the scoring's factor."""
    layer, c = model.layers[i], model.config
    p = f"layers.{i}"
    pre = bool(getattr(layer, "pre_norm", False))
    a_in = layer_norm_of(x, layer.ln1) if pre else x
    q, k, v = qkv(a_in, layer.attn)
    f = {f"{p}.attn_in": a_in, f"{p}.attn.q": q, f"{p}.attn.k": k, f"{p}.attn.v": v}
    if attend is None:
        factor = float(R.score_factor(c.scoring, c.d_head, layer.attn.scale))  # a float: no tensor τ here
        f.update(attention(q, k, v, allowed, factor, f"{p}.attn"))
    else:
        f.update(attend(q, k, v, f"{p}.attn"))
    f[f"{p}.attn.out"] = linear_of(f[f"{p}.attn.merged"], layer.attn.W_O)
    r = f[f"{p}.attn_resid"] = x + f[f"{p}.attn.out"]
    f_in = f[f"{p}.ffn_in"] = layer_norm_of(r, layer.ln2 if pre else layer.ln1)
    f.update(feed_forward(layer.ffn, c.activation, f_in, p, gated=False))
    s = f[f"{p}.ffn_resid"] = (r if pre else f_in) + f[f"{p}.ffn.out"]
    f[f"{p}.out"] = s if pre else layer_norm_of(s, layer.ln2)
    return f
