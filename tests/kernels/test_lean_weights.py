"""The lean weights path (only the weights wanted): its softmax written over its own scores on the
CPU without autograd — the same numbers as the out-of-place softmax, one L×S matrix per call."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from attnscope.kernels import dense


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 9, 256, 256), (2, 3, 5, 1), (1, 2, 7, 33), (2, 4, 40, 1000)])
def test_softmax_over_the_scores_is_the_out_of_place_softmax_bit_for_bit(shape, dtype):
    g = torch.Generator().manual_seed(sum(shape))
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 8).to(dtype)
    x[..., 0, 1:] = float("-inf")  # a row that sees one key: weight 1 on it
    expect = torch.softmax(x, dim=-1)
    got = dense._softmax_over(x.clone())
    assert got.dtype == dtype and torch.equal(got, expect)


def _inputs(groups: int, L: int = 48, S: int = 48, d: int = 16, B: int = 2, H: int = 6):
    g = torch.Generator().manual_seed(7 + groups)
    q = torch.randn(B, H, L, d, generator=g)
    k = torch.randn(B, H // groups, S, d, generator=g)
    return q, k


def _reference(q, k, factor, add, groups):
    """float64, k repeated for each query head: another computation of the same weights."""
    k64 = k.double().repeat_interleave(groups, dim=1)
    s = q.double() @ k64.transpose(-2, -1) * factor
    if add is not None:
        s = s + add.double()
    return torch.softmax(s, dim=-1)


@pytest.mark.parametrize("groups", [1, 3])
@pytest.mark.parametrize("masked", [False, True])
def test_lean_weights_match_a_float64_reference_and_leave_inputs_alone(groups, masked):
    q, k = _inputs(groups)
    L, S = q.shape[-2], k.shape[-2]
    add = dense.causal_additive(L, S, q.dtype, q.device, reuse=True) if masked else None
    before = [t.clone() for t in (q, k) + ((add,) if add is not None else ())]
    w = dense.lean_weights(q, k, 0.25, add, groups=groups)
    torch.testing.assert_close(w.double(), _reference(q, k, 0.25, add, groups), atol=1e-6, rtol=1e-5)
    after = [q, k] + ([add] if add is not None else [])
    assert all(torch.equal(a, b) for a, b in zip(before, after))  # the shared causal mask is read only
    if add is not None:
        assert dense.causal_additive(L, S, q.dtype, q.device, reuse=True) is add


def test_lean_weights_keep_their_gradient():
    q, k = _inputs(3)
    q.requires_grad_(True)
    add = dense.causal_additive(q.shape[-2], k.shape[-2], q.dtype, q.device, reuse=True)
    w = dense.lean_weights(q, k, 0.25, add, groups=3)
    assert w.requires_grad
    target = torch.randn(w.shape, generator=torch.Generator().manual_seed(3))
    (g,) = torch.autograd.grad((w * target).sum(), q)
    q64 = q.detach().double().requires_grad_(True)
    (g64,) = torch.autograd.grad((_reference(q64, k, 0.25, add, 3) * target.double()).sum(), q64)
    torch.testing.assert_close(g.double(), g64, atol=1e-6, rtol=1e-5)


def _big_allocations(fn, nbytes: int) -> int:
    """How many CPU allocations of at least ``nbytes`` ``fn`` makes."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return sum(1 for e in prof.events() if e.self_cpu_memory_usage >= nbytes)


@pytest.mark.parametrize("groups", [1, 3])
def test_lean_weights_allocate_one_matrix_on_the_cpu_without_autograd(groups):
    q, k = _inputs(groups, L=128, S=128)
    add = dense.causal_additive(128, 128, q.dtype, q.device, reuse=True)
    matrix = q.shape[0] * q.shape[1] * 128 * 128 * q.element_size()
    with torch.no_grad():
        assert _big_allocations(lambda: dense.lean_weights(q, k, 0.25, add, groups=groups), matrix) == 1
    # with autograd the softmax keeps its input for the backward: two matrices
    q.requires_grad_(True)
    assert _big_allocations(lambda: dense.lean_weights(q, k, 0.25, add, groups=groups), matrix) == 2
