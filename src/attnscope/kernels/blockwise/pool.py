"""Query tiles side by side, each on one core with single-threaded ops.

Query tiles are independent, so they can run side by side — the way the fused kernels split
their work. Leaving the parallelism to each op instead (torch's default) puts an OpenMP barrier
after every small op on a tile; where the cores are shared that costs several times the
arithmetic (measured: 4-6× slower at 2 threads on this project's busy 2-core machine, against
1.2-1.6× SDPA's time with the tiles spread over threads).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import torch

from .tiles import Tiles

POOLS: dict[int, Optional[ThreadPoolExecutor]] = {}
POOL_LOCK = threading.Lock()
POOL_PID = os.getpid()  # a forked child inherits the dict but not the threads: start afresh

#: Below this many scores (lead · L · S) the tiles run one after the other.
PARALLEL_MIN_WORK = 1 << 22


def tile_pool(n: int) -> Optional[ThreadPoolExecutor]:
    """n worker threads whose torch ops run on one thread each; None where that cannot be set.

    OpenMP keeps the thread count per thread: a worker's first torch call copies the process
    default, ``torch.set_num_threads(1)`` then lowers its own. That call also lowers the process
    default, which is restored once every worker has started.
    """
    global POOL_PID
    with POOL_LOCK:
        if POOL_PID != os.getpid():
            POOLS.clear()
            POOL_PID = os.getpid()
        if n in POOLS:
            return POOLS[n]
        if "OpenMP" not in torch.__config__.parallel_info():
            POOLS[n] = None  # other backends have one process-wide pool: leave it alone
            return None
        before = torch.get_num_threads()
        started = threading.Barrier(n + 1)

        def init() -> None:
            torch.get_num_threads()
            torch.set_num_threads(1)
            started.wait()
        pool = ThreadPoolExecutor(n, thread_name_prefix="attnscope-tiles", initializer=init)
        for _ in range(n):  # a pool starts its threads on demand: make it start all n now
            pool.submit(lambda: None)
        started.wait()
        torch.set_num_threads(before)
        POOLS[n] = pool
        return pool


def map_query_tiles(fn: Callable[[int], Any], T: Tiles, parallel: bool) -> list:
    """``[fn(ti) for every query tile]``, spread over torch's thread count when that helps."""
    n_tiles = len(T.q_tiles)
    threads = torch.get_num_threads()
    work = T.q.shape[:-2].numel() * T.L * T.S
    pool = None
    if parallel and threads > 1 and n_tiles >= threads and work >= PARALLEL_MIN_WORK \
            and T.q.device.type == "cpu" and not in_pool():
        pool = tile_pool(threads)
    if pool is None:
        return [fn(ti) for ti in range(n_tiles)]

    def task(ti: int):
        with torch.no_grad():  # grad mode is per thread
            return fn(ti)
    # Causal: later tiles see more keys; handing the tiles out one by one balances the load.
    return list(pool.map(task, range(n_tiles)))




def in_pool() -> bool:
    return threading.current_thread().name.startswith("attnscope-tiles")

