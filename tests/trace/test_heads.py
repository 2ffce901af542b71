"""``name[h]`` selects one head: the same numbers as the full tensor's slice, computed for that
head only, without moving the layer (or any other layer) off the fused kernel."""

import pytest
import torch

import attnscope.kernels.dense as AF
import attnscope.kernels.fused as fused
from attnscope import InputError
from attnscope.trace import HEAD_STEPS

TEXTS = ["The cat sat on the mat.", "Attention, please!"]


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_one_head_equals_the_slice_of_all_heads(which, minilm, tiny_models):
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    full = model.trace(TEXTS, names=[f"layers.1.attn.{s}" for s in HEAD_STEPS])
    one = model.trace(TEXTS, names=[f"layers.1.attn.{s}[2]" for s in HEAD_STEPS])
    assert one.names == [f"layers.1.attn.{s}[2]" for s in HEAD_STEPS]
    for s in HEAD_STEPS:
        a, b = one[f"layers.1.attn.{s}[2]"], full[f"layers.1.attn.{s}"][:, 2]
        assert a.shape == b.shape
        both_inf = torch.isneginf(a) & torch.isneginf(b)
        assert torch.equal(both_inf, torch.isneginf(a) | torch.isneginf(b))
        scale = max(1.0, b.masked_fill(both_inf, 0).abs().max().item())  # float32 rounding of a
        assert (a - b).masked_fill(both_inf, 0).abs().max().item() <= 1e-6 * scale, s  # smaller matmul


def test_glob_with_head(minilm):
    tr = minilm.trace("hello world", names="layers.*.attn.weights[0]")
    assert tr.names == [f"layers.{i}.attn.weights[0]" for i in range(6)]
    assert tr["layers.3.attn.weights[0]"].shape == (1, 4, 4)


def test_one_head_costs_one_head(minilm, monkeypatch):
    """Spy on the score products: one (B, 1, L, S) for the head, and every layer keeps SDPA."""
    products, sdpa, lean = [], [], []
    real_raw, real_sdpa, real_lean = AF.raw_scores, fused.sdpa, AF.lean_weights
    monkeypatch.setattr(AF, "raw_scores", lambda q, k: products.append(tuple(q.shape)) or real_raw(q, k))
    monkeypatch.setattr(fused, "sdpa", lambda *a, **kw: sdpa.append(1) or real_sdpa(*a, **kw))
    monkeypatch.setattr(AF, "lean_weights", lambda *a, **kw: lean.append(1) or real_lean(*a, **kw))
    minilm.trace(TEXTS, names="layers.3.attn.weights[5]")
    L = minilm.encode(TEXTS).input_ids.shape[1]
    assert products == [(2, 1, L, 64 // 2)]  # MiniLM: d_head = 384 / 12 = 32
    assert len(sdpa) == 6 and lean == []

    products.clear(), sdpa.clear()
    minilm.trace(TEXTS, names="layers.3.attn.weights")  # the full layer: explicit there only
    assert len(sdpa) == 5 and len(lean) == 1 and products == []


def test_head_errors(minilm):
    with pytest.raises(InputError, match=r"head 12 out of range; the model has 12 heads \(0\.\.11\)"):
        minilm.trace("hi", names="layers.0.attn.weights[12]")
    with pytest.raises(InputError, match=r"a \[head\] suffix needs a per-head name.*got 'layers\.0\.attn\.merged'"):
        minilm.trace("hi", names="layers.0.attn.merged[1]")


def test_unknown_name_suggests(minilm):
    with pytest.raises(InputError,
                       match=r"'layers\.0\.attn\.weight' matches no trace name; did you mean layers\.0\.attn\.weights"):
        minilm.trace("hi", names="layers.0.attn.weight")
    tr = minilm.trace("hi", names="layers.0.out")
    with pytest.raises(KeyError, match=r"'layers\.1\.out' is not in this trace"):
        tr["layers.1.out"]
