"""float16 / bfloat16 inputs: sums and exponentials run in float32 (thousands of keys would
lose too much otherwise); the output comes back in the input dtype, the lse in float32."""

import pytest
import torch

from attnscope.blockwise import blockwise_attention


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 1e-2), (torch.float16, 2e-3)])
def test_half_inputs(dtype, tol):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 700, 32, generator=g).to(dtype) for _ in range(3))
    out, lse = blockwise_attention(q, k, v, scoring="cosine", return_lse=True)
    assert out.dtype == dtype and lse.dtype == torch.float32
    ref, ref_lse = blockwise_attention(q.double(), k.double(), v.double(), scoring="cosine", return_lse=True)
    ref_sdpa = torch.nn.functional.scaled_dot_product_attention(
        torch.nn.functional.normalize(q.double(), dim=-1), torch.nn.functional.normalize(k.double(), dim=-1), v.double(), scale=10.0)
    assert (ref - ref_sdpa).abs().max().item() < 1e-12
    assert (out.double() - ref).abs().max().item() < tol  # the output's own rounding
    assert (lse.double() - ref_lse).abs().max().item() < 1e-4
