"""Running a function on P local processes joined in a process group (tests, benchmarks, trying
ring attention on one machine)."""

from __future__ import annotations

import datetime
import io
import os
import queue as queue_mod
import tempfile
import time
import traceback
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist

from ...errors import ConfigError
from ...i18n import error
from .protocol import RingTimeout


def child(rank: int, fn: Callable, world: int, args: tuple, backend: str, init_file: str,
           threads: Optional[int], results) -> None:
    try:
        if threads:
            torch.set_num_threads(threads)
        dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        try:
            value = fn(rank, world, *args)
        finally:
            dist.destroy_process_group()
        buf = io.BytesIO()
        torch.save(value, buf)
        results.put((rank, True, buf.getvalue()))
    except BaseException as e:  # report everything, the parent raises
        results.put((rank, False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def run_local(fn: Callable, world_size: int, args: tuple = (), *, backend: str = "gloo",
              timeout: float = 120.0, threads: Optional[int] = 1) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` fresh local processes joined in a
    process group, and return their results in rank order.

    ``fn`` must be importable (a module-level function); results are anything ``torch.save``
    can write. Each process uses ``threads`` intra-op threads. Raises RuntimeError naming the
    rank and its error if one fails, and :class:`RingTimeout` (after killing them all) if they
    have not finished within ``timeout`` seconds.
    """
    if world_size < 1:
        raise error(ConfigError, "errors.kernel_ring_world_size", value=world_size)
    import torch.multiprocessing as mp
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "attnscope.distributed"])
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="attnscope-ring-") as tmp:
        init_file = os.path.join(tmp, "rendezvous")
        procs = [ctx.Process(target=child, args=(r, fn, world_size, args, backend, init_file, threads, results),
                             daemon=True) for r in range(world_size)]
        for p in procs:
            p.start()
        got: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        try:
            while len(got) < world_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise error(RingTimeout, "errors.kernel_ring_run_local_timeout",
                                ranks=sorted(set(range(world_size)) - set(got)), seconds=f"{timeout:g}")
                try:
                    rank, ok, payload = results.get(timeout=min(left, 1.0))
                except queue_mod.Empty:
                    dead = [r for r, p in enumerate(procs) if not p.is_alive() and p.exitcode not in (0, None)
                            and r not in got]
                    if dead:
                        raise RuntimeError(f"run_local: rank {dead[0]} died with exit code {procs[dead[0]].exitcode}") from None
                    continue
                if not ok:
                    raise RuntimeError(f"run_local: rank {rank} failed: {payload}")
                got[rank] = torch.load(io.BytesIO(payload), weights_only=False)
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join()
    return [got[r] for r in range(world_size)]
