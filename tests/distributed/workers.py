"""Functions run on every rank by attnscope.distributed.run_local (module level: importable in
the child processes). Each returns plain tensors/strings; the tests compare them in the parent."""

import time

import torch

import attnscope.kernels.fused as KF
import attnscope.kernels.ring.ring as RR
from attnscope import AttnscopeError
from attnscope import distributed as D

#: (causal, scoring, per-head temperature, key mask) cases run by exact_battery.
CASES = [(False, "scaled", False, False), (True, "scaled", False, True),
         (False, "cosine", True, True), (True, "inv_d", False, False)]


def full_inputs(lens, seed, dtype=torch.float64, B=2, H=3, d=8, d_v=5):
    """The whole sequence, identical on every rank (and in the parent)."""
    g = torch.Generator().manual_seed(seed)
    L = sum(lens)
    q = torch.randn(B, H, L, d, generator=g, dtype=dtype)
    k = torch.randn(B, H, L, d, generator=g, dtype=dtype)
    v = torch.randn(B, H, L, d_v, generator=g, dtype=dtype)
    key_mask = torch.rand(B, 1, L, generator=g) > 0.25  # (B, 1, S): per sample, all heads
    key_mask[0, 0, :3] = False  # with causal: the first queries of sample 0 see nothing
    tau = torch.rand(H, 1, 1, generator=g, dtype=dtype) + 0.05
    g_out = torch.randn(B, H, L, d_v, generator=g, dtype=dtype)
    return q, k, v, key_mask, tau, g_out


class Counting:
    """Counts calls of the fused kernel's forward and backward in this process."""

    def __enter__(self):
        self.calls = {"forward": 0, "backward": 0}
        self.real = KF.LseProblem.forward, KF.LseProblem.backward

        def wrap(name, fn):
            def counted(*a, **kw):
                self.calls[name] += 1
                return fn(*a, **kw)
            return counted
        KF.LseProblem.forward, KF.LseProblem.backward = wrap("forward", self.real[0]), wrap("backward", self.real[1])
        return self.calls

    def __exit__(self, *exc):
        KF.LseProblem.forward, KF.LseProblem.backward = self.real


def exact_battery(rank, world, lens, seed, kernel="auto", head_chunks=None):
    q, k, v, key_mask, tau, g_out = full_inputs(lens, seed)
    lo = sum(lens[:rank])
    part = slice(lo, lo + lens[rank])
    results = []
    for causal, scoring, per_head_tau, masked in CASES:
        ql, kl, vl = (t[..., part, :].clone().requires_grad_() for t in (q, k, v))
        taul = tau.clone().requires_grad_() if per_head_tau else None
        with Counting() as calls:
            out, lse = D.ring_attention(ql, kl, vl, causal=causal, scoring=scoring, temperature=taul,
                                        key_mask=key_mask[..., part] if masked else None,
                                        block_size=(4, 3), return_lse=True, timeout=30, kernel=kernel,
                                        head_chunks=head_chunks)
            (out * g_out[..., part, :]).sum().backward()
        results.append({"out": out.detach(), "lse": lse.detach(), "dq": ql.grad, "dk": kl.grad, "dv": vl.grad,
                        "dtau": None if taul is None else taul.grad, "calls": dict(calls)})
    # the helpers: shard splits as tensor_split does, gather puts the blocks back together
    x = torch.arange(2 * sum(lens) * 3).reshape(2, sum(lens), 3)
    mine = D.shard(x, dim=1)
    return {"cases": results, "shard": mine, "gather": D.gather(mine.float(), dim=1)}


def float32_causal(rank, world, n, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 4, n * world, 32, generator=g) for _ in range(3))
    part = slice(rank * n, (rank + 1) * n)
    return D.ring_attention(q[..., part, :], k[..., part, :], v[..., part, :], causal=True, block_size=32)


def error_battery(rank, world):
    """Mismatched inputs: every rank must raise, and the group must still work afterwards."""
    errors = {}
    good = torch.randn(1, 2, 6, 8)

    def attempt(name, q, k, v, **kw):
        try:
            D.ring_attention(q, k, v, timeout=20, **kw)
            errors[name] = None
        except AttnscopeError as e:
            errors[name] = f"{type(e).__name__}: {e}"

    bad_d = torch.randn(1, 2, 6, 4) if rank == world - 1 else good
    attempt("head_dim", bad_d, bad_d, bad_d)
    bad_dtype = good.double() if rank == 0 else good
    attempt("dtype", bad_dtype, bad_dtype, bad_dtype)
    bad_heads = torch.randn(1, 3, 6, 8) if rank == 1 else good
    attempt("heads", bad_heads, bad_heads, bad_heads)
    local = torch.ones(1, 2, 6, 8, dtype=torch.long) if rank == 1 else good
    attempt("local", local, good, good)
    attempt("causal", good, good, good, causal=(rank == 0))
    attempt("head_chunks", good, good, good, head_chunks=1 if rank == 0 else 2)
    attempt("kernel", good, good, good, kernel="bogus" if rank == 1 else "auto")
    # still usable: a correct call after all those errors
    out = D.ring_attention(good, good, good, timeout=20)
    return {"errors": errors, "after": out}


def missing_rank(rank, world):
    """Rank 0 calls ring_attention, the others never do: rank 0 must time out, not hang."""
    if rank != 0:
        time.sleep(2.5)
        return None
    t0 = time.monotonic()
    try:
        D.ring_attention(torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8), timeout=1.5)
    except D.RingTimeout as e:
        return {"error": str(e), "seconds": time.monotonic() - t0}
    return {"error": None, "seconds": time.monotonic() - t0}


def event_log(rank, world, lens, seed):
    """The order of posts, waits and block computations in one forward and one backward, non-causal
    (every block visible): which transfers were in flight during a computation."""
    q, k, v, _, _, g_out = full_inputs(lens, seed, B=1, H=2, d=8, d_v=8)
    lo = sum(lens[:rank])
    part = slice(lo, lo + lens[rank])
    log = []
    real = RR.Ring.exchange, RR.Ring.finish, RR.Ring.block_forward, RR.Ring.block_backward

    def exchange(self, *a, **kw):
        bufs, works = real[0](self, *a, **kw)
        log.append(("post", id(works)))
        return bufs, works

    def finish(self, bufs, works, *a, **kw):
        log.append(("wait", id(works)))
        return real[1](self, bufs, works, *a, **kw)

    def compute(i):
        def fn(self, *a, **kw):
            log.append(("compute", None))
            return real[i](self, *a, **kw)
        return fn
    RR.Ring.exchange, RR.Ring.finish = exchange, finish
    RR.Ring.block_forward, RR.Ring.block_backward = compute(2), compute(3)
    try:
        ql, kl, vl = (t[..., part, :].clone().requires_grad_() for t in (q, k, v))
        out = D.ring_attention(ql, kl, vl, timeout=30, head_chunks=1)
        forward_log = list(log)
        log.clear()
        (out * g_out[..., part, :]).sum().backward()
        return {"forward": forward_log, "backward": list(log)}
    finally:
        RR.Ring.exchange, RR.Ring.finish, RR.Ring.block_forward, RR.Ring.block_backward = real


def half_ring(rank, world, n, seed, kernel):
    """bfloat16 inputs with gradients: the fused kernel runs in bfloat16, partials merge in float32."""
    g = torch.Generator().manual_seed(seed)
    q, k, v, g_out = (torch.randn(2, 3, n * world, 16, generator=g).bfloat16() for _ in range(4))
    keys = torch.rand(2, 1, n * world, generator=g) > 0.2
    part = slice(rank * n, (rank + 1) * n)
    ql, kl, vl = (t[..., part, :].clone().requires_grad_() for t in (q, k, v))
    out, lse = D.ring_attention(ql, kl, vl, causal=True, key_mask=keys[..., part], scoring="cosine", return_lse=True,
                                kernel=kernel, timeout=30)
    (out.float() * g_out[..., part, :].float()).sum().backward()
    return {"out": out, "lse": lse, "dq": ql.grad, "dk": kl.grad, "dv": vl.grad}


def bad_options(rank, world):
    """Options one rank gets wrong (a zero temperature, causal=1, a temperature for a scoring without
    one): that rank names its own error, the others learn that it rejected its inputs."""
    errors = {}
    good = torch.randn(1, 2, 6, 8)
    for name, kw in (("tau0", dict(scoring="cosine", temperature=0.0 if rank == 1 else 0.1)),
                     ("causal", dict(causal=1 if rank == 1 else False)),
                     ("unused", dict(temperature=0.5 if rank == 1 else None))):
        try:
            D.ring_attention(good, good, good, timeout=20, **kw)
            errors[name] = None
        except Exception as e:  # noqa: BLE001  (any exception is reported: a bare ZeroDivisionError is the defect)
            errors[name] = f"{type(e).__name__}: {e}"
    return errors


def grouped_heads(rank, world, lens, kernel):
    """Grouped-query heads (q 4 heads, k and v 2): this rank's out and the gradients of its block."""
    g = torch.Generator().manual_seed(11)
    L = sum(lens)
    q = torch.randn(2, 4, L, 8, generator=g, dtype=torch.float64)
    k, v = (torch.randn(2, 2, L, 8, generator=g, dtype=torch.float64) for _ in range(2))
    lo = sum(lens[:rank])
    part = slice(lo, lo + lens[rank])
    ql, kl, vl = (t[..., part, :].clone().requires_grad_() for t in (q, k, v))
    out = D.ring_attention(ql, kl, vl, causal=True, block_size=(3, 2), timeout=30, kernel=kernel)
    out.sum().backward()
    return {"out": out.detach(), "dq": ql.grad, "dk": kl.grad, "dv": vl.grad}


def rows_not_contiguous(rank, world, lens):
    """q, k, v of this rank's block whose last dim has stride 12 (a transpose): its out."""
    g = torch.Generator().manual_seed(13)
    q, k, v = (torch.randn(1, 3, 12, sum(lens), generator=g, dtype=torch.float64).transpose(-1, -2) for _ in range(3))
    lo = sum(lens[:rank])
    part = slice(lo, lo + lens[rank])
    return D.ring_attention(q[..., part, :], k[..., part, :], v[..., part, :], causal=True, timeout=30, kernel="fused")
