"""Ring attention on 2 and 4 CPU processes (gloo) equals single-process attention: outputs,
log-sum-exp and gradients (q, k, v, temperature), causal and not, with key masks and blocks of
unequal length; float64 to 1e-12 and float32 to 1e-5 — with each step on PyTorch's fused kernel
(forward and backward, counted) and on attnscope's online softmax, in one pass and in head
chunks. Transfers overlap the computation in both passes (the order of posts and waits)."""

import numpy as np
import pytest
import torch

import attnscope.functional as AF
from attnscope import distributed as D
from tests.blockwise.reference import np_attention
from tests.distributed import workers

pytestmark = pytest.mark.distributed

# 2 ranks of equal blocks; 4 ranks whose blocks differ (13 = 4 + 3 + 3 + 3 as shard splits it)
LAYOUTS = {2: [6, 6], 4: [4, 3, 3, 3]}


RUNS = [(2, "fused", None), (4, "fused", 2), (2, "online", None), (4, "online", 3), (4, "auto", None)]


@pytest.fixture(scope="module", params=RUNS, ids=[f"{w} ranks, {k}, head_chunks={c}" for w, k, c in RUNS])
def ring(request):
    world, kernel, chunks = request.param
    lens = LAYOUTS[world]
    return world, lens, kernel, D.run_local(workers.exact_battery, world, (lens, 0, kernel, chunks), timeout=150)


def test_matches_single_process(ring):
    world, lens, kernel, results = ring
    for r in results:
        for case in r["cases"]:
            fused_calls = case["calls"]
            if kernel == "online":
                assert fused_calls == {"forward": 0, "backward": 0}
            else:  # float64 on CPU: every visible block's forward and backward run the fused kernel
                assert fused_calls["forward"] > 0 and fused_calls["backward"] > 0, fused_calls
    q, k, v, key_mask, tau, g_out = workers.full_inputs(lens, 0)
    for i, (causal, scoring, per_head_tau, masked) in enumerate(workers.CASES):
        got = {name: torch.cat([r["cases"][i][name] for r in results], dim=-2) for name in ("out", "dq", "dk", "dv")}
        lse = torch.cat([r["cases"][i]["lse"] for r in results], dim=-1)
        mask = key_mask[:, :, None, :] if masked else None  # (B, 1, 1, S)
        ref_out, _, ref_lse = np_attention(q, k, v, mask, causal=causal, scoring=scoring,
                                           temperature=tau if per_head_tau else None)
        np.testing.assert_allclose(got["out"].numpy(), ref_out, atol=1e-12, rtol=0)
        assert np.array_equal(np.isneginf(ref_lse), torch.isneginf(lse).numpy())
        finite = np.isfinite(ref_lse)
        np.testing.assert_allclose(lse.numpy()[finite], ref_lse[finite], atol=1e-12, rtol=0)

        # gradients: autograd through the dense float64 path
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        t_leaf = tau.clone().requires_grad_() if per_head_tau else None
        dense = AF.attention_steps(*leaves, mask, causal=causal, scoring=scoring, temperature=t_leaf)["out"]
        (dense * g_out).sum().backward()
        for name, leaf in zip(("dq", "dk", "dv"), leaves):
            np.testing.assert_allclose(got[name].numpy(), leaf.grad.numpy(), atol=1e-11, rtol=0, err_msg=name)
        if per_head_tau:  # each rank holds its share of dτ; they add up to the whole
            dtau = sum(r["cases"][i]["dtau"] for r in results)
            np.testing.assert_allclose(dtau.numpy(), t_leaf.grad.numpy(), atol=1e-10, rtol=1e-10)


def test_shard_and_gather(ring):
    world, lens, _, results = ring
    x = torch.arange(2 * sum(lens) * 3).reshape(2, sum(lens), 3)
    for rank, r in enumerate(results):
        assert torch.equal(r["shard"], torch.tensor_split(x, world, dim=1)[rank])
        assert torch.equal(r["gather"], x.float())


def test_float32_causal_four_ranks():
    n = 96
    outs = D.run_local(workers.float32_causal, 4, (n, 3), timeout=150)
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 4, 4 * n, 32, generator=g) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    assert (torch.cat(outs, dim=-2).double() - ref).abs().max().item() <= 1e-5


@pytest.mark.parametrize("world", [2, 4])
def test_transfers_overlap_the_computation(world):
    """Forward: every block transfer is posted before a computation and awaited after it.
    Backward: the same for the blocks, and each gradient accumulator a rank passes on is awaited
    by the next only after its next computation; only the last hop home follows no computation."""
    lens = [5] * world
    for r in D.run_local(workers.event_log, world, (lens, 1), timeout=150):
        for phase, expected_bare in (("forward", 0), ("backward", 1)):
            log = r[phase]
            assert sum(e == "compute" for e, _ in log) == world, (phase, log)
            posted = {}
            bare = 0
            for i, (event, key) in enumerate(log):
                if event == "post":
                    posted[key] = i
                elif event == "wait":
                    start = posted.pop(key)
                    if not any(e == "compute" for e, _ in log[start:i]):
                        bare += 1
            assert not posted, (phase, log)  # every transfer was awaited
            n_posts = sum(e == "post" for e, _ in log)
            assert n_posts == (world - 1 if phase == "forward" else 2 * world - 1), (phase, log)
            assert bare == expected_bare, (phase, log)


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_bfloat16_ring(kernel):
    """bfloat16 in, bfloat16 out, lse float32; within bfloat16's rounding of the float64 answer on
    the same (rounded) inputs, gradients included."""
    n, world = 40, 2
    res = D.run_local(workers.half_ring, world, (n, 5, kernel), timeout=150)
    got = {name: torch.cat([r[name] for r in res], dim=-1 if name == "lse" else -2) for name in res[0]}
    assert got["out"].dtype == torch.bfloat16 and got["lse"].dtype == torch.float32
    assert got["dq"].dtype == torch.bfloat16
    g = torch.Generator().manual_seed(5)
    q, k, v, g_out = (torch.randn(2, 3, n * world, 16, generator=g).bfloat16().double() for _ in range(4))
    keys = torch.rand(2, 1, n * world, generator=g) > 0.2
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = AF.attention_steps(*leaves, keys[:, :, None, :], causal=True, scoring="cosine")["out"]
    grads = torch.autograd.grad((ref * g_out).sum(), leaves)
    assert (got["out"].double() - ref).abs().max().item() < 2e-2
    for name, r in zip(("dq", "dk", "dv"), grads):
        assert (got[name].double() - r).abs().max().item() < 3e-2 * max(1.0, r.abs().max().item()), name


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_grouped_query_heads(kernel):
    # k and v with fewer heads than q pass attention()'s checks; the ring then failed with torch's
    # "Attempting to broadcast a dimension of length 2" instead of serving them as attention() does
    lens = [5, 4]
    results = D.run_local(workers.grouped_heads, 2, (lens, kernel), timeout=150)
    g = torch.Generator().manual_seed(11)
    q = torch.randn(2, 4, 9, 8, generator=g, dtype=torch.float64)
    k, v = (torch.randn(2, 2, 9, 8, generator=g, dtype=torch.float64) for _ in range(2))
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    # the reference: k and v repeated by hand for the query heads they serve, float64 dense steps
    kk, vv = (t.repeat_interleave(2, dim=1) for t in leaves[1:])
    ref = AF.attention_steps(leaves[0], kk, vv, causal=True)["out"]
    ref.sum().backward()
    got = {name: torch.cat([r[name] for r in results], dim=-2) for name in ("out", "dq", "dk", "dv")}
    np.testing.assert_allclose(got["out"].numpy(), ref.detach().numpy(), atol=1e-12, rtol=0)
    for name, leaf in zip(("dq", "dk", "dv"), leaves):
        np.testing.assert_allclose(got[name].numpy(), leaf.grad.numpy(), atol=1e-11, rtol=0, err_msg=name)


def test_rows_not_contiguous():
    # blocks whose last dim is not contiguous went to the CPU kernel as they were, which reads rows
    # with stride 1: outputs of order 1e305 (memory beyond the block), now those of the formula
    lens = [5, 4]
    results = D.run_local(workers.rows_not_contiguous, 2, (lens,), timeout=150)
    g = torch.Generator().manual_seed(13)
    q, k, v = (torch.randn(1, 3, 12, 9, generator=g, dtype=torch.float64).transpose(-1, -2) for _ in range(3))
    ref_out, _, _ = np_attention(q, k, v, causal=True)
    np.testing.assert_allclose(torch.cat(results, dim=-2).numpy(), ref_out, atol=1e-12, rtol=0)
