"""Hooks read or replace an intermediate; a replacement flows into every later step and the output.
Zeroing one head's attention weights equals removing that head from W_O in transformers' model."""

import copy
import re

import pytest
import torch

from attnscope import InputError
from tests.models.fixtures import hf_forward

TEXTS = ["The cat sat on the mat.", "Attention, please!"]
LAYER, HEAD = 2, 7


def _zero_head(t, name):
    t = t.clone()
    t[:, HEAD] = 0
    return t


def _hf_without_head(hf, layer, head, d_head):
    """The manual computation: head's z is zero ⇔ its d_head columns of W_O are zero."""
    hf = copy.deepcopy(hf)
    with torch.no_grad():
        hf.encoder.layer[layer].attention.output.dense.weight[:, head * d_head:(head + 1) * d_head] = 0
    return hf


@pytest.mark.parametrize("how", ["full", "suffix"])
def test_zeroing_a_heads_weights_equals_removing_it_from_W_O(how, minilm, hf_models):
    if how == "full":
        hooks = {f"layers.{LAYER}.attn.weights": _zero_head}
    else:
        hooks = {f"layers.{LAYER}.attn.weights[{HEAD}]": lambda t, name: torch.zeros_like(t)}
    names = ["layers.*.out", f"layers.{LAYER}.attn.weights", f"layers.{LAYER}.attn.z"]
    clean = minilm.trace(TEXTS, names=names)
    ablated = minilm.trace(TEXTS, names=names, hooks=hooks)
    assert ablated[f"layers.{LAYER}.attn.weights"][:, HEAD].eq(0).all()
    assert ablated[f"layers.{LAYER}.attn.z"][:, HEAD].eq(0).all()
    for i in range(6):  # earlier layers untouched, this one and later ones changed
        same = torch.equal(clean[f"layers.{i}.out"], ablated[f"layers.{i}.out"])
        assert same == (i < LAYER), i
    ref = hf_forward(_hf_without_head(hf_models("minilm"), LAYER, HEAD, minilm.config.d_head), minilm.encode(TEXTS))
    for b, n in enumerate(ablated.lengths):
        for i in range(6):
            err = (ablated[f"layers.{i}.out"][b, :n] - ref.hidden_states[i + 1][b, :n]).abs().max().item()
            assert err <= 1e-5, (b, i, err)
        assert (ablated.output[b, :n] - ref.last_hidden_state[b, :n]).abs().max().item() <= 1e-5


def test_replacing_q_equals_scaling_W_Q(tiny_models, hf_models):
    model = tiny_models["roberta"]
    tr = model.trace(TEXTS, names=["layers.1.out"], hooks={"layers.0.attn.q": lambda t, name: 2 * t})
    hf = copy.deepcopy(hf_models("roberta"))
    with torch.no_grad():
        hf.encoder.layer[0].attention.self.query.weight.mul_(2)
        hf.encoder.layer[0].attention.self.query.bias.mul_(2)
    ref = hf_forward(hf, model.encode(TEXTS))
    for b, n in enumerate(tr.lengths):
        assert (tr["layers.1.out"][b, :n] - ref.hidden_states[2][b, :n]).abs().max().item() <= 1e-5


def test_reading_hooks_see_every_matching_name_and_change_nothing(minilm):
    seen = []
    plain = minilm.trace(TEXTS, names=[])  # fused kernel everywhere
    explicit = minilm.trace(TEXTS, names="layers.*.attn.weights")  # the path a weights hook takes
    tr = minilm.trace(TEXTS, names=[], hooks={"layers.*.attn.weights": lambda t, name: seen.append((name, t.shape)) or None})
    assert [n for n, _ in seen] == [f"layers.{i}.attn.weights" for i in range(6)]
    assert torch.equal(tr.output, explicit.output) and tr.names == []
    for b, n in enumerate(tr.lengths):  # the two kernels round differently
        assert (tr.output[b, :n] - plain.output[b, :n]).abs().max().item() <= 1e-5


def test_bad_hook_results_are_clear_errors_and_leave_the_model_clean(minilm):
    before = minilm.run(TEXTS)
    with pytest.raises(InputError, match=r"hook 'layers\.0\.attn\.weights' on layers\.0\.attn\.weights must return "
                                         r"a tensor of shape \(2, 12, 9, 9\), got \(2, 12, 9\)"):
        minilm.trace(TEXTS, hooks={"layers.0.attn.weights": lambda t, name: t[..., 0]})
    with pytest.raises(InputError, match=r"must return None or a tensor, got int"):
        minilm.trace(TEXTS, hooks={"embed.out": lambda t, name: 3})
    with pytest.raises(InputError, match=r"hooks\[.*\] must be callable"):
        minilm.trace(TEXTS, hooks={"embed.out": "zero it"})
    with pytest.raises(InputError, match=r"hooks: 'nowhere' matches no trace name"):
        minilm.trace(TEXTS, hooks={"nowhere": lambda t, n: None})
    assert all(not m.active for m in minilm.modules() if hasattr(m, "active"))
    assert all(not m.hooks for m in minilm.modules() if hasattr(m, "add_hook"))
    assert torch.equal(minilm.run(TEXTS), before)


@pytest.mark.parametrize("pattern", ["layers.0.attn.z", "layers.0.attn.z[3]", "layers.0.attn.weights", "embed.out"])
@pytest.mark.parametrize("what", ["dtype", "device"])
def test_a_replacement_of_another_dtype_or_device_is_a_clear_error(pattern, what, minilm):
    """A replacement must be what it replaces but for its values: float64 or a tensor on another
    device went into the next matmul (a torch RuntimeError 'mat1 and mat2 must have the same
    dtype' from deep in the layer), and a head's slice was cast silently."""
    before = minilm.run(TEXTS)

    def other(t, name):
        return t.double() if what == "dtype" else t.to("meta")
    got = "torch.float64 on cpu" if what == "dtype" else "torch.float32 on meta"
    with pytest.raises(InputError, match=re.escape(f"hook '{pattern}' on ") + ".*" + re.escape(
            f" must return a tensor of dtype torch.float32 on cpu (as it was given), got {got}")):
        minilm.trace(TEXTS, names=[], hooks={pattern: other})
    with pytest.raises(InputError, match=r"must return a tensor of dtype torch\.float32 on cpu"):  # bwd: the gradient
        minilm.trace(TEXTS, names=[], grad=True, bwd_hooks={pattern: other}).output.sum().backward()
    assert all(not m.hooks for m in minilm.modules() if hasattr(m, "add_hook"))
    assert torch.equal(minilm.run(TEXTS), before)
