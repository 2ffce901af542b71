"""Weights on demand for a traced model: a head's weights tapped from a text too long for the
step-by-step path, and any layer/head/query range from a trace's q and k, equal the full
traced weights — with padding (MiniLM) and causality (GPT-2)."""

import pytest
import torch

import attnscope.kernels.blockwise as KB
import attnscope.kernels.memory as memory
from attnscope import InputError

TEXTS = ["Attention lets every token look at every other token of the sentence.", "Short one."]


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_trace_weights_from_q_and_k(which, minilm, tiny_models):
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    full = model.trace(TEXTS, names="layers.1.attn.weights")["layers.1.attn.weights"]  # (B, H, L, L)
    tr = model.trace(TEXTS, names=["layers.1.attn.q", "layers.1.attn.k"])
    got = tr.weights(1, heads=[2, 0], queries=slice(3, 9))
    torch.testing.assert_close(got, full[:, [2, 0], 3:9], rtol=0, atol=2e-6)
    one = model.trace(TEXTS, names=["layers.1.attn.q[3]", "layers.1.attn.k[3]"])
    torch.testing.assert_close(one.weights(1, heads=3, queries=4), full[:, 3, 4], rtol=0, atol=2e-6)
    with pytest.raises(InputError, match=r"the trace has no layers\.0\.attn\.q"):
        tr.weights(0)


def test_tapped_head_of_a_long_text_is_computed_blockwise(minilm, monkeypatch):
    """When the head's step-by-step matrices would not fit, ``weights[h]`` comes from the
    blockwise weights of those heads only (simulated here by a memory limit of 0 bytes)."""
    full = minilm.trace(TEXTS, names="layers.2.attn.weights")["layers.2.attn.weights"]
    calls = []
    real = KB.weights_of
    monkeypatch.setattr(KB, "weights_of", lambda p, *a, **kw: calls.append(p.q.shape[1]) or real(p, *a, **kw))
    monkeypatch.setattr(memory, "DENSE_MEMORY_LIMIT", 0)
    tr = minilm.trace(TEXTS, names=["layers.2.attn.weights[5]", "layers.2.attn.weights[1]"])
    assert calls == [2]  # one call, for the two tapped heads
    for h in (1, 5):
        torch.testing.assert_close(tr[f"layers.2.attn.weights[{h}]"], full[:, h], rtol=0, atol=2e-6)
