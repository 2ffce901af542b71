"""attnscope.attention (both paths) against torch's own SDPA over random shapes, masks and dtypes."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope import attention

TOL = {torch.float64: 1e-12, torch.float32: 2e-6, torch.bfloat16: 3e-2, torch.float16: 3e-3}


@st.composite
def problems(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    L = draw(st.integers(1, 17))
    S = draw(st.integers(1, 17))
    d = draw(st.integers(1, 24))
    dv = draw(st.integers(1, 24))
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
    mask_kind = draw(st.sampled_from(["none", "bool", "float", "bool_row"]))
    causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return lead, L, S, d, dv, dtype, mask_kind, causal, seed


def make(lead, L, S, d, dv, dtype, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, L, d, generator=g).to(dtype)
    k = torch.randn(*lead, S, d, generator=g).to(dtype)
    v = torch.randn(*lead, S, dv, generator=g).to(dtype)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "bool":
        mask = torch.rand(L, S, generator=g) > 0.3
    elif mask_kind == "bool_row":  # a key-padding style mask that broadcasts over queries
        mask = torch.rand(*lead, 1, S, generator=g) > 0.3
    else:
        mask = (torch.randn(L, S, generator=g) * 2).to(dtype)
    return q, k, v, mask


def sdpa_reference(q, k, v, mask, causal):
    if causal:  # SDPA refuses is_causal with a mask; fold it the documented way
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        if mask is None:
            mask = keep
        elif mask.dtype == torch.bool:
            mask = mask & keep
        else:
            mask = mask.masked_fill(~keep, float("-inf"))
    attn_mask = None if mask is None else (mask if mask.dtype == torch.bool else mask.double())
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=attn_mask)


@settings(max_examples=120, deadline=None)
@given(problems())
def test_both_paths_match_sdpa(p):
    lead, L, S, d, dv, dtype, mask_kind, causal, seed = p
    q, k, v, mask = make(lead, L, S, d, dv, dtype, mask_kind, seed)
    ref = sdpa_reference(q, k, v, mask, causal)
    fast = attention(q, k, v, mask, causal=causal)
    slow, w = attention(q, k, v, mask, causal=causal, return_weights=True)
    assert fast.dtype == dtype and slow.dtype == dtype
    assert fast.shape == (*lead, L, dv) and w.shape == (*lead, L, S)
    # Rows with no allowed key are zero in both (SDPA's convention too), never NaN.
    assert not torch.isnan(fast).any() and not torch.isnan(slow).any()
    scale = max(1.0, float(ref.abs().max()))
    torch.testing.assert_close(fast.double(), ref, rtol=0, atol=TOL[dtype] * scale * 4)
    torch.testing.assert_close(slow.double(), ref, rtol=0, atol=TOL[dtype] * scale * 4)


def test_fast_path_is_sdpa_bit_for_bit():
    q, k, v = torch.randn(3, 2, 12, 64, 32).unbind(0)
    assert torch.equal(attention(q, k, v), F.scaled_dot_product_attention(q, k, v))
    assert torch.equal(attention(q, k, v, causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_weights_rows_sum_to_one(dtype):
    q, k, v = (torch.randn(1, 4, 10, 16) * 3).to(dtype).unbind(0)[0:1] * 3
    q, k, v = [torch.randn(1, 4, 10, 16).to(dtype) for _ in range(3)]
    out, w = attention(q, k, v, return_weights=True)
    assert w.dtype == dtype
    torch.testing.assert_close(w.float().sum(-1), torch.ones(1, 4, 10), rtol=0, atol=1e-2)


def test_scale_override_matches_sdpa_scale():
    q, k, v = torch.randn(3, 2, 5, 8, dtype=torch.float64).unbind(0)
    ref = F.scaled_dot_product_attention(q, k, v, scale=0.37)
    torch.testing.assert_close(attention(q, k, v, scale=0.37), ref)
    torch.testing.assert_close(attention(q, k, v, scale=0.37, return_weights=True)[0], ref)


def test_causal_with_more_keys_than_queries_is_top_left_aligned():
    q = torch.randn(1, 3, 4, dtype=torch.float64)
    k = v = torch.randn(1, 6, 4, dtype=torch.float64)
    _, w = attention(q, k, v, causal=True, return_weights=True)
    allowed = torch.ones(3, 6, dtype=torch.bool).tril()
    assert torch.equal(w[0] > 0, allowed)
    torch.testing.assert_close(attention(q, k, v, causal=True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_dropout_only_changes_output_in_expectation():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 1, 4, 8, dtype=torch.float64).unbind(0)
    out, w = attention(q, k, v, dropout_p=0.5, return_weights=True)
    ref, ref_w = attention(q, k, v, return_weights=True)
    torch.testing.assert_close(w, ref_w)  # weights returned are the probabilities, before dropout
    assert not torch.allclose(out, ref)
    mean = torch.stack([attention(q, k, v, dropout_p=0.5, return_weights=True)[0] for _ in range(4000)]).mean(0)
    torch.testing.assert_close(mean, ref, rtol=0, atol=0.08)


@pytest.mark.parametrize("return_weights", [False, True])
def test_fully_masked_query_gives_zero_output_and_finite_gradients(return_weights):
    q, k, v = (torch.randn(1, 2, 4, 8, dtype=torch.float64).requires_grad_() for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False  # query 2 may look at nothing
    out = attention(q, k, v, mask, return_weights=return_weights)
    if return_weights:
        out, w = out
        assert torch.equal(w[..., 2, :], torch.zeros(1, 2, 4, dtype=torch.float64))
    assert torch.equal(out[..., 2, :], torch.zeros(1, 2, 8, dtype=torch.float64))
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.equal(q.grad[..., 2, :], torch.zeros(1, 2, 8, dtype=torch.float64))


@pytest.mark.parametrize("shape", [(6,), (), (1,)], ids=["(S,)", "0-D", "(1,)"])
@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_mask_of_fewer_than_two_dims(shape, kind, causal):
    # a key mask (S,) broadcasts to (..., L, S) and passed the checks, but the fast path handed it
    # to SDPA as it was: IndexError "Dimension out of range" from inside torch (with weights it worked)
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, n, 8, generator=g, dtype=torch.float64) for n in (5, 6, 6))
    if kind == "bool":  # key 0 visible: no row without a key
        mask = torch.tensor([True, False, True, True, False, True][:shape[0]] if shape else True)
    else:
        mask = torch.randn(shape, generator=g, dtype=torch.float64)
    s = q @ k.transpose(-1, -2) / 8 ** 0.5  # float64 by hand, every row sees key 0
    s = s.masked_fill(~mask, float("-inf")) if kind == "bool" else s + mask
    if causal:
        s = s.masked_fill(~torch.ones(5, 6, dtype=torch.bool).tril(), float("-inf"))
    ref = torch.softmax(s, -1) @ v
    for return_weights in (False, True):
        out = attention(q, k, v, mask, causal=causal, return_weights=return_weights)
        out = out[0] if return_weights else out
        torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
