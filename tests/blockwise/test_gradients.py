"""Gradients of both blockwise kernels — attnscope's online softmax (the FlashAttention backward,
which recomputes each tile from the saved log-sum-exp) and PyTorch's fused kernel with its fused
backward — equal autograd through the dense float64 path — for q, k, v, a learnable temperature
and the lse itself — and pass torch.autograd.gradcheck."""

import pytest
import torch

import attnscope.functional as AF
from attnscope.blockwise import blockwise_attention


def dense(q, k, v, mask, **kw):
    """out and lse by autograd-friendly dense maths (dead rows: lse 0 so that grads stay finite)."""
    masked = AF.attention_steps(q, k, v, mask, **kw)["masked"]  # (..., L, S)
    dead = torch.isneginf(masked.amax(-1, keepdim=True))
    w = torch.softmax(masked.masked_fill(dead, 0), -1).masked_fill(dead, 0)
    lse = torch.logsumexp(masked.masked_fill(dead, 0), -1).masked_fill(dead[..., 0], 0)
    return w @ v, lse


@pytest.mark.parametrize("scoring", ["scaled", "cosine", "qknorm", "inv_d"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_grads_match_dense(scoring, causal, kernel):
    g = torch.Generator().manual_seed(7)
    q = torch.randn(2, 3, 37, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 3, 45, 8, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 3, 45, 5, generator=g, dtype=torch.float64, requires_grad=True)
    tau = (torch.rand(3, 1, 1, generator=g, dtype=torch.float64) + 0.05).requires_grad_()
    mask = torch.rand(2, 1, 37, 45, generator=g) > 0.25
    mask[1, 0, 2] = False
    kw = dict(causal=causal, scoring=scoring, temperature=tau if scoring == "cosine" else None)
    go = torch.randn(2, 3, 37, 5, generator=g, dtype=torch.float64)
    gl = torch.randn(2, 3, 37, generator=g, dtype=torch.float64)
    inputs = [q, k, v] + ([tau] if scoring == "cosine" else [])

    ref_out, ref_lse = dense(q, k, v, mask, **kw)
    ref = torch.autograd.grad((ref_out * go).sum() + (ref_lse * gl).sum(), inputs)
    out, lse = blockwise_attention(q, k, v, mask, block_size=(16, 16), return_lse=True, kernel=kernel, **kw)
    assert out.grad_fn is not None
    lse = torch.where(torch.isinf(lse), 0.0, lse)
    got = torch.autograd.grad((out * go).sum() + (lse * gl).sum(), inputs)
    for name, a, b in zip("q k v tau".split(), got, ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-11, msg=name)


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_backward_does_not_keep_tiles(kernel):
    """The custom backward saves only q, k, v, out and lse: no tensor with an L×S-sized tail."""
    q, k, v = (torch.randn(1, 2, 300, 8, requires_grad=True) for _ in range(3))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.shape) or t, lambda t: t):
        out = blockwise_attention(q, k, v, scoring="inv_d", block_size=64, kernel=kernel)
    assert saved and max(s.numel() for s in saved) == 2 * 300 * 8, saved  # (B, H, L, d) at most
    out.sum().backward()
    assert q.grad.shape == q.shape


@pytest.mark.parametrize("kernel", ["fused", "online"])
def test_gradcheck_custom_backward(kernel):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for n in (7, 9, 9))
    mask = torch.ones(7, 9, dtype=torch.bool)
    mask[3] = False
    fn = lambda q, k, v: blockwise_attention(q, k, v, mask, causal=True, scoring="unscaled", block_size=3, kernel=kernel)
    assert torch.autograd.gradcheck(fn, (q, k, v))


def test_autograd_fallbacks():
    """Dropout, a float mask that needs its gradient, and τ varying over keys go through autograd
    (the loop itself is differentiated); those gradients are exact too."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 6, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for n in (10, 12, 12))
    bias = torch.randn(10, 12, generator=g, dtype=torch.float64, requires_grad=True)
    tau = (torch.rand(6, 1, 12, generator=g, dtype=torch.float64) + 0.1).requires_grad_()
    for args, kw in (((bias,), {}), ((), dict(scoring="cosine", temperature=tau))):
        inputs = [q, k, v, *args, *([tau] if "temperature" in kw else [])]
        ref = torch.autograd.grad(AF.attention_steps(q, k, v, *args, **kw)["out"].square().sum(), inputs)
        got = torch.autograd.grad(blockwise_attention(q, k, v, *args, block_size=5, **kw).square().sum(), inputs)
        for a, b in zip(got, ref):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    torch.manual_seed(0)
    out = blockwise_attention(q, k, v, dropout_p=0.5, block_size=5)
    out.sum().backward()  # differentiable with dropout; values: see test_dropout in test_dispatch
    assert torch.isfinite(q.grad).all()
