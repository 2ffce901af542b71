"""The causal mask a decoder's layers share: built once per shape, equal to a fresh one, never
handed to a caller who did not ask for a shared tensor, and kept apart across inference mode."""

import numpy as np
import torch

from attnscope.kernels import dense
from attnscope.kernels.steps import attend


def numpy_causal(L, S):
    return np.where(np.triu(np.ones((L, S), dtype=bool), k=1), -np.inf, 0.0)


def test_shared_mask_is_built_once_and_is_the_causal_mask():
    a = dense.combine_masks(None, 7, 9, causal=True, dtype=torch.float32, device=torch.device("cpu"), reuse=True)
    b = dense.combine_masks(None, 7, 9, causal=True, dtype=torch.float32, device=torch.device("cpu"), reuse=True)
    assert a is b and dense.is_shared_causal(a)
    np.testing.assert_array_equal(a.numpy(), numpy_causal(7, 9))


def test_callers_without_reuse_get_their_own_tensor():
    shared = dense.combine_masks(None, 5, 5, causal=True, dtype=torch.float32, device=torch.device("cpu"), reuse=True)
    mine = dense.combine_masks(None, 5, 5, causal=True, dtype=torch.float32, device=torch.device("cpu"))
    assert mine is not shared and not dense.is_shared_causal(mine)
    mine.fill_(3.0)  # a user's in-place edit must not reach the next layer
    np.testing.assert_array_equal(shared.numpy(), numpy_causal(5, 5))


def test_a_mask_with_padding_is_never_the_shared_one():
    pad = torch.tensor([[True, True, False]])
    add = dense.combine_masks(pad, 3, 3, causal=True, dtype=torch.float32, device=torch.device("cpu"), reuse=True)
    assert not dense.is_shared_causal(add)
    want = numpy_causal(3, 3) + np.where(pad.numpy(), 0.0, -np.inf)
    np.testing.assert_array_equal(add.numpy(), want)


def test_large_masks_are_not_kept():
    n = int(dense.CAUSAL_CACHE_MAX ** 0.5) + 1
    a = dense.causal_additive(n, n, torch.float32, torch.device("cpu"), reuse=True)
    assert not dense.is_shared_causal(a)


def test_weights_after_an_inference_mode_trace_still_train():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 4, generator=g) for _ in range(3))
    with torch.inference_mode():
        z0, w0 = attend(q, k, v, causal=True, need_weights=True)
    qg = q.clone().requires_grad_()
    z, w = attend(qg, k, v, causal=True, need_weights=True)
    z.sum().backward()  # an inference-mode mask inside the graph would raise here
    assert qg.grad is not None and torch.isfinite(qg.grad).all()
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(z.detach(), ref)
    torch.testing.assert_close(w0, w.detach())
