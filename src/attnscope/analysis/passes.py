"""The passes of :mod:`.stats` over each layer's weights, and what makes them cheap on a CPU:
buffers kept per thread (the single-threaded workers are :func:`attnscope.threads.lane_pool`'s).

:func:`chunk_passes` reads the weights of a few texts seven times (the entropy's clamp, log,
multiply and nansum, the row maximum, two matrix products; six without masked keys, where the clamp
is left out); the rest of the statistics is (B, H, L)-sized work
in :func:`.stats.attention_sums`.
"""

from __future__ import annotations

import math
import threading

import torch

Tensor = torch.Tensor

_LOCAL = threading.local()


def buffer(name: str, shape, dtype, device) -> Tensor:
    """A tensor to write into. On a CPU, one per name and thread is kept (up to
    :data:`KEEP_BYTES`) and reused by the next call that fits in it: a fresh one costs a page
    fault per 4 KiB on its first write, about a pass's time."""
    shape = tuple(shape)
    n = math.prod(shape)
    if torch.device(device).type != "cpu" or n * dtype.itemsize > KEEP_BYTES:
        return torch.empty(shape, dtype=dtype, device=device)
    cache = _LOCAL.__dict__.setdefault("buffers", {})
    t = cache.get(name)
    if t is None or t.dtype != dtype or t.numel() < n:
        t = cache[name] = torch.empty(n, dtype=dtype)
    return t[:n].view(shape)


#: Relative margin below a row's maximum within which a product's weight of the previous or next
#: key is checked on the weights themselves (the products are exact for one-hot columns in IEEE
#: float32; the margin covers a reduced-precision matmul setting, e.g. bfloat16 passes).
NEAR = 2.0**-6

#: Largest buffer kept per name and thread for the next call.
KEEP_BYTES = 64 * 2**20


def unique_max_at(w: Tensor, row_max: Tensor, near_prev: Tensor, near_next: Tensor) -> tuple[Tensor, Tensor]:
    """``(B, H, L)`` bool each: the previous / next key is the row's unique maximum.

    Only the rows whose previous or next weight is near the maximum (``near_*`` (B, H, L), a
    superset) are read again, and from w itself, so that the answer is exact whatever the
    products' rounding: the key's own weight equals the row's maximum, and with that key set to
    -inf the rest of the row stays below it (ties do not count)."""
    L = w.shape[-1]
    rows = near_prev | near_next  # (B, H, L)
    at_prev = torch.zeros(rows.numel(), dtype=torch.bool, device=rows.device)
    at_next = torch.zeros_like(at_prev)
    idx = rows.reshape(-1).nonzero().squeeze(1)  # (K,) flat row numbers
    if idx.numel():
        cand = w.reshape(-1, L).index_select(0, idx)  # (K, L), a copy
        i = idx % L
        top = row_max.reshape(-1)[idx]  # (K,)
        col_p, col_n = (i - 1).clamp(min=0), (i + 1).clamp(max=L - 1)  # (K,) each
        is_p = (i >= 1) & (cand.gather(1, col_p[:, None]).squeeze(1) == top)
        is_n = (i <= L - 2) & (cand.gather(1, col_n[:, None]).squeeze(1) == top)
        cand.scatter_(1, torch.where(is_p, col_p, col_n)[:, None], float("-inf"))
        unique = (is_p | is_n) & (cand.amax(-1) < top)  # a tie of prev and next leaves one at the top
        at_prev[idx], at_next[idx] = unique & is_p, unique & is_n
    return at_prev.view_as(rows), at_next.view_as(rows)


def kept_sum(x: Tensor, keep: Tensor, dim: int) -> Tensor:
    """``Σ x·keep`` over ``dim`` (in x's dtype: float32 sums of a text's queries are within 3e-8
    of float64 ones) and then over texts (dim 0, float64); x is overwritten. ``keep`` is 1 for
    the counted queries, 0 for the others, broadcast to x.

    Rows of padding queries may hold NaN or inf (a fully masked row), which a 0 does not
    cancel: where the sums are not finite, the uncounted values are set to 0 instead (NaN then
    survives only where it counts, as it should)."""
    s = x.mul_(keep).sum(dim).sum(0, dtype=torch.float64)
    if not bool(torch.isfinite(s).all()):
        s = x.masked_fill_(keep == 0, 0.0).sum(dim).sum(0, dtype=torch.float64)
    return s


def chunk_passes(w: Tensor, by_offset: Tensor, key_rows: Tensor, ent: Tensor, row_max: Tensor, offs: Tensor,
                 mass: Tensor, *, zeros: bool = True) -> None:
    """The full-size passes over the weights ``w (c, H, L, L)`` of a few texts, written into
    ``ent, row_max (c, H, L)``, ``offs (c, L, 5, H)`` and ``mass (c, R, H·L)``.

    Seven passes: four for the entropy (clamp, log, multiply, nansum: one scratch matrix, reused
    across calls), the row maximum, and two matrix products that read w once for all the rest (the
    five columns of ``by_offset``, per query row i, and the rows of ``key_rows``). Six when
    ``zeros`` is False (no key is masked: a bidirectional batch without padding), where the
    entropy's clamp is left out (see below). The forms are
    the fastest measured on CPU (benchmarks/analysis.py): clamp+log+nansum beats xlogy
    and entr; a product with a one-hot column is exactly the weight it picks (the other terms
    are exact zeros).
    """
    c, H, L, _ = w.shape
    scratch = buffer("scratch", w.shape, w.dtype, w.device)  # (c, H, L, L)
    # The first read of w. ln of an exact 0 (every masked key: half of a causal matrix) takes the
    # CPU log's slow path, 10× a normal entry, so zeros (and subnormals) become the smallest normal
    # first: 0 · ln(tiny) = 0 is exactly the 0 · ln 0 = 0 the entropy wants, and for
    # 0 < w < tiny, w · ln(tiny) differs from w · ln w by less than 1e-36.
    # Without masked keys the zeros are the rare underflows of a sharp row: the log reads w itself
    # (a pass fewer), its -inf times 0 is a NaN that the nansum skips, the same 0 the clamp gives
    # (a subnormal w's w · ln w, not w · ln(tiny): closer to the float64 value, not further).
    if zeros:
        torch.clamp_min(w, torch.finfo(w.dtype).tiny, out=scratch)
        torch.log_(scratch)
    else:
        torch.log(w, out=scratch)
    torch.nansum(scratch.mul_(w), -1, out=ent)  # (c, H, L): Σ_j w_ij ln w_ij (a NaN row: see the caller)
    torch.amax(w, -1, out=row_max)  # (c, H, L)
    rows = w.view(c * H, L, L).transpose(0, 1)  # (L, c·H, L): query i's rows of every head
    if c == 1:
        torch.bmm(by_offset, rows.transpose(1, 2), out=offs[0])  # (L, 5, H)
    else:
        offs.copy_(torch.bmm(by_offset, rows.transpose(1, 2)).view(L, 5, c, H).permute(2, 0, 1, 3))  # (c, L, 5, H)
    torch.bmm(key_rows, w.view(c, H * L, L).transpose(1, 2), out=mass)  # (c, R, H·L): Σ_j row_j w_ij
