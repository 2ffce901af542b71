"""Torch's intra-op thread count, set for a block and restored after it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the body with ``n`` intra-op threads, then restore the caller's setting.

    The experiments run on one thread: matrix products then sum in one fixed order, so that the
    same seed gives bit-identical numbers whatever machine or ``--jobs`` setting is used; the
    viewer's small per-head sums run on one thread because the pool's hand-offs cost more than
    they save.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
