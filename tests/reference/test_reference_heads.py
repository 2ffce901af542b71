"""reference.split_qkv, head_columns, sinusoidal_pe and rotation_matrix against torch: the fused
in_proj chunks of nn.MultiheadAttention, GPT-2-style view/transpose, and the sinusoids by torch
float64 written here."""

import math

import numpy as np
import pytest
import torch

from attnscope import reference as R
from attnscope.errors import ConfigError


@pytest.mark.parametrize("H, Hkv", [(2, 2), (4, 2), (4, 1)])
def test_split_qkv_and_head_columns_are_torch_split_and_view(H, Hkv):
    d, L = 3, 5
    g = torch.Generator().manual_seed(H * 10 + Hkv)
    fused = torch.randn(L, (H + 2 * Hkv) * d, generator=g, dtype=torch.float64)
    q, k, v = fused.split([H * d, Hkv * d, Hkv * d], dim=-1)
    got = R.split_qkv(fused.numpy(), H, Hkv)
    for a, b in zip(got, (q, k, v)):
        np.testing.assert_array_equal(a, b.numpy())
    heads = q.view(L, H, d).transpose(0, 1)  # (H, L, d)
    for h in range(H):
        np.testing.assert_array_equal(got[0][:, R.head_columns(h, d)], heads[h].numpy())
    np.testing.assert_array_equal(R.split_heads(got[0], H), heads.numpy())
    with pytest.raises(ConfigError, match="not a multiple of n_heads \\+ 2·n_kv_heads"):
        R.split_qkv(fused.numpy()[:, :-1], H, Hkv)


def test_sinusoidal_pe_and_rotation_matrix():
    P, d = 50, 10
    pos = torch.arange(P, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2 * i / d)
    want = torch.stack([ang.sin(), ang.cos()], -1).reshape(P, d)  # sin on 2i, cos on 2i + 1
    np.testing.assert_allclose(R.sinusoidal_pe(np.arange(P), d), want.numpy(), rtol=0, atol=1e-13)
    from attnscope.positions import sinusoidal_table_np
    np.testing.assert_array_equal(R.sinusoidal_pe(np.arange(P), d), sinusoidal_table_np(P, d))
    a = np.array([0.3, -2.0, math.pi])
    M = R.rotation_matrix(a)
    for n, x in enumerate(a):
        np.testing.assert_allclose(M[n], [[math.cos(x), -math.sin(x)], [math.sin(x), math.cos(x)]], atol=1e-16)
    with pytest.raises(ConfigError, match="d_model must be even"):
        R.sinusoidal_pe([0], 5)
