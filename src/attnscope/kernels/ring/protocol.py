"""The ring's protocol: process-group helpers with time-outs, and the metadata exchange.

Before any attention the ranks exchange a small record of their shapes, dtypes and options, so
that a mismatch raises the same clear :class:`~attnscope.errors.ShapeError` on every rank instead
of a hang or a garbled result; every wait has a time-out.
"""

from __future__ import annotations

import datetime
import struct
from typing import Optional, Sequence, Union

import torch
import torch.distributed as dist

from ...errors import AttnscopeError, ConfigError, ShapeError, fmt_shape
from ...i18n import Msg, error
from ...scorings import SCORINGS
from ...wording import COMMA, joined

Tensor = torch.Tensor

#: How long a rank waits for the others (metadata exchange, each block transfer) before giving up.
DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
META_DIMS = 8  # tensors of up to 8 dims
SEG = META_DIMS + 1  # per tensor: ndim, then its dims right-aligned, −1 before them
META_LEN = 8 + 4 * SEG


class RingTimeout(AttnscopeError, TimeoutError):
    """Another rank did not answer within the time-out (it crashed, hangs, or never called)."""


# ----------------------------------------------------------------------------------------------
# small helpers around torch.distributed
# ----------------------------------------------------------------------------------------------

def as_timedelta(timeout) -> datetime.timedelta:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return datetime.timedelta(seconds=float(timeout))
    raise error(ConfigError, "errors.kernel_ring_timeout", value=repr(timeout))


#: What :func:`wait_all` waits for, named in its RingTimeout (the ring's steps are Msgs made by ring.py).
EXCHANGE = Msg("errors.kernel_ring_exchange")
GATHER_LENGTHS = Msg("errors.kernel_ring_gather_lengths")
GATHER = Msg("errors.kernel_ring_gather")


def wait_all(works, timeout: datetime.timedelta, what: Msg) -> None:
    for w in works:
        try:
            w.wait(timeout=timeout)
        except RuntimeError as e:
            raise error(RingTimeout, "errors.kernel_ring_wait", what=what, seconds=f"{timeout.total_seconds():g}",
                        why=str(e).splitlines()[0][:200]) from None


def comm_device(group, device: torch.device) -> torch.device:
    """gloo moves CPU tensors; other backends (NCCL) move tensors on the inputs' device."""
    return torch.device("cpu") if dist.get_backend(group) == "gloo" else device


def group_info(group) -> tuple[int, int]:
    if not dist.is_available() or not dist.is_initialized():
        raise error(ConfigError, "errors.kernel_ring_no_dist")
    return dist.get_rank(group), dist.get_world_size(group)


def global_rank(group, group_rank: int) -> int:
    return group_rank if group is None else dist.get_global_rank(group, group_rank)



# ----------------------------------------------------------------------------------------------
# metadata exchange: every rank learns every other rank's shapes, or everyone raises
# ----------------------------------------------------------------------------------------------

def shape_row(t: Optional[Tensor]) -> list[int]:
    if t is None:
        return [-2] * SEG
    dims = list(t.shape)[-META_DIMS:]
    return [t.dim()] + [-1] * (META_DIMS - len(dims)) + dims


def seg(row: list[int], which: int) -> list[int]:
    """The shape record of tensor ``which`` (0 q, 1 k, 2 v, 3 key_mask) in a metadata row."""
    return row[8 + which * SEG: 8 + (which + 1) * SEG]


def float_bits(x) -> int:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return struct.unpack("<q", struct.pack("<d", float(x)))[0]
    return -1 if x is None else -3  # a tensor temperature: only its presence is compared


def meta_row(q, k, v, key_mask, causal, scoring, scale, temperature, ok: bool, head_chunks: int = 0) -> list[int]:
    dtype = q.dtype if isinstance(q, Tensor) else None
    row = [0 if ok else 1,
           DTYPES.index(dtype) if dtype in DTYPES else -1,
           {"cpu": 0, "cuda": 1}.get(q.device.type, 2) if isinstance(q, Tensor) else -1,
           int(bool(causal)),
           SCORINGS.index(scoring) if scoring in SCORINGS else -1,
           float_bits(scale), float_bits(temperature), head_chunks]
    for t in (q, k, v, key_mask):
        row += shape_row(t if isinstance(t, Tensor) else None)
    return row[:META_LEN] + [0] * (META_LEN - len(row))


def exchange_meta(row: list[int], group, world: int, device: torch.device,
                   timeout: datetime.timedelta) -> list[list[int]]:
    mine = torch.tensor(row, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(world)]
    work = dist.all_gather(rows, mine, group=group, async_op=True)
    wait_all([work], timeout, EXCHANGE)
    return [r.tolist() for r in rows]


def describe(row: list[int], which: int) -> Union[str, Msg]:
    """Shape of tensor ``which`` (0 q, 1 k, 2 v, 3 key_mask) from a metadata row, as text (a Msg
    "none" where that rank passed none)."""
    s = seg(row, which)
    if s[0] == -2:
        return Msg("errors.kernel_ring_none")
    return fmt_shape([d for d in s[1:] if d != -1])


def check_agreement(rows: list[list[int]], rank: int) -> None:
    """Raise the same ShapeError on every rank if the ranks' inputs do not fit together."""
    bad = [r for r, row in enumerate(rows) if row[0] != 0]
    if bad:
        if rank in bad:
            return  # this rank raises its own, more detailed error
        raise error(ShapeError, "errors.kernel_ring_rejected", ranks=", ".join(map(str, bad)))

    def disagree(what: str, values: Sequence) -> None:
        if len(set(values)) > 1:
            listed = joined((Msg("errors.kernel_ring_rank_value", rank=r, value=v) for r, v in enumerate(values)), COMMA)
            raise error(ShapeError, "errors.kernel_ring_disagree", what=Msg(f"errors.kernel_ring_what.{what}"),
                        listed=listed)

    disagree("dtype", [DTYPES[row[1]] if row[1] >= 0 else "?" for row in rows])
    disagree("device type", [["cpu", "cuda", "other"][row[2]] for row in rows])
    disagree("causal", [bool(row[3]) for row in rows])
    disagree("scoring", [SCORINGS[row[4]] for row in rows])
    disagree("scale", [row[5] for row in rows])
    disagree("temperature", [row[6] for row in rows])
    disagree("head_chunks", ["auto" if row[7] == 0 else row[7] for row in rows])
    for which, name in enumerate(("q", "k", "v", "key_mask")):
        # Everything but the sequence dim (−2 for q/k/v, −1 for the key mask) must agree.
        seq = -1 if which == 3 else -2

        def key(row, which=which, seq=seq):
            s = seg(row, which)
            return (s[0], tuple(d for i, d in enumerate(s[1:]) if i != META_DIMS + seq))
        if len({key(row) for row in rows}) > 1:
            listed = joined((Msg("errors.kernel_ring_rank_value", rank=r, value=describe(row, which))
                             for r, row in enumerate(rows)), COMMA)
            where = Msg("errors.kernel_ring_length" if which == 3 else "errors.kernel_ring_seq_length")
            raise error(ShapeError, "errors.kernel_ring_shape", name=name, where=where, listed=listed)

