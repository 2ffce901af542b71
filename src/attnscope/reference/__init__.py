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

Every name is read from here (``R.softmax``); the modules behind it hold one concern each:
``arrays`` (float64 conversion, the finite check), ``masks``, ``steps`` (scores, softmax, the
weighted sum), ``worked`` (one row as a learner computes it), ``layers`` (norms, activations,
heads), ``positions`` (rotary, sinusoidal, ALiBi), ``relative`` (T5's buckets, DeBERTa's terms) and
``traced`` (a trace's attention recomputed).
"""

from __future__ import annotations

from .arrays import Array, as_f64, check_finite
from .layers import gelu, head_columns, kv_head, layer_norm, linear, merge_heads, relu, rms_norm, split_heads, split_qkv
from .masks import additive_mask, causal_mask, combine_masks, window_mask
from .positions import (
    PAIRINGS,
    alibi_bias,
    alibi_slopes,
    rope_angles,
    rope_inv_freq,
    rope_pairs,
    rotate,
    rotation_matrix,
    sinusoidal_freq,
    sinusoidal_pe,
)
from .relative import deberta_bucket, deberta_bucket_steps, deberta_terms, t5_bucket, t5_bucket_steps
from .steps import (
    attention,
    attention_steps,
    attention_weights,
    log_softmax,
    logsumexp,
    operand_factor,
    prepare_qk,
    raw_scores,
    score_factor,
    softmax,
    weighted_sum,
)
from .traced import position_bias, trace_factor, trace_row, trace_weights
from .worked import EXP_SHOW_LIMIT, divide_by_sum, exp_shift, row_steps, shifted_exp, softmax_parts

__all__ = ["Array", "as_f64", "prepare_qk", "score_factor", "operand_factor", "raw_scores", "causal_mask", "additive_mask",
           "combine_masks", "softmax", "log_softmax", "logsumexp", "weighted_sum", "attention_steps", "attention",
           "EXP_SHOW_LIMIT", "exp_shift", "softmax_parts", "shifted_exp", "divide_by_sum", "row_steps", "attention_weights",
           "layer_norm", "linear", "position_bias",
           "gelu", "relu", "split_heads", "merge_heads", "check_finite", "trace_factor", "trace_weights", "trace_row",
           "PAIRINGS", "rope_pairs", "rope_inv_freq", "rope_angles", "rotate", "rms_norm", "window_mask", "kv_head",
           "split_qkv", "head_columns", "sinusoidal_freq", "sinusoidal_pe", "rotation_matrix", "alibi_slopes", "alibi_bias",
           "t5_bucket_steps", "t5_bucket", "deberta_bucket_steps", "deberta_bucket", "deberta_terms"]
