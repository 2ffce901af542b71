"""The environment every benchmark runs in, set before torch is imported (import this module first).

OpenMP threads that spin while they wait for work turn a loaded machine's scheduling into the
number being measured: on this 2-core host a 0.149 s forward took 3.47 s with torch's default
policy while another process ran. ``OMP_WAIT_POLICY=PASSIVE`` makes waiting threads sleep, for
attnscope and its reference alike (both run in the same process, or in child processes that inherit
the environment). A value already set in the environment is kept, and printed by :func:`describe`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def describe() -> str:
    """One line: the wait policy both sides run under, the CPUs, torch's threads and the load."""
    import torch

    return (f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} (both sides), {os.cpu_count()} CPUs, "
            f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")


def fresh_process(script: str, *args: str) -> dict:
    """Run ``script`` (Python source) in a new interpreter with ``args`` as its argv and this
    environment; its last stdout line is JSON, returned as a dict, or ``{"error": …}`` with the
    last three lines of its output when it failed. A fresh process per point keeps one point's
    heap from shaping the next one's page faults and peak."""
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                         env=dict(os.environ))
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(out.stdout.strip().splitlines()[-1])
