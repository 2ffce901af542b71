"""PyTorch's fused kernel with log-sum-exp (forward, and its fused backward from the saved lse)
against attnscope's online softmax, the reference kernel: outputs, lse and gradients agree —
float64 to 1e-12 (gradients 1e-10), float32 within its rounding — for every scoring, masks that
leave queries without a key, causal, L ≠ S, d_v ≠ d_k, leading shapes other than 4-D, broadcast
and grouped-query heads, and the gradient of the lse itself. kernel="fused" says why it cannot
serve."""

import pytest
import torch

import attnscope.kernels.blockwise.kernel as online_kernel
import attnscope.kernels.fused as fused
from attnscope import ConfigError
from attnscope.blockwise import attention_lse, blockwise_attention
from attnscope.scorings import SCORINGS
from tests.blockwise.reference import np_attention

CASES = {  # name: (q shape, k shape, d_v)
    "4-D": ((2, 3, 37, 8), (2, 3, 45, 8), 8),
    "d_v < d_k": ((2, 3, 37, 8), (2, 3, 45, 8), 5),
    "d_v > d_k": ((2, 3, 37, 4), (2, 3, 45, 4), 9),
    "3-D": ((3, 37, 8), (3, 45, 8), 8),
    "5-D, broadcast": ((2, 2, 3, 37, 8), (1, 2, 3, 45, 8), 6),
    "grouped heads": ((2, 6, 37, 8), (2, 2, 45, 8), 8),
}


def both(q, k, v, mask, **kw):
    """(fused, online) results of the same call, each ``(out, lse, grads of q, k, v)``."""
    res = []
    g = torch.Generator().manual_seed(99)
    go = torch.randn(*torch.broadcast_shapes(q.shape[:-2], k.shape[:-3] + (q.shape[-3],) if q.dim() >= 3 else ()),
                     q.shape[-2], v.shape[-1], generator=g, dtype=q.dtype)
    gl = torch.randn(go.shape[:-1], generator=g, dtype=q.dtype)
    for kernel in ("fused", "online"):
        out, lse = blockwise_attention(q, k, v, mask, return_lse=True, kernel=kernel, **kw)
        finite = torch.where(torch.isinf(lse), 0.0, lse)
        grads = torch.autograd.grad((out * go).sum() + (finite * gl).sum(), (q, k, v))
        res.append((out, lse, grads))
    return res


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scoring", SCORINGS)
def test_fused_equals_online_float64(case, causal, scoring):
    sq, sk, dv = CASES[case]
    g = torch.Generator().manual_seed(hash((case, causal, scoring)) % 2**31)
    q = torch.randn(*sq, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(*sk, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(*sk[:-1], dv, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(37, 45, generator=g) > 0.3
    mask[4] = False  # a query that sees no key
    (fo, fl, fg), (oo, ol, og) = both(q, k, v, mask, causal=causal, scoring=scoring)
    torch.testing.assert_close(fo, oo, rtol=0, atol=1e-12)
    assert torch.equal(torch.isneginf(fl), torch.isneginf(ol)) and torch.isneginf(fl[..., 4]).all()
    torch.testing.assert_close(torch.where(torch.isinf(fl), 0.0, fl), torch.where(torch.isinf(ol), 0.0, ol),
                               rtol=0, atol=1e-12)
    assert torch.equal(fo[..., 4, :], torch.zeros_like(fo[..., 4, :]))
    for name, a, b in zip("qkv", fg, og):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-11, msg=name)


@pytest.mark.parametrize("scoring", ["scaled", "cosine", "qknorm"])
def test_fused_equals_online_float32(scoring):
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 4, 600, 32, generator=g, requires_grad=True) for _ in range(3))
    keys = torch.rand(1, 1, 1, 600, generator=g) > 0.2
    (fo, fl, fg), (oo, ol, og) = both(q, k, v, keys, causal=True, scoring=scoring)
    torch.testing.assert_close(fo, oo, rtol=0, atol=2e-6)
    torch.testing.assert_close(fl, ol, rtol=0, atol=2e-5)
    for a, b in zip(fg, og):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4 * b.abs().max().item())


def test_the_backward_is_the_fused_one(monkeypatch):
    """With gradients the forward and the backward both run the fused kernel; the online
    backward is never called (nor the autograd graph of the online forward)."""
    calls = []
    for name, owner in (("forward", fused.LseProblem), ("backward", fused.LseProblem)):
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda self, *a, _r=real, _n=name, **kw: calls.append(_n) or _r(self, *a, **kw))
    monkeypatch.setattr(online_kernel, "backward", lambda *a, **kw: pytest.fail("the online backward ran"))
    q, k, v = (torch.randn(1, 2, 50, 8, requires_grad=True) for _ in range(3))
    out, lse = blockwise_attention(q, k, v, scoring="cosine", return_lse=True)
    (out.sum() + lse.sum()).backward()
    assert calls == ["forward", "backward"]
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (q, k, v))


def test_gradient_of_the_lse_alone():
    """Only the lse in the loss (no gradient reaches out): the extra column carries it alone."""
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(2, 3, n, 8, generator=g, dtype=torch.float64, requires_grad=True) for n in (20, 30, 30))
    got = torch.autograd.grad(blockwise_attention(q, k, v, return_lse=True, kernel="fused")[1].square().sum(), (q, k))
    s = (q @ k.transpose(-2, -1)) / 8 ** 0.5
    ref = torch.autograd.grad(torch.logsumexp(s, -1).square().sum(), (q, k))
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_attention_lse_kernels_agree():
    g = torch.Generator().manual_seed(8)
    q, k = (torch.randn(2, 3, 90, 16, generator=g, dtype=torch.float64) for _ in range(2))
    for causal in (False, True):
        a = attention_lse(q, k, causal=causal, scoring="cosine", kernel="fused")
        b = attention_lse(q, k, causal=causal, scoring="cosine", kernel="online", block_size=32)
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_kernel_fused_says_why_it_cannot_serve():
    q, k, v = (torch.randn(1, 2, 10, 4) for _ in range(3))
    with pytest.raises(ConfigError, match="temperature that varies over keys"):
        blockwise_attention(q, k, v, scoring="cosine", temperature=torch.rand(10) + 0.1, kernel="fused")
    bias = torch.zeros(10, 10, requires_grad=True)
    with pytest.raises(ConfigError, match="a mask that needs its gradient"):
        blockwise_attention(q, k, v, bias, kernel="fused")
    with pytest.raises(ConfigError, match="takes no dropout"):
        blockwise_attention(q, k, v, dropout_p=0.1, kernel="fused")
    with pytest.raises(ConfigError, match="kernel must be one of 'auto', 'fused', 'online'"):
        blockwise_attention(q, k, v, kernel="flash")
    with pytest.raises(ConfigError, match="kernel must be one of"):
        attention_lse(q, k, kernel=None)
    # "auto" takes the online kernel there, and the mask gets its gradient
    out = blockwise_attention(q.double(), k.double(), v.double(), bias.double())
    (g,) = torch.autograd.grad(out.sum(), bias)
    assert g.abs().sum() > 0


@pytest.mark.parametrize("causal", [False, True])
def test_rows_not_contiguous(causal):
    # q, k, v whose last dim has a stride other than 1 (a transpose, a permute) went to the CPU
    # kernel as they were: it reads each row with stride 1, so k or v gave outputs off by ~2.6 and
    # lse and gradients likewise (q transposed in its leading dims was, and is, fine)
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 16, 3, 7, generator=g, dtype=torch.float64).permute(0, 2, 3, 1)  # (2, 3, 7, 16)
    k = torch.randn(2, 3, 16, 9, generator=g, dtype=torch.float64).transpose(-1, -2)  # (2, 3, 9, 16)
    v = torch.randn(2, 3, 5, 9, generator=g, dtype=torch.float64).transpose(-1, -2)  # (2, 3, 9, 5)
    assert min(t.stride(-1) for t in (q, k, v)) > 1
    ref_out, _, ref_lse = np_attention(q, k, v, causal=causal)  # float64 NumPy from the formula
    leaves = [t.requires_grad_() for t in (q, k, v)]
    out, lse = blockwise_attention(*leaves, causal=causal, return_lse=True, kernel="fused")
    torch.testing.assert_close(out.detach(), torch.from_numpy(ref_out), atol=1e-12, rtol=0)
    torch.testing.assert_close(lse.detach(), torch.from_numpy(ref_lse), atol=1e-12, rtol=0)
    go = torch.randn(out.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((out * go).sum(), leaves)
    dense_leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]  # dense steps, autograd
    s = dense_leaves[0] @ dense_leaves[1].transpose(-1, -2) / 4.0
    if causal:
        s = s.masked_fill(~torch.ones(7, 9, dtype=torch.bool).tril(), float("-inf"))
    ref_grads = torch.autograd.grad((torch.softmax(s, -1) @ dense_leaves[2] * go).sum(), dense_leaves)
    for name, got, want in zip("qkv", grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=0, msg=name)
