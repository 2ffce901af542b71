"""The float64 NumPy twin of every step: one reference for explain, check, the viewer's data,
plot, exercise and the experiments.

Each function is the formula written plainly in NumPy, float64, independent of the torch
kernels (tested once against torch float64 in ``tests/reference``). Scorings come from the same
registry as the kernels (:mod:`attnscope.scorings`): their ``prepare_np`` and ``factor``.

    >>> from attnscope import reference as R
    >>> steps = R.attention_steps(q, k, v, causal=True)        # (..., L, d) arrays
    >>> steps["weights"].sum(-1)                                # 1 (0 for a row that sees nothing)

Shapes follow the kernels: ``q (..., L, d_k)``, ``k (..., S, d_k)``, ``v (..., S, d_v)``; masks
are bool (True = may attend) or additive float, broadcastable to ``(..., L, S)``.
"""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np

from .errors import ConfigError, NonFiniteError, fmt_shape
from .scorings import DEFAULT_EPS, SCORINGS, get_scoring

Array = np.ndarray

__all__ = ["as_f64", "prepare_qk", "score_factor", "operand_factor", "raw_scores", "causal_mask", "additive_mask",
           "combine_masks", "softmax", "log_softmax", "logsumexp", "weighted_sum", "attention_steps", "attention",
           "EXP_SHOW_LIMIT", "exp_shift", "softmax_parts", "shifted_exp", "divide_by_sum", "row_steps", "attention_weights",
           "layer_norm", "linear",
           "gelu", "relu", "split_heads", "merge_heads", "check_finite", "trace_factor", "trace_weights", "trace_row",
           "PAIRINGS", "rope_pairs", "rope_inv_freq", "rope_angles", "rotate", "rms_norm", "window_mask", "kv_head",
           "split_qkv", "head_columns", "sinusoidal_freq", "sinusoidal_pe", "rotation_matrix"]

#: A worked calculation shows exp(s) as the learner computes it while a row's largest score is at
#: most this; above it the row maximum m is subtracted first (exp(s − m)), which leaves the weights
#: unchanged (explain, check, the viewer's step view and the server all show the same numbers).
EXP_SHOW_LIMIT = 50.0


def as_f64(x) -> Array:
    """Any array-like (a torch tensor included, detached, on the CPU) as a float64 ndarray."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def prepare_qk(q, k, scoring: str = "scaled", eps: float = DEFAULT_EPS) -> tuple[Array, Array]:
    """q', k' as the scoring prepares them (cosine: unit length; qknorm: LayerNorm, no affine)."""
    return get_scoring(scoring).prepare_qk_np(as_f64(q), as_f64(k), eps)


def score_factor(scoring: str, d_k: int, scale: Optional[float] = None,
                 temperature: Union[None, float, Array] = None) -> Union[float, Array]:
    """The factor on q'·k': 1/√d_k for "scaled", 1/τ for "cosine", …; ``scale`` overrides."""
    if scale is not None:
        return float(scale)
    t = None if temperature is None else as_f64(temperature)
    f = get_scoring(scoring).factor_for(d_k, t if t is None or t.ndim else float(t))
    return f if isinstance(f, np.ndarray) else float(f)


def operand_factor(scoring: str, d_k: int) -> float:
    """The factor on a model's *prepared* q', k' (what a trace records as ``attn.q``/``attn.k``:
    after qknorm's LayerNorms, say), for a scoring whose factor depends on d_k alone.

    ConfigError for a scoring with a temperature (cosine): its τ is a learned parameter of the
    model that the prepared operands do not carry.
    """
    sc = get_scoring(scoring)
    if sc.uses_temperature:
        raise ConfigError(f"{scoring} scoring divides by the model's learned temperature, which q and k do not "
                         f"carry; the scorings whose factor depends on d_k alone are "
                         f"{', '.join(n for n in SCORINGS if not get_scoring(n).uses_temperature)}")
    return float(sc.factor_for(d_k))


def raw_scores(q, k) -> Array:
    """``q @ kᵀ`` → ``(..., L, S)``; one query ``q (d_k,)`` gives its row ``(S,)``."""
    q, k = as_f64(q), as_f64(k)
    # einsum for matrices, BLAS for one row: the summation orders explain, the viewer and the
    # server have always used, so that their printed digits do not move
    return k @ q if q.ndim == 1 else np.einsum("...ld,...sd->...ls", q, k)


def causal_mask(L: int, S: int) -> Array:
    """Bool ``(L, S)``, True where query i may see key j (j ≤ i, top-left aligned)."""
    return np.arange(S)[None, :] <= np.arange(L)[:, None]


def additive_mask(mask) -> Array:
    """A bool mask as 0 / −inf; a float mask as it is."""
    m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
    return np.where(m, 0.0, -np.inf) if m.dtype == bool else m.astype(np.float64)


def combine_masks(mask, L: int, S: int, causal: bool = False) -> Optional[Array]:
    """One additive mask (0 attend, −inf blocked), or None if nothing is masked."""
    add = None if mask is None else additive_mask(mask)
    if causal:
        c = np.where(causal_mask(L, S), 0.0, -np.inf)
        add = c if add is None else add + c
    return add


def softmax(x, axis: int = -1) -> Array:
    """Stable softmax (max subtracted); a row with no finite entry gives 0, never NaN."""
    x = as_f64(x)
    if x.shape[axis] == 0:
        return x.copy()
    alive = np.isfinite(x).any(axis=axis, keepdims=True)
    m = np.where(alive, np.max(np.where(np.isfinite(x), x, -np.inf), axis=axis, keepdims=True), 0.0)
    e = np.exp(x - m)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(alive, e / np.where(alive, total, 1.0), 0.0)


def logsumexp(x, axis: int = -1) -> Array:
    """log Σ exp(x) along ``axis``, stable; −inf for a row with no finite entry."""
    x = as_f64(x)
    alive = np.isfinite(x).any(axis=axis)
    m = np.where(alive, np.max(np.where(np.isfinite(x), x, -np.inf), axis=axis), 0.0)
    total = np.exp(x - np.expand_dims(m, axis)).sum(axis=axis)
    return np.where(alive, m + np.log(np.where(alive, total, 1.0)), -np.inf)


def log_softmax(x, axis: int = -1) -> Array:
    """``x − logsumexp(x)``; −inf throughout a row with no finite entry."""
    x = as_f64(x)
    lse = np.expand_dims(logsumexp(x, axis), axis)
    return np.where(np.isneginf(lse), -np.inf, x - np.where(np.isneginf(lse), 0.0, lse))


def weighted_sum(weights, v) -> Array:
    """``weights @ v`` → ``(..., L, d_v)``; one row ``weights (S,)`` gives ``(d_v,)``."""
    return as_f64(weights) @ as_f64(v)


def attention_steps(q, k, v, mask=None, *, causal: bool = False, scoring: str = "scaled",
                    scale: Optional[float] = None, temperature=None, eps: float = DEFAULT_EPS) -> dict[str, Array]:
    """Every step as in :func:`attnscope.attention_steps`, plus ``q``/``k`` (prepared) and ``lse``.

    Returns ``q``, ``k`` (..., L|S, d_k), ``scores``, ``scaled``, ``masked``, ``weights``
    (..., L, S), ``out`` (..., L, d_v) and ``lse`` (..., L).
    """
    qp, kp = prepare_qk(q, k, scoring, eps)
    v = as_f64(v)
    scores = raw_scores(qp, kp)
    L, S = scores.shape[-2:]
    scaled = scores * score_factor(scoring, qp.shape[-1], scale, temperature)
    add = combine_masks(mask, L, S, causal)
    masked = scaled if add is None else scaled + add
    weights = softmax(masked)
    return {"q": qp, "k": kp, "scores": scores, "scaled": scaled, "masked": masked, "weights": weights,
            "out": weighted_sum(weights, v), "lse": logsumexp(masked)}


def attention(q, k, v, mask=None, **kwargs) -> tuple[Array, Array]:
    """``(out, weights)`` of :func:`attention_steps`."""
    s = attention_steps(q, k, v, mask, **kwargs)
    return s["out"], s["weights"]


def exp_shift(masked, axis: int = -1) -> Array:
    """What a worked calculation subtracts before exp, with ``axis`` kept (size 1): 0 while the
    row's largest finite score is at most :data:`EXP_SHOW_LIMIT` (exp(s) shown as is), else that
    maximum. A row with no finite score gets 0."""
    x = as_f64(masked)
    if x.shape[axis] == 0:
        return np.zeros(x.shape[:axis % x.ndim] + (1,) + x.shape[axis % x.ndim + 1:])
    m = np.where(np.isfinite(x), x, -np.inf).max(axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.where(m > EXP_SHOW_LIMIT, m, 0.0)


def softmax_parts(masked, axis: int = -1) -> dict[str, Array]:
    """The softmax as a learner writes it: ``shift`` (:func:`exp_shift`, axis kept), ``exp`` =
    exp(masked − shift) (0 where masked is −inf), ``sum`` of those along ``axis`` and ``weights``
    (:func:`softmax`, computed stably, so equal to exp / sum)."""
    x = as_f64(masked)
    shift = exp_shift(x, axis)
    e = shifted_exp(x, shift)
    return {"shift": shift, "exp": e, "sum": e.sum(axis), "weights": softmax(x, axis)}


def shifted_exp(masked, shift) -> Array:
    """``exp(masked − shift)`` (0 where masked is −inf), overflow to inf without a warning."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(as_f64(masked) - as_f64(shift))


def divide_by_sum(e, total) -> Array:
    """``e / total``: the weights from the exponentials and their (broadcast) sum; 0 where the
    sum is 0 (a row that sees no key)."""
    e, total = as_f64(e), as_f64(total)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0.0, e / np.where(total == 0, 1.0, total))


def row_steps(raw, factor, allowed=None, v=None) -> dict:
    """One query row, every step of the first article's walk-through, float64.

    ``raw (S,)`` q·k against every key, ``factor`` on it, ``allowed (S,)`` bool (None: every key),
    ``v (S, d_v)``. Returns ``scores``, ``scaled`` (S,), ``masked`` (−inf where not allowed),
    ``shift`` (a float: 0 or the row maximum, see :data:`EXP_SHOW_LIMIT`), ``exp``, ``sum``
    (a float), ``weights`` (S,; 0 everywhere when no key is allowed) and, with ``v``, ``output``.
    Overflow is not checked here (see :func:`check_finite`).
    """
    raw = as_f64(raw)  # (S,)
    allowed = np.ones(raw.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = raw * factor  # (S,)
        masked = np.where(allowed, scaled, -np.inf)  # (S,)
        parts = softmax_parts(masked)
        out = {"scores": raw, "scaled": scaled, "masked": masked, "shift": float(parts["shift"][0]) if raw.size else 0.0,
               "exp": parts["exp"], "sum": float(parts["sum"]), "weights": parts["weights"]}
        if v is not None:
            out["output"] = weighted_sum(out["weights"], v)  # (d_v,)
    return out


def attention_weights(q, k, factor, *, causal: bool = False, mask=None) -> Array:
    """``softmax(factor · q·kᵀ)`` of prepared q, k ``(..., L|S, d_k)`` → ``(..., L, S)``, with the
    bool or additive ``mask`` and causality; rows that see nothing are 0."""
    q, k = as_f64(q), as_f64(k)
    scaled = raw_scores(q, k) * factor
    add = combine_masks(mask, scaled.shape[-2], scaled.shape[-1], causal)
    return softmax(scaled if add is None else scaled + add)


def layer_norm(x, weight=None, bias=None, eps: float = 1e-5) -> Array:
    """``(x − mean) / √(var + ε) · weight + bias`` over the last axis (biased variance, as torch)."""
    x = as_f64(x)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if weight is not None:
        y = y * as_f64(weight)
    if bias is not None:
        y = y + as_f64(bias)
    return y


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


def check_finite(step: str, x, *, allow_neg_inf: bool = False) -> Array:
    """``x`` as float64, or NonFiniteError naming ``step`` when it holds NaN or ±inf (−inf
    allowed with ``allow_neg_inf``: a masked score)."""
    a = as_f64(x)
    bad = np.isnan(a) | (np.isposinf(a) if allow_neg_inf else np.isinf(a))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        kinds = [f"{name} ×{int(n)}" for name, n in (("NaN", np.isnan(a).sum()), ("+inf", np.isposinf(a).sum()),
                                                    ("-inf", 0 if allow_neg_inf else np.isneginf(a).sum())) if n]
        raise NonFiniteError(f"{step} has non-finite values ({', '.join(kinds)}) in shape {fmt_shape(a.shape)}, "
                             f"first at index {first}")
    return a


# ----------------------------------------------------------------------------------------------
# today's decoders: rotary positions, RMSNorm (QK-norm), shared k/v heads, sliding windows
# ----------------------------------------------------------------------------------------------

#: How rotary positions pair a head's features: "half" turns feature i with feature i + d/2
#: (Hugging Face's rotate_half: Llama, Qwen2, Mistral, Gemma checkpoints); "adjacent" turns
#: 2i with 2i + 1 (RoFormer's paper, GPT-J, llama.cpp's permuted rows). Pair i turns by angle
#: position · inv_freq[i] either way.
PAIRINGS = ("half", "adjacent")


def rope_pairs(d: int, pairing: str = "half") -> tuple[Array, Array]:
    """The feature indices ``(a, b)`` of the d/2 pairs, each (d/2,): pair i is (a[i], b[i])."""
    if pairing not in PAIRINGS:
        raise ConfigError(f"unknown rotary pairing {pairing!r}; choose one of {', '.join(PAIRINGS)}")
    if d % 2:
        raise ConfigError(f"rotary positions turn pairs of features; the head width must be even, got {d}")
    i = np.arange(d // 2)
    return (i, i + d // 2) if pairing == "half" else (2 * i, 2 * i + 1)


def rope_inv_freq(d: int, base: float) -> Array:
    """``inv_freq[i] = base^(−2i/d)`` for i = 0 … d/2 − 1, float64 (radians per position)."""
    return np.power(float(base), -np.arange(0, d, 2, dtype=np.float64) / d)


def rope_angles(positions, inv_freq) -> Array:
    """``positions (L,)`` × ``inv_freq (d/2,)`` → the angles ``(L, d/2)`` in radians."""
    return np.asarray(positions, dtype=np.float64)[:, None] * as_f64(inv_freq)[None, :]


def rotate(x, positions, inv_freq, pairing: str = "half") -> Array:
    """``x (…, L, d)`` with each pair (a, b) of row l turned by ``positions[l] · inv_freq[i]``:
    ``(a, b) → (a cos φ − b sin φ, a sin φ + b cos φ)``."""
    x = as_f64(x)
    a, b = rope_pairs(x.shape[-1], pairing)
    phi = rope_angles(positions, inv_freq)  # (L, d/2)
    c, s = np.cos(phi), np.sin(phi)
    out = np.empty_like(x)
    out[..., a] = x[..., a] * c - x[..., b] * s
    out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def rms_norm(x, weight=None, eps: float = 1e-6, offset: float = 0.0) -> Array:
    """``x / √(mean(x²) + ε) · (offset + w)`` over the last axis (Llama: offset 0, Gemma: 1)."""
    x = as_f64(x)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    if weight is None:
        return y * (offset + 1.0) if offset else y
    return y * (offset + as_f64(weight))


def window_mask(n_q: int, n_k: int, window: Optional[int] = None, causal: bool = True) -> Array:
    """Bool ``(n_q, n_k)``, True = query i may see key j: ``j ≤ i`` (causal) and ``i − j < window``."""
    d = np.arange(n_q)[:, None] - np.arange(n_k)[None, :]
    ok = d >= 0 if causal else np.ones((n_q, n_k), dtype=bool)
    return ok & (d < window) if window is not None else ok


def kv_head(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The key/value head that query head ``head`` reads: ``head // (n_heads / n_kv_heads)``."""
    return int(head) // (int(n_heads) // int(n_kv_heads))


# ----------------------------------------------------------------------------------------------
# many heads: the fused projection and the columns of each head; sinusoidal positions
# ----------------------------------------------------------------------------------------------

def split_qkv(fused, n_heads: int, n_kv_heads: Optional[int] = None) -> tuple[Array, Array, Array]:
    """The fused product ``X·W_QKV (..., L, (H + 2·H_kv)·d)`` → ``Q (..., L, H·d)``, ``K``, ``V``
    ``(..., L, H_kv·d)``: its columns are [Q | K | V] (GPT-2's ``c_attn``, Phi-3's ``qkv_proj``).
    Nothing is computed; the columns are only regrouped."""
    x = as_f64(fused)
    kv = n_heads if n_kv_heads is None else n_kv_heads
    width = x.shape[-1]
    if width % (n_heads + 2 * kv):
        raise ConfigError(f"the fused product has {width} columns, not a multiple of n_heads + 2·n_kv_heads = "
                          f"{n_heads + 2 * kv}")
    d = width // (n_heads + 2 * kv)
    return x[..., :n_heads * d], x[..., n_heads * d:(n_heads + kv) * d], x[..., (n_heads + kv) * d:]


def head_columns(head: int, d_head: int) -> slice:
    """The columns of head ``head`` in a matrix that holds every head side by side (Q, K, V, the
    concatenated outputs, W_Q's columns): ``head·d_head … (head + 1)·d_head − 1``."""
    return slice(int(head) * int(d_head), (int(head) + 1) * int(d_head))


def sinusoidal_freq(d_model: int, base: float = 10000.0) -> Array:
    """``ω_i = base^(−2i/d_model)`` for i = 0 … d_model/2 − 1 (radians per position), computed as
    ``exp(−ln(base)·2i/d)`` like :func:`attnscope.positions.sinusoidal_table_np`."""
    return np.exp(-math.log(float(base)) * np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def sinusoidal_pe(positions, d_model: int, base: float = 10000.0) -> Array:
    """``PE (P, d_model)``: ``PE[p, 2i] = sin(p·ω_i)``, ``PE[p, 2i + 1] = cos(p·ω_i)`` (Vaswani et al.)."""
    if d_model % 2:
        raise ConfigError(f"sinusoidal positions pair sin and cos; d_model must be even, got {d_model}")
    ang = np.asarray(positions, dtype=np.float64).reshape(-1)[:, None] * sinusoidal_freq(d_model, base)[None, :]
    pe = np.empty((ang.shape[0], d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


def rotation_matrix(angle) -> Array:
    """``[[cos φ, −sin φ], [sin φ, cos φ]]`` for each angle: ``(..., 2, 2)``."""
    a = np.asarray(angle, dtype=np.float64)
    c, s = np.cos(a), np.sin(a)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


# ----------------------------------------------------------------------------------------------
# a trace's attention, recomputed in float64 from its recorded q, k, v (read through the Trace
# read API: ``tr.qkv``, ``tr.mask``, ``tr.text_tokens``)
# ----------------------------------------------------------------------------------------------

def trace_factor(trace) -> float:
    """The factor on the trace's q·k: the model's own ``query_scale`` (Gemma 3's
    query_pre_attn_scalar^−½) when it has one, else :func:`operand_factor` of its scoring and d_head."""
    scale = getattr(trace.config, "query_scale", None)
    if scale is not None:
        return float(scale)
    return operand_factor(trace.config.scoring, int(trace.config.d_head))


def trace_weights(trace, layer: int, text: int = 0, *, recorded: bool = True) -> Array:
    """Attention weights of every head of ``layer`` for text ``text``: float64 (H, n, n).

    The recorded ``layers.{layer}.attn.weights`` when the trace holds the whole matrix (and
    ``recorded``), else computed from the recorded q and k with the mask the model used.
    """
    if recorded and f"layers.{trace.check_layer(layer)}.attn.weights" in trace:
        return as_f64(trace.step(layer, "weights", text=text))  # (H, n, n)
    q, k = (as_f64(trace.step(layer, s, text=text)) for s in ("q", "k"))  # (H, n, d), (H_kv, n, d)
    k = np.repeat(k, q.shape[0] // k.shape[0], axis=0)  # (H, n, d): query head h reads k/v head h // group
    allowed = trace.mask(layer, text=text).detach().cpu().numpy()  # (1, n, n)
    return attention_weights(q, k, trace_factor(trace), mask=allowed)


def trace_row(trace, layer: int, head: int, query: int, text: int = 0) -> dict:
    """One query row of one head, recomputed in float64 from the trace's q, k, v.

    Returns ``tokens``, ``raw`` (q·k per key), ``scaled`` (× the factor, −inf at keys the query
    may not see), ``shift``, ``exp``, ``sum``, ``weights`` and ``out`` (Σ weight·v, d_head numbers)
    of :func:`row_steps`, with ``factor``, ``d_k`` and ``allowed`` (n,) bool. InputError names a
    layer, head, text or query out of range.
    """
    from .trace.read import check_index
    q, k, v = trace.qkv(layer, head, text=text)  # (n, d_head) each
    n = q.shape[0]
    query = check_index("query token", query, n, "token")
    allowed = trace.mask(layer, text=text)[0, query].detach().cpu().numpy()  # (n,)
    factor = trace_factor(trace)
    s = row_steps(raw_scores(as_f64(q)[query], as_f64(k)), factor, allowed, as_f64(v))
    return {"tokens": trace.text_tokens(text), "raw": s["scores"], "scaled": s["masked"], "shift": s["shift"],
            "exp": s["exp"], "sum": s["sum"], "weights": s["weights"], "out": s["output"], "factor": factor,
            "d_k": int(q.shape[-1]), "allowed": allowed}



# relative position schemes (T5's bias buckets, DeBERTa's disentangled terms): their own module,
# read through this one
from .reference_relative import (  # noqa: E402
    deberta_bucket,
    deberta_bucket_steps,
    deberta_terms,
    t5_bucket,
    t5_bucket_steps,
)

__all__ += ["t5_bucket_steps", "t5_bucket", "deberta_bucket_steps", "deberta_bucket", "deberta_terms"]
