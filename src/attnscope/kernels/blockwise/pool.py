"""Query tiles side by side, each on one core with single-threaded ops.

Query tiles are independent, so they can run side by side — the way the fused kernels split
their work. Leaving the parallelism to each op instead (torch's default) puts an OpenMP barrier
after every small op on a tile; where the cores are shared that costs several times the
arithmetic (measured: 4-6× slower at 2 threads on this project's busy 2-core machine, against
1.2-1.6× SDPA's time with the tiles spread over threads).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ...threads import in_lane, lane_pool
from .tiles import Tiles

#: Below this many scores (lead · L · S) the tiles run one after the other.
PARALLEL_MIN_WORK = 1 << 22


def map_query_tiles(fn: Callable[[int], Any], T: Tiles, parallel: bool) -> list:
    """``[fn(ti) for every query tile]``, spread over torch's thread count when that helps."""
    n_tiles = len(T.q_tiles)
    threads = torch.get_num_threads()
    work = T.q.shape[:-2].numel() * T.L * T.S
    pool = None
    if parallel and threads > 1 and n_tiles >= threads and work >= PARALLEL_MIN_WORK \
            and T.q.device.type == "cpu" and not in_lane():
        pool = lane_pool(threads)
    if pool is None:
        return [fn(ti) for ti in range(n_tiles)]

    def task(ti: int):
        with torch.no_grad():  # grad mode is per thread
            return fn(ti)
    # Causal: later tiles see more keys; handing the tiles out one by one balances the load.
    return list(pool.map(task, range(n_tiles)))

