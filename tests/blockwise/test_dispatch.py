"""attnscope.attention picks the kernel: SDPA on the prepared q, k for every scoring without
weights, the blockwise kernel for scores SDPA cannot form (a temperature that varies over keys)
on long inputs, and blockwise weights when the step-by-step weights path would not fit
(inference only). Results agree across the paths."""

import pytest
import torch
import torch.nn.functional as F

import attnscope.kernels.blockwise as BW
import attnscope.kernels.memory as memory
from attnscope import attention


@pytest.fixture
def spies(monkeypatch):
    calls = {"sdpa": 0, "blockwise": 0, "weights": 0}
    real_sdpa, real_bw, real_w = F.scaled_dot_product_attention, BW.run, BW.weights_of

    def count(name, fn):
        def wrapped(*a, **kw):
            calls[name] += 1
            return fn(*a, **kw)
        return wrapped
    monkeypatch.setattr(F, "scaled_dot_product_attention", count("sdpa", real_sdpa))
    monkeypatch.setattr(BW, "run", count("blockwise", real_bw))
    monkeypatch.setattr(BW, "weights_of", count("weights", real_w))
    return calls


g = torch.Generator().manual_seed(5)
q, k, v = (torch.randn(2, 3, 300, 16, generator=g) for _ in range(3))
mask = torch.rand(2, 1, 300, 300, generator=g) > 0.2


@pytest.mark.parametrize("scoring", ["unscaled", "inv_d", "cosine", "qknorm"])
def test_other_scorings_go_to_the_fused_kernel(spies, scoring):
    out = attention(q, k, v, mask, causal=True, scoring=scoring)
    assert spies == {"sdpa": 1, "blockwise": 0, "weights": 0}
    ref, _ = attention(q.double(), k.double(), v.double(), mask, causal=True, scoring=scoring, return_weights=True)
    assert (out.double() - ref).abs().max().item() <= 1e-5


def test_scores_sdpa_cannot_form_go_blockwise_when_long(spies):
    """τ per key: no ``scale=`` expresses it, so a long input takes the blockwise kernel."""
    tau = torch.linspace(0.05, 0.2, 1100)  # (S,) varies over keys
    ql, kl, vl = (torch.randn(1, 1, 1100, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    out = attention(ql, kl, vl, scoring="cosine", temperature=tau)
    assert spies == {"sdpa": 0, "blockwise": 1, "weights": 0}
    attention(ql[..., :50, :], kl, vl, scoring="cosine", temperature=tau)
    assert spies == {"sdpa": 0, "blockwise": 1, "weights": 0}  # short: the explicit steps
    ref, _ = attention(ql.double(), kl.double(), vl.double(), scoring="cosine", temperature=tau.double(),
                       return_weights=True)
    assert (out.double() - ref).abs().max().item() <= 1e-5


def test_scaled_keeps_the_fused_kernel(spies):
    out = attention(q, k, v, mask)
    assert spies == {"sdpa": 1, "blockwise": 0, "weights": 0}
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_weights_of_a_long_input_are_computed_blockwise(spies, monkeypatch):
    ref_out, ref_w = attention(q, k, v, mask, scoring="cosine", return_weights=True)
    assert spies["weights"] == 0
    monkeypatch.setattr(memory, "DENSE_MEMORY_LIMIT", 0)  # "the dense steps would not fit"
    with torch.no_grad():
        out, w = attention(q, k, v, mask, scoring="cosine", return_weights=True)
    assert spies["weights"] == 1
    torch.testing.assert_close(w, ref_w, rtol=0, atol=1e-5)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-5)
    # with gradients wanted the explicit (differentiable) path is kept
    qg = q.clone().requires_grad_()
    attention(qg, k, v, mask, scoring="cosine", return_weights=True)
    assert spies["weights"] == 1


def test_dropout_is_unbiased():
    """Dropout on the blockwise probabilities: the mean over many draws is the plain output."""
    qs, ks, vs = q[:1, :1, :8, :4].double(), k[:1, :1, :8, :4].double(), v[:1, :1, :8, :4].double()
    plain = attention(qs, ks, vs, scoring="inv_d")
    torch.manual_seed(0)
    draws = torch.stack([attention(qs, ks, vs, scoring="inv_d", dropout_p=0.3) for _ in range(3000)])
    assert not torch.equal(draws[0], draws[1])
    assert (draws.mean(0) - plain).abs().max().item() < 0.08
