"""float16 / bfloat16 inputs: sums and exponentials run in float32 (thousands of keys would
lose too much otherwise); the output comes back in the input dtype, the lse in float32. The
online kernel keeps the prepared q', k' in float32; the fused kernel takes them rounded to the
input dtype (as SDPA would, at its half speed), so its lse is exact for those rounded operands."""

import pytest
import torch
import torch.nn.functional as F

from attnscope.blockwise import blockwise_attention


@pytest.mark.parametrize("kernel", ["fused", "online"])
@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 1e-2), (torch.float16, 2e-3)])
def test_half_inputs(dtype, tol, kernel):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 700, 32, generator=g).to(dtype) for _ in range(3))
    out, lse = blockwise_attention(q, k, v, scoring="cosine", return_lse=True, kernel=kernel)
    assert out.dtype == dtype and lse.dtype == torch.float32
    ref, ref_lse = blockwise_attention(q.double(), k.double(), v.double(), scoring="cosine", return_lse=True)
    ref_sdpa = F.scaled_dot_product_attention(F.normalize(q.double(), dim=-1), F.normalize(k.double(), dim=-1),
                                              v.double(), scale=10.0)
    assert (ref - ref_sdpa).abs().max().item() < 1e-12
    assert (out.double() - ref).abs().max().item() < tol  # the output's own rounding
    if kernel == "online":
        assert (lse.double() - ref_lse).abs().max().item() < 1e-4
    else:  # float64 of the operands the kernel took: q', k' prepared in float32, rounded to dtype
        qn, kn = (F.normalize(t.float(), dim=-1, eps=1e-6).to(dtype).double() for t in (q, k))
        rounded = torch.logsumexp(qn @ kn.transpose(-2, -1) * 10.0, dim=-1)
        assert (lse.double() - rounded).abs().max().item() < 1e-4
        assert (lse.double() - ref_lse).abs().max().item() < 10.0 * 2.0 ** -7  # ≤ |score| · rounding
