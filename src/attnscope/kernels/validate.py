"""Argument checks shared by every kernel: each raises an attnscope error that names the argument.

Checks cost microseconds (plain Python on shapes, no device work but one reduction over a tensor
temperature): they run on every call.
"""

from __future__ import annotations

import math
import numbers
from typing import Optional, cast

import numpy as np
import torch

from ..errors import ConfigError, InputError, ShapeError, fmt_shape, shape_or_type
from ..i18n import Msg, error
from ..scorings import SCORINGS, Scoring, get_scoring
from ..wording import joined

Tensor = torch.Tensor


def require_float(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise error(ShapeError, "errors.kernel_not_tensor", name=name, type=type(t).__name__)
    if not t.is_floating_point():
        raise error(ShapeError, "errors.kernel_not_float", name=name, dtype=t.dtype)


def check_token_ids(input_ids, name: str = "input_ids", max_positions: Optional[int] = None) -> None:
    """ShapeError unless ``input_ids`` is an integer tensor ``(B, L)`` (``name`` names it);
    InputError when L is more than ``max_positions``."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.is_floating_point():
        raise error(ShapeError, "errors.kernel_token_ids", name=name, got=shape_or_type(input_ids))
    L = input_ids.shape[1]
    if max_positions is not None and L > max_positions:
        raise error(InputError, "errors.too_long", n=L, limit=max_positions)


def check_vocabulary(input_ids: Tensor, vocab_size: int) -> None:
    """InputError unless every token id is a row of the embedding table: in [0, vocab_size)."""
    if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab_size):
        raise error(InputError, "errors.kernel_token_range", vocab=vocab_size, low=int(input_ids.min()),
                    high=int(input_ids.max()))


def check_row_ids(ids, name: str, B: int, L: int, rows: int) -> None:
    """ShapeError unless ``ids`` (segment or position ids beside ``input_ids (B, L)``) is an integer
    tensor ``(B|1, L)``; InputError unless every id is a row of its table, in [0, rows)."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point() or ids.is_complex() \
            or ids.dtype == torch.bool or ids.shape[1] != L or ids.shape[0] not in (1, B):
        raise error(ShapeError, "errors.kernel_ids_shape", name=name, B=B, L=L, got=shape_or_type(ids))
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        raise error(InputError, "errors.kernel_ids_range", name=name, n=rows, low=int(ids.min()), high=int(ids.max()))


def check_dim(name: str, t: Tensor, dim) -> int:
    """``dim`` as a non-negative index into ``t``'s dims; ShapeError naming the valid range."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise error(ShapeError, "errors.not_integer", what="dim", value=repr(dim))
    n = t.dim()
    if n == 0:
        raise error(ShapeError, "errors.kernel_softmax_0dim", name=name)
    if not -n <= int(dim) < n:
        raise error(ShapeError, "errors.kernel_dim_range", dim=dim, name=name, shape=fmt_shape(t.shape), n=n,
                    low=-n, high=n - 1)
    return int(dim) % n


def broadcast_shapes(*shapes) -> Optional[torch.Size]:
    """The broadcast of ``shapes`` (NumPy rules), or None if they do not broadcast.

    Plain Python: ``torch.broadcast_shapes`` costs ~30-100 µs a call, more than a small SDPA.
    """
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case, without the loop below
        return torch.Size(first)
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, start=ndim - len(s)):
            n = int(n)
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    return None
                out[i] = n
    return torch.Size(out)


#: What :func:`broadcast_or_raise` names: the dims that must broadcast, in the error's language.
LEAD_QKV = Msg("errors.kernel_lead_qkv")
LEAD_QK = Msg("errors.kernel_lead_qk")
LEAD_QKV_SHORT = Msg("errors.kernel_lead_qkv_short")
LEAD_QKV_MASK_BIAS = Msg("errors.kernel_lead_qkv_mask_bias")
LEAD_KEY_MASK = Msg("errors.kernel_lead_key_mask")
Q_AND_FACTOR = Msg("errors.kernel_q_factor")


def broadcast_or_raise(what: Msg, *shapes) -> torch.Size:
    """The broadcast of ``shapes``; ShapeError naming ``what`` (one of the Msgs above) otherwise."""
    out = broadcast_shapes(*shapes)
    if out is None:
        raise error(ShapeError, "errors.kernel_no_broadcast", what=what, shapes=joined(fmt_shape(s) for s in shapes))
    return out


def kv_groups(q: Tensor, k: Tensor) -> int:
    """Query heads per key/value head: ``H / H_kv`` where q is ``(..., H, L, d)`` and k
    ``(..., H_kv, S, d)`` with H a multiple of H_kv > 1 (grouped-query attention), else 1."""
    qs, ks = q.shape, k.shape
    if len(qs) >= 3 and len(ks) >= 3 and qs[-3] != ks[-3]:
        H, H_kv = qs[-3], ks[-3]
        if H_kv > 1 and H % H_kv == 0:
            return H // H_kv
    return 1


def check_qkv(q: Tensor, k: Tensor, v: Tensor) -> torch.Size:
    """Validate ``q (..., L, d)``, ``k (..., S, d)``, ``v (..., S, d_v)``; raise ShapeError.

    k and v may have fewer heads (dim −3) than q when q's count is a multiple of theirs
    (grouped-query attention: one k/v head serves ``H / H_kv`` query heads).
    Returns the broadcast leading (batch/head) dims, with q's head count.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_float(name, t)
        if t.dim() < 2:
            raise error(ShapeError, "errors.kernel_min_dims", name=name, shape=fmt_shape(t.shape))
    if q.shape[-1] != k.shape[-1]:
        raise error(ShapeError, "errors.kernel_qk_last_dim", q=fmt_shape(q.shape), k=fmt_shape(k.shape))
    if k.shape[-2] != v.shape[-2]:
        raise error(ShapeError, "errors.kernel_kv_length", k=fmt_shape(k.shape), v=fmt_shape(v.shape))
    if not (q.dtype == k.dtype == v.dtype):
        raise error(ShapeError, "errors.kernel_qkv_dtype", dtypes=f"{q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise error(ShapeError, "errors.kernel_qkv_device", devices=f"{q.device}, {k.device}, {v.device}")
    kl: tuple[int, ...] = k.shape[:-2]
    vl: tuple[int, ...] = v.shape[:-2]
    g = 1 if kl == q.shape[:-2] else kv_groups(q, k)
    if g > 1:
        if v.dim() < 3 or v.shape[-3] != k.shape[-3]:
            raise error(ShapeError, "errors.kernel_gqa_heads", k=fmt_shape(k.shape), v=fmt_shape(v.shape))
        kl = vl = (*kl[:-1], q.shape[-3])  # each k/v head serves g query heads
    return broadcast_or_raise(LEAD_QKV, q.shape[:-2], kl, vl)


def check_mask(mask: Optional[Tensor], L: int, S: int, lead: torch.Size, name: str = "mask") -> None:
    """A mask must be bool or floating and broadcast to ``(*lead, L, S)``."""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor):
        raise error(ShapeError, "errors.kernel_not_tensor_or_none", name=name, type=type(mask).__name__)
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise error(ShapeError, "errors.kernel_mask_dtype", name=name, dtype=mask.dtype)
    target = (*lead, L, S)
    out = broadcast_shapes(mask.shape, target)
    if out is None or tuple(out) != tuple(target):
        raise error(ShapeError, "errors.kernel_mask_broadcast", name=name, shape=fmt_shape(mask.shape),
                    target=fmt_shape(target), L=L, S=S)


def check_scale(scale) -> Optional[float]:
    """``scale`` must be None or a finite real number (not a bool, string or tensor)."""
    if scale is None:
        return None
    if scale.__class__ is float and math.isfinite(scale):
        return scale
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise error(ConfigError, "errors.kernel_scale_type", type=type(scale).__name__, value=repr(scale))
    scale = float(scale)
    if not math.isfinite(scale):
        raise error(ConfigError, "errors.kernel_scale_finite", value=scale)
    return scale


def check_flag(value, name: str = "causal") -> bool:
    """A yes/no argument: a bool (NumPy's included), else ConfigError naming it. SDPA takes
    ``is_causal`` as a bool only, so that ``causal=1`` must not mean one thing here, another there."""
    if value.__class__ is bool:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise error(ConfigError, "errors.kernel_flag", name=name, type=type(value).__name__, value=repr(value))


def check_dropout(p, name: str = "dropout_p") -> float:
    if p.__class__ is float and 0.0 <= p < 1.0:  # the common case, without the ABC checks below
        return p
    # cast: typeshed's numbers.Real has no comparison with a float; every real number has one
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= cast(float, p) < 1.0:
        raise error(ConfigError, "errors.kernel_probability", name=name, value=repr(p))
    return float(p)


def check_temperature(temperature, scoring: Scoring, scale=None) -> None:
    """A float τ must be finite and positive; a tensor τ floating point and positive in every entry
    (NaN/±inf: :mod:`.finite`); either only for a scoring that uses one and without a ``scale``,
    which replaces the factor 1/τ (else it would be dropped without a word)."""
    if temperature is None:
        return
    if not scoring.uses_temperature:
        names = ", ".join(n for n in SCORINGS if get_scoring(n).uses_temperature)
        raise error(ConfigError, "errors.kernel_temperature_unused", names=names, scoring=repr(scoring.name))
    if scale is not None:
        raise error(ConfigError, "errors.kernel_temperature_and_scale", scoring=repr(scoring.name))
    if isinstance(temperature, torch.Tensor):
        if not temperature.is_floating_point():
            raise error(ShapeError, "errors.kernel_not_float", name="temperature", dtype=temperature.dtype)
        t = temperature.detach()
        # a τ ≤ 0 turns attention around (or 0/0 = NaN), refused as a float τ is; NaN and +inf are
        # left to the opt-in finite checks (check_finite names them), as in q, k, v
        bad = t <= 0
        if t.numel() and bool(bad.any()):
            first = tuple(int(i) for i in bad.nonzero()[0].tolist())
            raise error(ConfigError, "errors.kernel_temperature_entry", value=float(t[first]), first=first,
                        shape=fmt_shape(t.shape))
        return
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise error(ConfigError, "errors.kernel_temperature_type", type=type(temperature).__name__,
                    value=repr(temperature))
    if not (math.isfinite(temperature) and cast(float, temperature) > 0):  # cast: as in check_dropout
        raise error(ConfigError, "errors.kernel_temperature_value", value=temperature)


def check_attention_args(mask: Optional[Tensor], L: int, S: int, lead: torch.Size, scoring, scale,
                         temperature) -> tuple[Scoring, Optional[float]]:
    """What every attention entry point checks besides q, k, v (``lead``: their broadcast leading
    dims), in this order: the scoring, the mask against ``(*lead, L, S)``, the temperature for that
    scoring (and not beside a scale), the scale. Returns the scoring and the scale."""
    sc = get_scoring(scoring)  # ConfigError listing the choices
    check_mask(mask, L, S, lead)
    check_temperature(temperature, sc, scale)
    return sc, check_scale(scale)


def check_width(name: str, value) -> int:
    """A width that may be 0 (d_k: an empty dot product): an int ≥ 0, else ConfigError saying which
    (2.5 would be cut to 2, −4 taken as 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(ConfigError, "errors.kernel_int_type", name=name, type=type(value).__name__, value=repr(value))
    if value < 0:
        raise error(ConfigError, "errors.kernel_non_negative", name=name, value=value)
    return int(value)


def check_positive_int(name: str, value) -> int:
    """A module size (d_model, n_heads, …): an int > 0, else ConfigError saying which."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(ConfigError, "errors.kernel_int_type", name=name, type=type(value).__name__, value=repr(value))
    if value <= 0:
        raise error(ConfigError, "errors.kernel_positive", name=name, value=value)
    return int(value)
