"""Long sequences: time and peak memory of exact attention at L ∈ {2k, 8k, 16k} tokens.

Shape: batch 1 × 12 heads × L × d_head 64, float32, self-attention, not causal. Runs:

  naive           softmax(q kᵀ / √d) v with the L×L matrices in memory (skipped where it would
                  need more than --naive-limit GiB: the machine is shared)
  sdpa            torch.nn.functional.scaled_dot_product_attention ("scaled" scoring)
  blockwise       attnscope.blockwise_attention, cosine scoring (which SDPA cannot form)
  blockwise/sc    the same kernel on "scaled" scoring: the same maths as sdpa
  ring ×2, ×4     attnscope.distributed.ring_attention, cosine, on 2 / 4 local gloo processes,
                  each holding L/P tokens

One run each (after a warm-up call on 512 tokens), every run in a fresh process forked from a
server that has torch loaded, with the whole machine's cores (ring: cores / P threads per rank).

Time: wall-clock seconds of the call (ring: the slowest rank, all ranks released together).
Memory: the growth of the process's peak resident set during the call — the kernel's peak-RSS
counter is reset (``/proc/self/clear_refs``) right before it and read after, so it is what the
call itself added on top of its inputs, as seen by the OS (CPU torch frees large blocks back to
it). Ring: the largest per-rank value. tracemalloc cannot see torch's allocations; this can.

Usage: ``python benchmarks/long.py [--lengths 2048 8192 16384] [--naive-limit 4] [--only blockwise]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

HEADS, D_HEAD = 12, 64


# ----------------------------------------------------------------------------------------------
# measuring inside a process
# ----------------------------------------------------------------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    """Reset VmHWM (peak RSS) to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(fn) -> tuple[float, float]:
    """(seconds, MiB of peak RSS growth) of one call of fn()."""
    import resource
    rss0 = _status_kib("VmRSS")
    if _reset_peak():
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        peak = _status_kib("VmHWM")
    else:  # fallback: ru_maxrss, a lifetime peak (this process only ran small things before)
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return dt, max(0, peak - rss0) / 1024


def _inputs(L: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, HEADS, L, D_HEAD, generator=g) for _ in range(3)]  # (B, H, L, d_head) ×3


def _call(method: str, q, k, v):
    import torch.nn.functional as F
    from attnscope.blockwise import blockwise_attention
    if method == "naive":
        return torch.softmax((q @ k.transpose(-2, -1)) * D_HEAD ** -0.5, dim=-1) @ v
    if method == "sdpa":
        return F.scaled_dot_product_attention(q, k, v)
    if method == "blockwise":
        return blockwise_attention(q, k, v, scoring="cosine")
    if method == "blockwise/sc":
        return blockwise_attention(q, k, v, scoring="scaled")
    raise ValueError(method)


def single(rank: int, world: int, method: str, L: int, threads: int):
    """One process, whole sequence."""
    torch.set_num_threads(threads)
    with torch.no_grad():
        _call(method, *_inputs(512, 1))  # warm-up: kernels, thread pool, allocator
        q, k, v = _inputs(L, 0)
        return measure(lambda: _call(method, q, k, v))


def ring(rank: int, world: int, L: int):
    """One rank of the ring: its own L/P tokens (values do not matter for time and memory)."""
    import torch.distributed as dist
    from attnscope.distributed import ring_attention
    with torch.no_grad():
        ring_attention(*_inputs(512 // world, rank), scoring="cosine")  # warm-up, opens the links
        q, k, v = _inputs(L // world, rank)
        dist.barrier()
        return measure(lambda: ring_attention(q, k, v, scoring="cosine"))


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------

def mem_available_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) / 2 ** 20
    except (OSError, KeyError, ValueError):
        return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 16384])
    ap.add_argument("--naive-limit", type=float, default=4.0,
                    help="GiB the naive run may take (also at most 30%% of available memory)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads of the single-process runs")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--only", nargs="+", default=None, help="run only these (e.g. sdpa blockwise 'ring ×2')")
    args = ap.parse_args()

    from tqdm import tqdm
    from attnscope.distributed import run_local

    cores = os.cpu_count() or 1
    runs = [(L, m) for L in args.lengths for m in ("naive", "sdpa", "blockwise", "blockwise/sc")]
    runs += [(L, f"ring ×{p}") for L in args.lengths for p in args.ranks]
    runs.sort(key=lambda r: r[0])
    if args.only:
        runs = [r for r in runs if r[1] in args.only or r[1] == "sdpa"]  # sdpa: the reference
    rows = []
    t_start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    bar = tqdm(runs, desc="long-sequence benchmark", file=sys.stderr, unit="run")
    for L, method in bar:
        bar.set_postfix_str(f"L={L} {method}")
        if method == "naive":
            need = 2 * HEADS * L * L * 4 / 2 ** 30  # the scores and the softmax, float32
            limit = min(args.naive_limit, 0.3 * mem_available_gib())
            if need > limit:
                rows.append((L, method, None, None, f"skipped: needs {need:.1f} GiB (limit {limit:.1f})"))
                continue
        if method.startswith("ring"):
            p = int(method.split("×")[1])
            res = run_local(ring, p, (L,), timeout=900, threads=max(1, cores // p))
            seconds, mib = max(r[0] for r in res), max(r[1] for r in res)
        else:
            seconds, mib = run_local(single, 1, (method, L, args.threads), timeout=900, threads=args.threads)[0]
        rows.append((L, method, seconds, mib, ""))
    bar.close()

    sdpa = {L: s for L, m, s, _, _ in rows if m == "sdpa"}
    print(f"\nB=1, H={HEADS}, d_head={D_HEAD}, float32, {cores} cores, load average at start {load:.1f}; "
          f"total {time.perf_counter() - t_start:.0f} s\n")
    print("| L | run | seconds | × sdpa | peak MiB (per rank) | MiB per 1k tokens | note |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for L, method, s, mib, note in rows:
        if s is None:
            print(f"| {L} | {method} | – | – | – | – | {note} |")
            continue
        per_rank_tokens = L / (int(method.split("×")[1]) if method.startswith("ring") else 1)
        print(f"| {L} | {method} | {s:.2f} | {s / sdpa[L]:.2f} | {mib:.0f} | {mib / per_rank_tokens * 1000:.1f} | {note} |")


if __name__ == "__main__":
    main()
