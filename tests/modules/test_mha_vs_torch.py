"""MultiHeadAttention against torch.nn.MultiheadAttention with the same weights."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnscope import MultiHeadAttention


def pair(d_model, n_heads, bias=True, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).to(dtype)
    if bias:  # torch zero-initialises the biases; give them values so that they are tested
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    return ref, MultiHeadAttention.from_torch(ref)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 3), L=st.integers(1, 9), heads=st.sampled_from([1, 2, 4]), d_head=st.integers(1, 6),
       bias=st.booleans(), padded=st.booleans(), seed=st.integers(0, 1000))
def test_self_attention_matches(B, L, heads, d_head, bias, padded, seed):
    d = heads * d_head
    ref, ours = pair(d, heads, bias, seed=seed)
    x = torch.randn(B, L, d, dtype=torch.float64)
    kpm = None
    if padded:
        lengths = torch.randint(1, L + 1, (B,))
        kpm = torch.arange(L)[None] >= lengths[:, None]  # True = padding
    ref_out, ref_w = ref(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    out, w = ours(x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w, ref_w, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours(x, key_padding_mask=kpm), ref_out, rtol=1e-10, atol=1e-12)  # fast path


def test_cross_attention_matches():
    ref, ours = pair(12, 3)
    x, ctx = torch.randn(2, 4, 12, dtype=torch.float64), torch.randn(2, 7, 12, dtype=torch.float64)
    ref_out, ref_w = ref(x, ctx, ctx, average_attn_weights=False)
    out, w = ours(x, ctx, need_weights=True)
    assert w.shape == (2, 3, 4, 7)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)


def test_causal_and_attn_mask_match():
    ref, ours = pair(8, 2)
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    torch_mask = torch.ones(6, 6, dtype=torch.bool).triu(1)  # torch: True = NOT allowed
    ref_out, ref_w = ref(x, x, x, attn_mask=torch_mask, average_attn_weights=False)
    for kwargs in ({"causal": True}, {"attn_mask": ~torch_mask}):  # ours: True = attend (SDPA)
        out, w = ours(x, need_weights=True, **kwargs)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(w, ref_w)
        torch.testing.assert_close(ours(x, **kwargs), ref_out)


def test_float32_tolerance():
    ref, ours = pair(64, 8, dtype=torch.float32)
    x = torch.randn(4, 33, 64)
    torch.testing.assert_close(ours(x), ref(x, x, x, need_weights=False)[0], rtol=0, atol=2e-6)


def test_float_key_padding_mask_is_added():
    ref, ours = pair(8, 2)
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    add = torch.tensor([[0.0, -1.0, 0.5, 0.0, -float("inf")]], dtype=torch.float64)
    ref_out = ref(x, x, x, key_padding_mask=add, need_weights=False)[0]
    torch.testing.assert_close(ours(x, key_padding_mask=add), ref_out)


@pytest.mark.parametrize("bad", ["kdim", "bias_kv"])
def test_from_torch_rejects_unsupported(bad):
    m = nn.MultiheadAttention(8, 2, kdim=4, vdim=4) if bad == "kdim" else nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="from_torch"):
        MultiHeadAttention.from_torch(m)


@pytest.mark.parametrize("training", [False, True])
def test_from_torch_keeps_the_mode(training):
    # the copy of an eval() module with dropout was always in training mode: its outputs were
    # dropped at random (0.47 away from torch's) until the user called .eval() again
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(16, 4, dropout=0.5, batch_first=True).double().train(training)
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.training == training
    if not training:
        x = torch.randn(2, 5, 16, dtype=torch.float64)
        torch.testing.assert_close(ours(x), ref(x, x, x, need_weights=False)[0], atol=1e-12, rtol=0)
