"""Torch's intra-op threads: a count set for a block, and lanes — worker threads whose ops each run
on one thread, for work that splits into independent pieces of small ops.

Leaving the parallelism to each op (torch's default) puts an OpenMP barrier after every small op;
where the cores are shared that costs more than the arithmetic (measured on this project's 2-core
machine: the blockwise kernel's query tiles 4-6× slower at 2 threads than spread over lanes, ALTI's
layers slower at 2 threads than at 1). Lanes run the pieces side by side instead, one core each.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Optional, TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")

#: The thread names of the lanes (:func:`in_lane` reads them).
LANE_PREFIX = "attnscope-lane"

POOLS: dict[int, ThreadPoolExecutor] = {}
POOL_LOCK = threading.Lock()
POOL_PID = os.getpid()  # a forked child inherits the dict but not the threads: start afresh


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


def one_thread() -> None:
    """Make the calling thread's torch ops run on one thread, whatever the process's setting.

    torch sets a thread's OpenMP thread count from the process's setting lazily, at the thread's
    first op; asking for the count first does that now, so that the 1 set after it sticks (a set
    before it would be undone once the process's setting is restored)."""
    torch.get_num_threads()
    torch.set_num_threads(1)


def lane_pool(n: int) -> Optional[ThreadPoolExecutor]:
    """``n`` lanes: worker threads whose torch ops each run on one thread; None for ``n`` ≤ 1 or
    where torch's threads are not OpenMP's (other backends have one process-wide pool: left alone).

    OpenMP keeps the thread count per thread, so the workers set theirs to 1 and the caller's stays
    as it was (restored once every worker has started, since the first set also moves the process
    default). One pool per ``n``, started once a process."""
    global POOL_PID
    if n <= 1 or "OpenMP" not in torch.__config__.parallel_info():
        return None
    with POOL_LOCK:
        if POOL_PID != os.getpid():
            POOLS.clear()
            POOL_PID = os.getpid()
        if n not in POOLS:
            before = torch.get_num_threads()
            started = threading.Barrier(n + 1)

            def init() -> None:
                one_thread()
                started.wait()
            pool = ThreadPoolExecutor(n, thread_name_prefix=LANE_PREFIX, initializer=init)
            for _ in range(n):  # a pool starts its threads on demand: make it start all n now
                pool.submit(lambda: None)
            started.wait()
            torch.set_num_threads(before)
            POOLS[n] = pool
        return POOLS[n]


def in_lane() -> bool:
    """Whether the calling thread is a lane (work it hands to the lanes would wait on itself)."""
    return threading.current_thread().name.startswith(LANE_PREFIX)


def map_lanes(fn: Callable[[T], R], items: Iterable[T], device: torch.device | str = "cpu") -> list[R]:
    """``[fn(item) for item in items]``, the items spread over torch's thread count in lanes (each
    call on one thread, in the caller's grad mode) where that can help: a CPU ``device``, more than
    one thread and item, and not already in a lane. The results come in the items' order."""
    items = list(items)
    threads = torch.get_num_threads()
    pool = None
    if torch.device(device).type == "cpu" and threads > 1 and len(items) > 1 and not in_lane():
        pool = lane_pool(min(threads, len(items)))
    if pool is None:
        return [fn(item) for item in items]
    grad = torch.is_grad_enabled()

    def task(item: T) -> R:
        with torch.set_grad_enabled(grad):  # grad mode is per thread
            return fn(item)
    return list(pool.map(task, items))
