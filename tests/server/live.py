"""`attnscope serve` as a real uvicorn process on a free loopback port (for tests)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def live_server(*args: str, timeout: float = 90):
    """Yield ``(url, process)`` once /healthz answers; terminate the process afterwards."""
    import torch

    port = free_port()
    # the same number of threads as this process: float32 sums then round the same way, so the
    # served numbers equal the ones this process computes to the last bit
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(torch.get_num_threads()))
    proc = subprocess.Popen([sys.executable, "-m", "attnscope", "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"attnscope serve exited: {proc.stdout.read().decode(errors='replace')}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"attnscope serve did not come up in {timeout:.0f} s")
            time.sleep(0.3)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
