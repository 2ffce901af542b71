"""A trace's attention, recomputed in float64 from its recorded q, k, v (read through the Trace
read API: ``tr.qkv``, ``tr.mask``, ``tr.text_tokens``)."""

from __future__ import annotations

import numpy as np

from .arrays import Array, as_f64
from .steps import attention_weights, operand_factor, raw_scores
from .worked import row_steps


def trace_factor(trace) -> float:
    """The factor on the trace's q·k: the model's own ``query_scale`` (Gemma 3's
    query_pre_attn_scalar^−½) when it has one, else :func:`operand_factor` of its scoring and d_head."""
    scale = getattr(trace.config, "query_scale", None)
    if scale is not None:
        return float(scale)
    return operand_factor(trace.config.scoring, int(trace.config.d_head))


def position_bias(trace, layer: int, text: int = 0):
    """The trace's position score term ``(H, n, n)`` float64 (ALiBi), or None (no such scheme, or
    a trace object without :meth:`~attnscope.trace.Trace.position_bias`)."""
    fn = getattr(trace, "position_bias", None)
    return fn(layer, text=text) if callable(fn) else None


def score_term(trace, layer: int, text: int = 0):
    """The float64 term ``(H, n, n)`` the model adds to the scaled scores of ``layer``: a position
    scheme's fixed one (ALiBi), the recorded learned one (T5's relative position bias, DeBERTa's
    relative terms; InputError naming what to trace when it was not recorded), or None."""
    fixed = position_bias(trace, layer, text)
    if fixed is not None or not getattr(trace.config, "score_bias", False):
        return fixed
    return as_f64(trace.step(layer, "bias", text=text))  # (H, n, n)


def trace_weights(trace, layer: int, text: int = 0, *, recorded: bool = True) -> Array:
    """Attention weights of every head of ``layer`` for text ``text``: float64 (H, n, n).

    The recorded ``layers.{layer}.attn.weights`` when the trace holds the whole matrix (and
    ``recorded``), else computed from the recorded q and k with the mask the model used and its
    score term (:func:`score_term`).
    """
    if recorded and f"layers.{trace.check_layer(layer)}.attn.weights" in trace:
        return as_f64(trace.step(layer, "weights", text=text))  # (H, n, n)
    q, k = (as_f64(trace.step(layer, s, text=text)) for s in ("q", "k"))  # (H, n, d), (H_kv, n, d)
    k = np.repeat(k, q.shape[0] // k.shape[0], axis=0)  # (H, n, d): query head h reads k/v head h // group
    allowed = trace.mask(layer, text=text).detach().cpu().numpy()  # (1, n, n)
    bias = score_term(trace, layer, text)  # (H, n, n), or None
    if bias is not None:
        allowed = np.where(allowed, bias, -np.inf)  # (H, n, n), added to the scaled scores
    return attention_weights(q, k, trace_factor(trace), mask=allowed)


def trace_row(trace, layer: int, head: int, query: int, text: int = 0) -> dict:
    """One query row of one head, recomputed in float64 from the trace's q, k, v.

    Returns ``tokens`` (as a person reads them: ``trace.text_labels``),
    ``raw`` (q·k per key), ``scaled`` (× the factor, −inf at keys the query
    may not see), ``shift``, ``exp``, ``sum``, ``weights`` and ``out`` (Σ weight·v, d_head numbers)
    of :func:`row_steps` (``scaled`` with the model's score term added: :func:`score_term`), with
    ``factor``, ``d_k`` and ``allowed`` (n,) bool. InputError names a
    layer, head, text or query out of range.
    """
    from ..trace.read import check_index
    q, k, v = trace.qkv(layer, head, text=text)  # (n, d_head) each
    n = q.shape[0]
    query = check_index("query token", query, n, "token")
    allowed = trace.mask(layer, text=text)[0, query].detach().cpu().numpy()  # (n,)
    factor = trace_factor(trace)
    bias = score_term(trace, layer, text)  # (H, n, n), or None
    s = row_steps(raw_scores(as_f64(q)[query], as_f64(k)), factor, allowed, as_f64(v),
                  bias=None if bias is None else bias[head, query])
    return {"tokens": trace.text_labels(text), "raw": s["scores"], "scaled": s["masked"], "shift": s["shift"],
            "exp": s["exp"], "sum": s["sum"], "weights": s["weights"], "out": s["output"], "factor": factor,
            "d_k": int(q.shape[-1]), "allowed": allowed}
