"""The float64 twin of :mod:`attnscope.attribution.norm_methods` (``norm``, ``globenc``, ``alti``,
``value_zeroing``):
the same formulas in NumPy on the float64 forward's values (:func:`attnscope.reference_model.forward`),
the weights read from the model's modules.

The attention block of a layer, walked over its recipe, as a sum over source tokens
``D (L, L + 1, d)`` (``D[i, j]`` = token j's part of token i's value, ``D[i, L]`` the bias term):
``x`` → ``δ_ij x_i``; ``same``/``add`` copy or sum; a norm is linearised with the token's own
statistics (LayerNorm ``(D − mean D) / σ(Σ D) ⊙ γ`` and β to the bias; RMSNorm ``D / rms(Σ D) ⊙
(offset + w)``); attention ``Σ_h α^h (D W_V^h) W_O^h`` with the forward's α (query head h reads
k/v head h // group). The walk ends where the MLP's residual sum reads the stream. Arrays are
float64; this module is not imported by :mod:`attnscope.reference`'s ``__init__``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .arrays import as_f64

Array = np.ndarray


def identity(x: Array) -> Array:
    """``D[i, i] = x_i`` for ``x (L, d)``: (L, L + 1, d)."""
    L, d = x.shape
    D = np.zeros((L, L + 1, d))
    D[np.arange(L), np.arange(L)] = x
    return D


def norm_terms(D: Array, weight: Array, bias: Optional[Array], eps: float, rms_offset: Optional[float]) -> Array:
    """A norm on ``D (L, L + 1, d)`` linearised with each token's own statistics; ``rms_offset``
    None: LayerNorm (γ = weight, β = bias), else RMSNorm with scale ``offset + w``."""
    s = D.sum(1)  # (L, d)
    if rms_offset is not None:
        return D / np.sqrt((s * s).mean(-1) + eps)[:, None, None] * (rms_offset + weight)
    out = (D - D.mean(-1, keepdims=True)) / np.sqrt(s.var(-1) + eps)[:, None, None] * weight
    if bias is not None:
        out[:, -1] += bias
    return out


def attention_terms(D: Array, W_V: Array, b_V: Optional[Array], W_O: Array, b_O: Optional[Array],
                    weights: Array, n_kv: int) -> Array:
    """``Σ_h Σ_k α^h_ik (D[k, j] W_V^h) W_O^h``: ``W_V (H_kv·d_head, d)``, ``W_O (d, H·d_head)``
    (``nn.Linear`` layouts), ``weights (H, L, L)``; b_V and b_O in the bias term. (L, L + 1, d)."""
    H, L = weights.shape[0], D.shape[0]
    dh = W_V.shape[0] // n_kv
    V = D @ W_V.T  # (L, L + 1, H_kv·d_head)
    if b_V is not None:
        V[:, -1] += b_V
    V = np.repeat(V.reshape(L, L + 1, n_kv, dh), H // n_kv, axis=2)  # (L, L + 1, H, d_head)
    Z = np.einsum("hik,kjhd->ijhd", weights, V)  # (L, L + 1, H, d_head)
    out = Z.reshape(L, L + 1, H * dh) @ W_O.T  # (L, L + 1, d)
    if b_O is not None:
        out[:, -1] += b_O
    return out


def kobayashi(v: Array, weights: Array, W_O: Array) -> tuple[Array, Array]:
    """Per head ``α^h_ij ‖v^h_j W_O^h‖`` (H, L, L) and ``‖Σ_h α^h_ij v^h_j W_O^h‖`` (L, L); ``v (H_kv, L, d_head)``."""
    H = weights.shape[0]
    dh = v.shape[-1]
    vv = np.repeat(v, H // v.shape[0], axis=0)  # (H, L, d_head)
    f = np.einsum("hjd,ehd->hje", vv, W_O.reshape(-1, H, dh))  # (H, L, d)
    return weights * np.linalg.norm(f, axis=-1)[:, None, :], np.linalg.norm(np.einsum("hij,hje->ije", weights, f), axis=-1)


def normalise_rows(m: Array) -> Array:
    s = m.sum(-1, keepdims=True)
    return m / np.where(s > 0, s, 1.0)


def globenc_layer(T: Array) -> Array:
    """``‖T_i(x_j)‖₂`` rows normalised, (L, L)."""
    return normalise_rows(np.linalg.norm(T, axis=-1))


def alti_layer(T: Array, y: Array) -> Array:
    """``max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁)`` rows normalised, (L, L)."""
    return normalise_rows(np.maximum(np.abs(y).sum(-1)[:, None] - np.abs(y[:, None] - T).sum(-1), 0.0))


def rollout(mats, upto: int) -> Array:
    """``M_upto · … · M_0``."""
    acc = mats[0]
    for m in mats[1:upto + 1]:
        acc = m @ acc
    return acc


def _norm_of(D: Array, norm) -> Array:
    offset = float(norm.offset) if hasattr(norm, "offset") else None
    bias = None if getattr(norm, "bias", None) is None else as_f64(norm.bias)
    return norm_terms(D, as_f64(norm.weight), bias, float(norm.eps), offset)


def walk_recipe(steps, x: Array, norm: Callable[[Array, str], Array], block: Callable[[Any, Array], Array],
                stop: Optional[str] = None) -> dict:
    """A layer recipe's ``steps`` run on values from ``x``: ``same``/``add`` copy or sum, a norm step
    is ``norm(a, module name)``, any other step ``block(step, a)``; ends after the step named
    ``stop``. The values by name."""
    vals = {"x": x}
    for s in steps:
        a = vals[s.args[0]]
        if s.op == "same":
            vals[s.name] = a
        elif s.op == "add":
            vals[s.name] = a + vals[s.args[1]]
        elif s.op == "norm":
            vals[s.name] = norm(a, str(s.module))
        else:
            vals[s.name] = block(s, a)
        if s.name == stop:
            break
    return vals


def value_weights(attn) -> tuple[Array, Optional[Array]]:
    """An attention module's value rows of ``W_qkv`` in float64: ``W_V (H_kv·d_head, d)`` and its
    bias (None without one)."""
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    rows = slice((H + Hkv) * dh, (H + 2 * Hkv) * dh)
    b = attn.W_qkv.bias
    return as_f64(attn.W_qkv.weight[rows]), None if b is None else as_f64(b[rows])


def decompose_layer(model, f: dict, index: int) -> tuple[Array, Array]:
    """Layer ``index``'s attention block in float64 from the forward's values ``f``: ``T (L, L, d)``
    (token j's part of token i's block output) and ``y (L, d)`` (the output, bias included)."""
    from ..attribution.decompose import block_end, recipe_of, stack_of  # the recipe and where its block ends
    from ..reference_model import layer_input

    recipe, layer = recipe_of(stack_of(model, "the float64 twin"), index), model.layers[index]
    end = block_end(recipe)

    def attention(s, a: Array) -> Array:  # the walk ends before the MLP
        attn = getattr(layer, s.name)
        bo = attn.W_O.bias
        return attention_terms(a, *value_weights(attn), as_f64(attn.W_O.weight), None if bo is None else as_f64(bo),
                               f[f"layers.{index}.{s.name}.weights"], attn.n_kv_heads)

    D = walk_recipe(recipe.steps, identity(layer_input(f, index)), lambda a, m: _norm_of(a, getattr(layer, m)),
                    attention, stop=end)
    if end not in D:
        raise ValueError(f"layer recipe {recipe.name!r}: its step {end!r} was not reached")
    return D[end][:, :-1], D[end].sum(1)


def zeroed_layer(model, f: dict, index: int, j: int) -> Array:
    """Layer ``index`` rerun in float64 over its recipe with token ``j``'s value vectors 0 in every
    head (α unchanged: values do not enter the scores), MLP included: its output (L, d)."""
    from ..attribution.decompose import recipe_of, stack_of
    from ..reference_model import layer_input
    from ..reference_model_blocks import feed_forward, linear_of, norm_of

    layer, p = model.layers[index], f"layers.{index}"

    def block(s, a: Array) -> Array:
        if s.op == "mlp":
            return feed_forward(getattr(layer, s.name), model.config.activation, a, "m")["m.out"]
        # attention: α (H, L, L) from the forward, v (H_kv, L, d_head) of this input with row j zeroed
        attn = getattr(layer, s.name)
        H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
        W_V, b_V = value_weights(attn)
        v = a @ W_V.T + (0.0 if b_V is None else b_V)  # (L, H_kv·d_head)
        v = v.reshape(v.shape[0], Hkv, dh).transpose(1, 0, 2).copy()  # (H_kv, L, d_head)
        v[:, j] = 0.0
        z = f[f"{p}.{s.name}.weights"] @ np.repeat(v, H // Hkv, axis=0)  # (H, L, d_head)
        return linear_of(z.transpose(1, 0, 2).reshape(z.shape[1], H * dh), attn.W_O)  # (L, d)

    steps = recipe_of(stack_of(model, "the float64 twin"), index).steps
    return walk_recipe(steps, layer_input(f, index), lambda a, m: norm_of(a, getattr(layer, m)), block)["out"]


def value_zeroing_layer(model, f: dict, index: int) -> Array:
    """Value zeroing of layer ``index`` (L, L): [i, j] = 1 − cos(layer output i with token j's values
    zeroed, the forward's), rows normalised."""
    out = f[f"layers.{index}.out"]  # (L, d)
    L = out.shape[0]
    C = np.zeros((L, L))
    for j in range(L):
        new = zeroed_layer(model, f, index, j)
        C[:, j] = 1.0 - (new * out).sum(-1) / (np.linalg.norm(new, axis=-1) * np.linalg.norm(out, axis=-1))
    return normalise_rows(np.maximum(C, 0.0))


def block_methods(model, text: str, zeroing: bool = False) -> dict:
    """``norm`` (n_layers, L, L) with per-head ``norm_heads`` (n_layers, H, L, L), and per layer
    ``globenc``, ``alti`` (and with ``zeroing`` ``value_zeroing``) (n_layers, L, L), in float64 from
    :func:`attnscope.reference_model.forward`."""
    from ..reference_model import forward

    f = forward(model, text)
    out: dict = {"norm": [], "norm_heads": [], "globenc": [], "alti": [], "value_zeroing": []}
    for i in range(model.config.n_layers):
        heads, summed = kobayashi(f[f"layers.{i}.attn.v"], f[f"layers.{i}.attn.weights"],
                                  as_f64(model.layers[i].attn.W_O.weight))
        T, y = decompose_layer(model, f, i)
        for k, v in (("norm", summed), ("norm_heads", heads), ("globenc", globenc_layer(T)), ("alti", alti_layer(T, y))):
            out[k].append(v)
        if zeroing:
            out["value_zeroing"].append(value_zeroing_layer(model, f, i))
    return {k: np.stack(v) for k, v in out.items() if v}
