"""One head's QK and OV circuits as :class:`~.factored.Factored` matrices (Elhage et al. 2021).

Row-vector convention, as the model computes (``x @ W``): a residual vector x (d,) gives the head's
query ``x W_Q + b_Q`` (d_head,), key ``y W_K + b_K``, value ``y W_V + b_V`` and writes ``z W_O``::

    W_QK = W_Q W_Kᵀ   (d, d)   score(x, y) = scale · x W_QK yᵀ  + the bias terms
    W_OV = W_V W_O    (d, d)   what attending to y writes: y W_OV (+ b_V W_O), times its weight

(Elhage et al. write column vectors: their W_QK = W_Qᵀ W_K and W_OV = W_O W_V are the transposes of
W_OV here and the same W_QK.) ``scale`` is the layer's factor on q·k (1/√d_head unless the family
sets another, Gemma's query_pre_attn_scalar^-½); it is *not* in W_QK, as in TransformerLens.

* **Grouped-query heads**: query head h reads the k/v head ``h // (n_heads / n_kv_heads)``
  (:attr:`HeadWeights.kv_head`); its W_K and W_V are that head's, shared with its group.
* **Biases** are kept apart (:class:`HeadWeights`: b_Q, b_K, b_V per head, b_O of the layer): the
  circuits are the parts bilinear (QK) and linear (OV) in the residual stream.
* **Norms** (``fold_norm=True``, the default): the head reads ``ln1(x)``, not x. Each norm is
  γ ⊙ x̂ (+ β) with x̂ = x/rms(x) (RMSNorm) or (x − mean)/σ (LayerNorm), so γ is folded into the
  rows of W_Q, W_K and W_V (``diag(γ) W``, Gemma's RMSNorm: γ = 1 + w) and β into the biases
  (``b + β W``), as TransformerLens' ``fold_ln`` does. Not folded: the per-token 1/rms (1/σ) and
  LayerNorm's mean subtraction (TransformerLens' default also centres the weights; we do not). So
  the circuits act on x̂, the normalised-but-unscaled stream. A QK-norm (Gemma 3, Qwen3, OLMo 2)
  is folded the same way into the columns of W_Q and W_K; its per-token 1/rms(q), 1/rms(k) are
  positive factors left out, so scores are x̂ W_QK ŷᵀ times them. ``fold_norm=False``: the
  checkpoint's own W_Q, W_K, W_V, no norm at all (TransformerLens' ``from_pretrained_no_processing``).
* **Rotary** (Llama, Qwen, Gemma, SmolLM2): q at position m and k at n are turned, q R_m and k R_n
  (R_p orthogonal, Hugging Face's pairing of feature i with i + d_head/2), so
  q R_m · k R_n = q R_m R_nᵀ kᵀ = q R_{m−n} kᵀ: the QK circuit at the *relative offset* δ = m − n
  is W_Q R_δ W_Kᵀ, with the layer's own frequencies (:func:`attnscope.positions.layer_inv_freq`,
  float64; dynamic scaling: those of a text of δ + 1 tokens). ``offset=None`` (and δ = 0) is the
  plain W_Q W_Kᵀ, what TransformerLens' ``QK`` is for a rotary model.

Numbers are computed in ``dtype`` (float64 by default) on the weights' device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ..errors import InputError
from ..i18n import error, word
from ..positions import layer_inv_freq, rotates
from ..scorings import get_scoring
from .factored import Factored
from .model_parts import check_model, norm_before_attention, norm_scale_shift

Tensor = torch.Tensor


@dataclass(frozen=True)
class HeadWeights:
    """Head ``head`` of layer ``layer``, in ``x @ W`` convention, with the norms folded as
    ``folded`` says (module docstring): W_Q, W_K, W_V (d, d_head), W_O (d_head, d); b_Q, b_K, b_V
    (d_head,) or None; b_O (d,) the layer's output bias (all heads share it) or None; ``gamma``
    (d,) the pre-attention norm's scale that was folded (None: none); ``scale`` the factor on q·k."""

    layer: int
    head: int
    kv_head: int
    W_Q: Tensor
    W_K: Tensor
    W_V: Tensor
    W_O: Tensor
    b_Q: Optional[Tensor]
    b_K: Optional[Tensor]
    b_V: Optional[Tensor]
    b_O: Optional[Tensor]
    gamma: Optional[Tensor]
    scale: float
    folded: tuple[str, ...]
    rotary: bool


def check_layer_head(model, layer, head) -> tuple[int, int]:
    """(layer, head) as ints, or one sentence naming the range."""
    n, H = int(model.config.n_layers), int(model.config.n_heads)
    for what, value, size, unit in (("layer", layer, n, "layers"), ("head", head, H, "heads")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise error(InputError, "errors.not_integer", what=word(what), value=repr(value))
        if not 0 <= value < size:
            raise error(InputError, "errors.index_model", what=word(what), value=value, n=size, unit=word(unit),
                        last=size - 1)
    return int(layer), int(head)


def head_weights(model, layer: int, head: int, *, fold_norm: bool = True,
                 dtype: torch.dtype = torch.float64) -> HeadWeights:
    """The matrices of one head (module docstring: which norm scales are folded and how)."""
    check_model(model)
    layer, head = check_layer_head(model, layer, head)
    attn = model.layers[layer].attn
    sc = get_scoring(attn.scoring)
    if sc.prepare is not None:  # cosine, qknorm: the score is not bilinear in x and y
        raise error(InputError, "errors.qkov_scoring", scoring=repr(attn.scoring), model=model.name)
    raw = attn.head_weights(head)
    W: dict[str, Tensor] = {}
    b: dict[str, Optional[Tensor]] = {}
    for n in ("Q", "K", "V"):
        Wn, bn = raw[f"W_{n}"], raw[f"b_{n}"]
        assert Wn is not None  # head_weights always gives the matrices; only biases may be None
        W[n], b[n] = Wn.detach().to(dtype), None if bn is None else bn.detach().to(dtype)
    b_O = None if attn.W_O.bias is None else attn.W_O.bias.detach().to(dtype)
    folded: list[str] = []
    gamma = None
    norm = norm_before_attention(model, layer) if fold_norm else None
    if norm is not None:
        gamma, beta = norm_scale_shift(norm[1], dtype)  # (d,), (d,) or None
        folded.append(norm[0])
        for n in ("Q", "K", "V"):
            if beta is not None:  # β reaches the head as a constant: β W joins the bias
                bn = b[n]
                b[n] = beta @ W[n] + (bn if bn is not None else 0.0)  # (d_head,)
            W[n] = gamma[:, None] * W[n]  # (d, d_head): diag(γ) W
    if fold_norm and getattr(attn, "q_norm", None) is not None:
        dh, kv = attn.d_head, head // attn.group
        for n, mod, i in (("Q", attn.q_norm, head), ("K", attn.k_norm, kv)):
            g, _ = norm_scale_shift(mod, dtype)  # (d_head,) per head, or (n·d_head,) over all heads
            g = g if g.shape[0] == dh else g[i * dh:(i + 1) * dh]
            W[n] = W[n] * g  # (d, d_head): the columns
            bn = b[n]
            if bn is not None:
                b[n] = bn * g
        folded += ["q_norm", "k_norm"]
    scale = float(attn.scale) if attn.scale is not None else float(sc.factor(attn.d_head))
    W_O = attn.W_O.weight.detach()[:, head * attn.d_head:(head + 1) * attn.d_head].T.to(dtype)  # (d_head, d)
    return HeadWeights(layer, head, head // attn.group, W["Q"], W["K"], W["V"], W_O, b["Q"], b["K"], b["V"], b_O,
                       gamma, scale, tuple(folded), rotates(model.config))


def rotation_angles(model, layer: int, offset: int) -> np.ndarray:
    """θ_k = δ·ω_k (d_head/2,) float64, not wrapped: the angle pair (k, k + d_head/2) turns by for
    δ = ``offset``, with the layer's own frequencies ω_k (those of a text of |δ| + 1 tokens)."""
    c = model.config
    if not rotates(c):
        raise error(InputError, "errors.qkov_no_rotary", model=model.name, position=repr(c.position))
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise error(InputError, "errors.qkov_offset", offset=repr(offset))
    inv, _, _ = layer_inv_freq(c, layer, abs(int(offset)) + 1)  # (h,) float64
    return np.asarray(inv, dtype=np.float64) * int(offset)  # (h,)


def rotation(model, layer: int, offset: int, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
    """R_δ (d_head, d_head) for δ = ``offset`` (query position − key position): rotary turns a row
    vector at position p into x R_p, and R_m R_nᵀ = R_{m−n}. Pair (i, i + d_head/2) turns by δ·ω_i:
    R[i, i] = R[i+h, i+h] = cos, R[i, i+h] = sin, R[i+h, i] = −sin (h = d_head/2)."""
    angle = torch.as_tensor(rotation_angles(model, layer, offset), dtype=torch.float64)  # (h,)
    h = angle.shape[0]
    cos, sin = angle.cos(), angle.sin()
    R = torch.zeros(2 * h, 2 * h, dtype=torch.float64)
    i = torch.arange(h)
    R[i, i], R[i + h, i + h], R[i, i + h], R[i + h, i] = cos, cos, sin, -sin
    return R.to(dtype=dtype, device=device)


def qk_circuit(model, layer: int, head: int, *, offset: Optional[int] = None, fold_norm: bool = True,
               dtype: torch.dtype = torch.float64) -> Factored:
    """W_QK = W_Q W_Kᵀ (d, d) as Factored(W_Q, W_Kᵀ); with ``offset`` δ (rotary models only), the
    circuit between a query and a key δ positions before it: W_Q R_δ W_Kᵀ (module docstring)."""
    w = head_weights(model, layer, head, fold_norm=fold_norm, dtype=dtype)
    left = w.W_Q  # (d, d_head)
    if offset is not None:
        left = left @ rotation(model, w.layer, offset, dtype, left.device)  # (d, d_head)
    return Factored(left, w.W_K.T)


def ov_circuit(model, layer: int, head: int, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> Factored:
    """W_OV = W_V W_O (d, d) as Factored(W_V, W_O) (module docstring)."""
    w = head_weights(model, layer, head, fold_norm=fold_norm, dtype=dtype)
    return Factored(w.W_V, w.W_O)
