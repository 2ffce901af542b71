"""Long sequences: the log-sum-exp kernels and ring attention against SDPA, as ratios in one run.

Shape: batch 1 × 12 heads × L × d_head 64, float32, self-attention, not causal.

Part 1, blockwise (this process, ``--threads`` threads, default 2): for every registered scoring,
``attnscope.blockwise_attention(q, k, v, scoring=…, return_lse=True)`` — which prepares q and k
(cosine: unit length; qknorm: LayerNorm) and runs PyTorch's fused kernel that returns the
log-sum-exp — against ``F.scaled_dot_product_attention(q, k, v)`` on the same tensors, and
against the scoring's own preparation followed by SDPA (cosine, qknorm: "× prepared"): forward
(no gradient), and the backward alone (``out.backward(g)`` after a forward with gradients; the
scorings' preparation is differentiated too). ``--online`` adds attnscope's own online softmax
(``kernel="online"``, the reference kernel) for comparison.

Part 2, ring (``--ranks`` local gloo processes, 1 thread each, each holding L/P tokens; each of
``--ring-scorings``, default scaled — the maths SDPA runs — and cosine): per
round, rank 0 first runs the single-process references on the whole sequence with ``--threads``
threads while the other ranks wait at a barrier — SDPA forward, SDPA backward, and the
blockwise forward (the same scoring, return_lse) whose peak memory is the memory reference —
then all ranks run ``ring_attention`` forward, and forward + backward (the backward timed alone).
Time: the slowest rank's. Memory: the growth of each process's peak resident set during one call
(the kernel's peak-RSS counter is reset through ``/proc/self/clear_refs`` right before it), the
largest rank's for the ring: what the call added on top of its inputs, allocator slack included.

Timing: the reference and the candidates are interleaved round by round in the same process (the
ring: in the same processes), ``--rounds`` rounds after a warm-up; each time shown is the fastest
round (the one least disturbed by other processes: load only ever adds time, as ``timeit``
advises) and each ratio is the ratio of those fastest times. The
load is reported beside the numbers: the load average, and SDPA's time at L = 128 at the start
and the end (quiet: ~0.39 ms on this project's 2-core machine).

Usage: ``python benchmarks/long.py [--lengths 2048 8192 16384] [--ring-lengths 8192 16384]
[--ranks 2 4] [--rounds 3] [--scorings scaled cosine] [--ring-scorings scaled] [--only blockwise|ring]
[--online]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time

import bench_env  # first: sets the thread wait policy before torch starts
import torch
import torch.nn.functional as F

HEADS, D_HEAD = 12, 64
PEAK_OK = os.path.exists("/proc/self/clear_refs")


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


def exact_rss() -> None:
    """Make freed memory leave the resident set: glibc otherwise raises its mmap threshold after
    the first large free and keeps later large blocks on its heap, so that a second call's peak
    would hide in memory the first one freed. A fixed threshold turns that off."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 256 << 10)  # M_MMAP_THRESHOLD: blocks ≥ 256 KiB are mapped, unmapped on free
        libc.mallopt(-1, 1 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def measure(fn) -> tuple[float, float, float]:
    """(seconds, MiB of peak RSS growth — NaN where it cannot be reset —, CPU seconds of the
    whole process, every thread) of one call of fn()."""
    rss0 = _status_kib("VmRSS")
    ok = _reset_peak()
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dt, (max(0, _status_kib("VmHWM") - rss0) / 1024 if ok else float("nan")), cpu


def inputs(L: int, seed: int, grad: bool = False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, HEADS, L, D_HEAD, generator=g).requires_grad_(grad) for _ in range(3)]  # (B, H, L, d)


def sdpa_small_ms(repeats: int = 50) -> float:
    """SDPA at L = 128 (median ms): the load gauge (quiet: ~0.39 ms at 2 threads)."""
    q, k, v = inputs(128, 9)
    with torch.no_grad():
        F.scaled_dot_product_attention(q, k, v)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# ----------------------------------------------------------------------------------------------
# the calls
# ----------------------------------------------------------------------------------------------

def forward_call(name: str, scoring: str):
    from attnscope.blockwise import blockwise_attention
    if name == "sdpa":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if name == "prepared":  # the scoring's own preparation (differentiable), then SDPA on q', k'
        from attnscope.kernels.qk import fold_factor, prepare

        def sdpa_prepared(q, k, v):
            p = prepare(q, k, scoring)
            qf, scale = fold_factor(p)
            return F.scaled_dot_product_attention(qf, p.k, v, scale=scale)
        return sdpa_prepared
    kernel = "online" if name == "online" else "auto"
    return lambda q, k, v: blockwise_attention(q, k, v, scoring=scoring, return_lse=True, kernel=kernel)[0]


def time_forward(fn, q, k, v) -> tuple[float, float, float]:
    with torch.no_grad():
        return measure(lambda: fn(q, k, v))


def time_backward(fn, q, k, v, g_out) -> float:
    """Seconds of ``out.backward(g_out)`` alone."""
    for t in (q, k, v):
        t.grad = None
    out = fn(q, k, v)
    t0 = time.perf_counter()
    out.backward(g_out)
    return time.perf_counter() - t0


def blockwise_part(lengths, scorings, rounds: int, online: bool, backward: bool):
    """Rows (L, scoring, kernel, fwd sdpa s, fwd s, fwd ratio, bwd sdpa s, bwd s, bwd ratio, MiB sdpa, MiB)."""
    from tqdm import tqdm
    cands = [("fused", s) for s in scorings] + ([("online", "cosine")] if online else [])
    # SDPA on the prepared q', k' where the preparation is not the identity (cosine, qknorm)
    cands += [("prepared", s) for s in scorings if s in ("cosine", "qknorm")]
    rows = []
    total = len(lengths) * rounds
    bar = tqdm(total=total, desc="blockwise (rounds)", file=sys.stderr)
    for L in lengths:
        q, k, v = inputs(L, 0)
        qg, kg, vg = inputs(L, 0, grad=True)
        g_out = torch.randn(1, HEADS, L, D_HEAD)
        sdpa = forward_call("sdpa", "scaled")
        fns = {c: forward_call(*c) for c in cands}
        small_q = inputs(256, 1)
        for fn in [sdpa, *fns.values()]:  # warm-up: kernels, allocator
            time_forward(fn, *small_q)
        fwd = {c: [] for c in cands}
        bwd = {c: [] for c in cands}
        mem = {c: [] for c in cands}
        ref_f, ref_b, ref_m = [], [], []
        for r in range(rounds):
            order = cands if r % 2 == 0 else cands[::-1]
            t_ref, m_ref, _ = time_forward(sdpa, q, k, v)
            ref_f.append(t_ref)
            ref_m.append(m_ref)
            for c in order:
                t, m, _ = time_forward(fns[c], q, k, v)
                fwd[c].append(t / t_ref)
                mem[c].append(m)
            if backward:
                b_ref = time_backward(sdpa, qg, kg, vg, g_out)
                ref_b.append(b_ref)
                for c in order:
                    bwd[c].append(time_backward(fns[c], qg, kg, vg, g_out) / b_ref)
            bar.update(1)
        med = statistics.median
        for c in cands:
            if c[0] == "prepared":
                continue
            f_c = min(r * t for r, t in zip(fwd[c], ref_f))  # the candidate's own fastest time
            b_c = min(r * t for r, t in zip(bwd[c], ref_b)) if backward else None
            pc = ("prepared", c[1])
            if pc in fwd:  # the same scoring's preparation + SDPA: what the kernel path itself adds
                pf = min(r * t for r, t in zip(fwd[pc], ref_f))
                pb = min(r * t for r, t in zip(bwd[pc], ref_b)) if backward else None
            else:  # no preparation: plain SDPA is that reference
                pf, pb = min(ref_f), (min(ref_b) if backward else None)
            rows.append((L, c[1], c[0], min(ref_f), f_c, f_c / min(ref_f),
                         min(ref_b) if backward else None, b_c, b_c / min(ref_b) if backward else None,
                         med(ref_m), med(mem[c]), f_c / pf, b_c / pb if backward else None))
        del q, k, v, qg, kg, vg, g_out
    bar.close()
    return rows


# ----------------------------------------------------------------------------------------------
# ring: one function run on every rank
# ----------------------------------------------------------------------------------------------

def ring_worker(rank: int, world: int, L: int, rounds: int, threads: int, scoring: str):
    """Per round: rank 0 runs the references (``threads`` threads) while the others wait; then
    every rank runs the ring (1 thread). Returns per-round times and peaks."""
    import torch.distributed as dist

    from attnscope.distributed import ring_attention

    exact_rss()
    torch.set_num_threads(1)
    n = L // world
    part = slice(rank * n, (rank + 1) * n)
    full = inputs(L, 0)  # the same sequence on every rank; rank 0 keeps it for the references
    q, k, v = (t[..., part, :].clone() for t in full)  # (B, H, L/P, d)
    q_full, k_full, v_full = full if rank == 0 else (None, None, None)
    del full
    g_out = torch.randn(1, HEADS, n, D_HEAD, generator=torch.Generator().manual_seed(rank))
    with torch.no_grad():
        ring_attention(*inputs(256 // world, rank), scoring=scoring)  # warm-up, opens the links
    res = {k_: [] for k_ in ("sdpa_f", "sdpa_b", "bw_f", "bw_mem", "sdpa_mem", "ring_f", "ring_mem", "ring_b",
                             "sdpa_cpu", "ring_cpu", "idle_cpu")}

    def ring_fwd():
        with torch.no_grad():
            ring_attention(q, k, v, scoring=scoring)

    def wait_all_ranks() -> None:
        # rank 0's references may take minutes on a loaded machine: longer than the group's
        # time-out, which a plain barrier obeys
        dist.monitored_barrier(timeout=datetime.timedelta(hours=2), wait_all_ranks=True)

    def ring_bwd() -> float:
        ql, kl, vl = (t.clone().requires_grad_() for t in (q, k, v))
        out = ring_attention(ql, kl, vl, scoring=scoring)
        wait_all_ranks()
        t0 = time.perf_counter()
        out.backward(g_out)
        return time.perf_counter() - t0

    for r in range(rounds):
        wait_all_ranks()
        c_idle = time.process_time()
        if rank == 0:
            torch.set_num_threads(threads)
            if r == 0:
                time_forward(forward_call("sdpa", "scaled"), *inputs(256, 1))
                time_forward(forward_call("fused", scoring), *inputs(256, 1))
            t, m, c = time_forward(forward_call("sdpa", "scaled"), q_full, k_full, v_full)
            res["sdpa_f"].append(t)
            res["sdpa_mem"].append(m)
            res["sdpa_cpu"].append(c)
            t, m, _ = time_forward(forward_call("fused", scoring), q_full, k_full, v_full)
            res["bw_f"].append(t)
            res["bw_mem"].append(m)
            qg, kg, vg = (t_.clone().requires_grad_() for t_ in (q_full, k_full, v_full))
            res["sdpa_b"].append(time_backward(forward_call("sdpa", "scaled"), qg, kg, vg,
                                               torch.randn(1, HEADS, L, D_HEAD)))
            del qg, kg, vg
            torch.set_num_threads(1)
        wait_all_ranks()
        res["idle_cpu"].append(time.process_time() - c_idle)  # ranks > 0: CPU spent waiting for rank 0
        t, m, c = measure(ring_fwd)
        res["ring_f"].append(t)
        res["ring_mem"].append(m)
        res["ring_cpu"].append(c)
        res["ring_b"].append(ring_bwd())
    return res


def ring_part(lengths, ranks, rounds: int, threads: int, scorings):
    from tqdm import tqdm

    from attnscope.distributed import run_local
    rows = []
    jobs = [(L, P, sc) for L in lengths for P in ranks for sc in scorings]
    for L, P, scoring in tqdm(jobs, desc="ring (L, P, scoring)", file=sys.stderr):
        res = run_local(ring_worker, P, (L, rounds, threads, scoring), timeout=3600, threads=1)
        med = statistics.median
        r0 = res[0]
        ring_f = [max(r["ring_f"][i] for r in res) for i in range(rounds)]  # the slowest rank
        ring_b = [max(r["ring_b"][i] for r in res) for i in range(rounds)]
        ring_mem = max(med(r["ring_mem"]) for r in res)
        ring_cpu = [sum(r["ring_cpu"][i] for r in res) for i in range(rounds)]  # all ranks' CPU
        inputs_mib = 3 * HEADS * L * D_HEAD * 4 / 2 ** 20  # q, k, v of the whole sequence
        rows.append(dict(L=L, P=P, scoring=scoring, sdpa_f=min(r0["sdpa_f"]), ring_f=min(ring_f),
                         f_ratio=min(ring_f) / min(r0["sdpa_f"]),
                         sdpa_b=min(r0["sdpa_b"]), ring_b=min(ring_b),
                         b_ratio=min(ring_b) / min(r0["sdpa_b"]),
                         bw_f=med(r0["bw_f"]), bw_mem=med(r0["bw_mem"]), sdpa_mem=med(r0["sdpa_mem"]),
                         ring_mem=ring_mem, cpu_ratio=min(ring_cpu) / min(r0["sdpa_cpu"]),
                         idle_cpu=max(med(r["idle_cpu"]) for r in res[1:]) if P > 1 else 0.0,
                         with_inputs=(ring_mem + inputs_mib / P) / (med(r0["bw_mem"]) + inputs_mib)))
        print(f"[ring] {rows[-1]}", file=sys.stderr, flush=True)  # kept even if a later run fails
    return rows


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------

def fmt_s(s: float) -> str:
    return f"{s * 1e3:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def main() -> None:
    print(bench_env.describe())
    from attnscope.scorings import SCORINGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 16384])
    ap.add_argument("--ring-lengths", type=int, nargs="+", default=[8192, 16384])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1),
                    help="threads of the single-process runs (the ring: 1 per rank)")
    ap.add_argument("--scorings", nargs="+", default=list(SCORINGS))
    ap.add_argument("--ring-scorings", nargs="+", default=["scaled", "cosine"],
                    help="the ring's scorings (scaled: the maths SDPA runs; cosine: prepared q', k' copies)")
    ap.add_argument("--only", choices=["blockwise", "ring"], default=None)
    ap.add_argument("--no-backward", action="store_true", help="blockwise: forward only")
    ap.add_argument("--online", action="store_true", help="also time attnscope's online softmax (cosine)")
    args = ap.parse_args()

    exact_rss()
    torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    load0, small0 = os.getloadavg()[0], sdpa_small_ms()
    bw_rows = ring_rows = []
    if args.only != "ring":
        bw_rows = blockwise_part(args.lengths, args.scorings, args.rounds, args.online, not args.no_backward)
    if args.only != "blockwise":
        ring_rows = ring_part(args.ring_lengths, args.ranks, args.rounds, args.threads, args.ring_scorings)
    torch.set_num_threads(args.threads)
    load1, small1 = os.getloadavg()[0], sdpa_small_ms()

    print(f"\nB=1, H={HEADS}, d_head={D_HEAD}, float32, not causal; {os.cpu_count()} cores; torch "
          f"{torch.__version__}; {args.rounds} interleaved rounds, fastest of each; total "
          f"{time.perf_counter() - t_start:.0f} s")
    print(f"load: load average {load0:.1f} at the start, {load1:.1f} at the end; SDPA at L = 128 "
          f"{small0:.2f} ms / {small1:.2f} ms (quiet ~0.39 ms)\n")
    if bw_rows:
        print(f"blockwise_attention(..., return_lse=True) vs SDPA, {args.threads} threads "
              "(target: forward ≤ 1.05×, backward ≤ 1.1×)\n")
        print("| L | scoring | kernel | SDPA fwd | attnscope fwd | × SDPA | × prepared | SDPA bwd | attnscope bwd "
              "| × SDPA | × prepared | peak MiB: SDPA / attnscope |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for L, sc, kern, sf, af, fr, sb, ab, br, ms, ma, pfr, pbr in bw_rows:
            b = f"{fmt_s(sb)} | {fmt_s(ab)} | {br:.3f} | {pbr:.3f}" if sb is not None else "– | – | – | –"
            print(f"| {L} | {sc} | {kern} | {fmt_s(sf)} | {fmt_s(af)} | {fr:.3f} | {pfr:.3f} | {b} | {ms:.0f} / {ma:.0f} |")
        print("\n× SDPA: against SDPA on the raw q, k, v (the scoring's preparation — cosine's norms, "
              "qknorm's LayerNorms, and their backward — counted in attnscope's time); × prepared: against "
              "the same preparation followed by SDPA (what the fused path itself adds).")
    if ring_rows:
        print(f"\nring_attention, P ranks × 1 thread vs single-process SDPA × "
              f"{args.threads} threads (target: 2 ranks ≤ 1.10×, 4 ranks ≤ 1.25×; per-rank peak "
              "≤ 1.5/P of the single-process blockwise peak)\n")
        print("| L | P | scoring | SDPA fwd | ring fwd | × SDPA | CPU × SDPA | SDPA bwd | ring bwd | × SDPA | peak MiB: "
              "SDPA / blockwise / ring per rank | ring / blockwise | with inputs | 1.5/P |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
        for r in ring_rows:
            print(f"| {r['L']} | {r['P']} | {r['scoring']} | {fmt_s(r['sdpa_f'])} | {fmt_s(r['ring_f'])} | {r['f_ratio']:.3f} | "
                  f"{r['cpu_ratio']:.3f} | {fmt_s(r['sdpa_b'])} | {fmt_s(r['ring_b'])} | {r['b_ratio']:.3f} | "
                  f"{r['sdpa_mem']:.0f} / {r['bw_mem']:.0f} / {r['ring_mem']:.0f} | "
                  f"{r['ring_mem'] / max(r['bw_mem'], 1e-9):.2f} | {r['with_inputs']:.2f} | {1.5 / r['P']:.2f} |")
        print("\nCPU × SDPA: all ranks' CPU seconds (gloo's threads included) over SDPA's; with inputs: "
              "(ring peak + the rank's q, k, v) / (blockwise peak + the whole q, k, v). CPU spent by the "
              "waiting ranks while rank 0 ran the references: "
              + ", ".join(f"{r['idle_cpu'] * 1e3:.0f} ms" for r in ring_rows) + ".")


if __name__ == "__main__":
    main()
