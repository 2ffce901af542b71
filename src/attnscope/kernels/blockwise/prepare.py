"""From attention's arguments to the blockwise kernel's operands: tile sizes, the compute dtype,
the factor and mask split into what a tile needs, selections of heads and queries."""

from __future__ import annotations

import numbers
from typing import Optional, Sequence, Union, cast

import numpy as np
import torch

from ...errors import ConfigError, InputError, ShapeError, fmt_shape
from ...i18n import error
from ..dense import held_within
from ..qk import Prepared, as_2d
from ..validate import LEAD_QKV_MASK_BIAS, LEAD_QKV_SHORT, broadcast_or_raise, broadcast_shapes, require_float
from .tiles import DEFAULT_BLOCK, LOG2E

Tensor = torch.Tensor
Index = Union[None, int, slice, range, Sequence[int], Tensor]
BlockSize = Union[None, int, tuple[int, int]]

LOW_PRECISION = (torch.float16, torch.bfloat16)


def block_sizes(block_size: BlockSize) -> tuple[int, int]:
    """``(block_q, block_k)`` from an int, a pair or None (the default); ConfigError otherwise."""
    if block_size is None:
        return DEFAULT_BLOCK
    if isinstance(block_size, int) and not isinstance(block_size, bool):
        pair = (block_size, block_size)
    elif isinstance(block_size, (tuple, list)) and len(block_size) == 2:
        pair = (block_size[0], block_size[1])
    else:
        raise error(ConfigError, "errors.kernel_block_size", value=repr(block_size))
    if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in pair):
        raise error(ConfigError, "errors.kernel_block_sizes", value=repr(block_size))
    return pair


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half precision exp/sums lose too much over thousands of keys: accumulate in float32."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def tile_operands(p: Prepared, v: Optional[Tensor], mask: Optional[Tensor], *, bias: Optional[Tensor] = None,
                  base2: bool = False) -> tuple[Tensor, Tensor, Optional[Tensor], dict, torch.Size]:
    """Fold the factor into q where it is constant over keys, split the mask into its bool and
    additive parts, expand q, k, v to the common leading shape.

    Returns ``q (*lead, L, d)`` carrying the factor (and log₂e too with ``base2``), ``k``, ``v``,
    the ``blocked``/``bias``/``mult`` parts for :class:`~.tiles.Tiles`, and ``lead``.
    """
    c = LOG2E if base2 else 1.0
    q, k = p.q, p.k
    L, S = q.shape[-2], k.shape[-2]
    cdt = q.dtype
    shapes = [q.shape[:-2], k.shape[:-2]] + ([v.shape[:-2]] if v is not None else [])
    mult = None
    factor = p.factor
    if isinstance(factor, Tensor):
        factor = as_2d(factor.to(device=q.device, dtype=cdt))
        full = broadcast_shapes(factor.shape, (*broadcast_or_raise(LEAD_QKV_SHORT, *shapes), L, S))
        if full is None or tuple(full[-2:]) != (L, S):
            raise error(ShapeError, "errors.kernel_temperature_broadcast", shape=fmt_shape(factor.shape), L=L, S=S)
        shapes.append(factor.shape[:-2])
        if factor.shape[-1] == 1:
            q = q * (factor * c)  # constant over keys: fold into q, L·d multiplies instead of L·S
        else:
            mult = factor  # varies over keys: multiply each score tile
            q = q * c
    else:
        q = q * (factor * c)
    blocked = add = None
    if mask is not None:
        mask = as_2d(mask.to(q.device))
        shapes.append(mask.shape[:-2])
        if mask.dtype == torch.bool:
            blocked = ~mask  # True = may not attend
        else:
            add = mask.to(cdt)
    if bias is not None:
        bias = as_2d(bias.to(device=q.device, dtype=cdt))
        shapes.append(bias.shape[:-2])
        add = bias if add is None else add + bias
    if add is not None and add.is_floating_point():
        # the tiles add add·log₂e: a finite value beyond max/log₂e (finfo.min, the "blocked" of
        # transformers' masks) became −inf there and emptied a row that softmax averages
        add = held_within(add, torch.finfo(cdt).max / (2 * LOG2E))
    lead = broadcast_or_raise(LEAD_QKV_MASK_BIAS, *shapes)
    q = q.expand(*lead, L, q.shape[-1])
    k = k.expand(*lead, S, k.shape[-1])
    if v is not None:
        v = v.to(cdt).expand(*lead, S, v.shape[-1])
    return q, k, v, {"blocked": blocked, "bias": add, "mult": mult}, lead


def check_qk(q: Tensor, k: Tensor) -> None:
    for name, t in (("q", q), ("k", k)):
        require_float(name, t)
    for name, t in (("q", q), ("k", k)):
        if t.dim() < 2:
            raise error(ShapeError, "errors.kernel_min_dims", name=name, shape=fmt_shape(t.shape))
    if q.shape[-1] != k.shape[-1]:
        raise error(ShapeError, "errors.kernel_qk_last_dim", q=fmt_shape(q.shape), k=fmt_shape(k.shape))
    if q.dtype != k.dtype or q.device != k.device:
        raise error(ShapeError, "errors.kernel_qk_dtype_device", q=f"{q.dtype}/{q.device}", k=f"{k.dtype}/{k.device}")


def index(name: str, sel: Index, n: int, device: torch.device) -> tuple[Optional[Tensor], bool]:
    """A selection → (1-D long index tensor or None for all, whether the dim is dropped)."""
    if sel is None:
        return None, False
    if isinstance(sel, (bool, np.bool_)):
        raise bad_index(name, sel)
    if isinstance(sel, numbers.Integral):  # NumPy's integers too
        sel = int(sel)
        if not -n <= sel < n:
            raise error(InputError, "errors.kernel_index_range", name=name, index=sel, n=n, last=n - 1)
        return torch.tensor([sel % n], device=device), True
    if isinstance(sel, slice):
        sel = range(*sel.indices(n))
    if isinstance(sel, Tensor):
        if sel.dim() != 1 or sel.is_floating_point() or sel.dtype == torch.bool:
            raise bad_index(name, sel)
        sel = sel.tolist()
    try:
        items = list(cast("Sequence[int]", sel))  # an int was handled above
    except TypeError:
        raise bad_index(name, sel) from None
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, (bool, np.bool_)) for i in items):
        raise bad_index(name, sel)  # [True, False] would select rows 1 and 0, not where it is True
    idx = [int(i) for i in items]
    if not idx:
        raise error(InputError, "errors.kernel_empty_selection", name=name)
    bad = [i for i in idx if not -n <= i < n]
    if bad:
        raise error(InputError, "errors.kernel_index_range", name=name, index=bad[0], n=n, last=n - 1)
    return torch.tensor([i % n for i in idx], device=device), False


def bad_index(name: str, sel) -> InputError:
    return error(InputError, "errors.kernel_bad_index", name=name, type=type(sel).__name__)
