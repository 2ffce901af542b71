"""The hook API: HookPoint.add_hook (forward, backward, one head), model.hooks as a context
manager that always removes its hooks, and trace(grad=True) whose tensors carry gradients —
checked against transformers' own autograd graph (eager attention returns the weights it uses)."""

import pytest
import torch

from attnscope import InputError
from tests.models.fixtures import hf_forward

TEXT = ["The cat sat on the mat because it was tired."]
LAYER, HEAD = 1, 3


def _points(model):
    return dict(model.named_modules())


def test_add_hook_order_handles_and_head_slices(minilm):
    hp = _points(minilm)[f"layers.{LAYER}.attn.q"]
    seen = []
    h1 = hp.add_hook(lambda t, name: seen.append(("all", name, tuple(t.shape))) or 2 * t)
    h2 = hp.add_hook(lambda t, name: seen.append(("one", name, float(t.abs().sum()))) or None, head=HEAD)
    try:
        doubled = minilm.trace(TEXT, names=[f"layers.{LAYER}.attn.q"])
    finally:
        h1.remove()
        h2.remove()
        h2.remove()  # idempotent
    assert not hp.hooks
    assert [s[0] for s in seen] == ["all", "one"] and seen[1][1] == f"layers.{LAYER}.attn.q[{HEAD}]"
    clean = minilm.trace(TEXT, names=[f"layers.{LAYER}.attn.q"])
    q_clean, q_doubled = clean[f"layers.{LAYER}.attn.q"], doubled[f"layers.{LAYER}.attn.q"]
    torch.testing.assert_close(q_doubled, 2 * q_clean, rtol=0, atol=0)
    assert seen[1][2] == pytest.approx(float(q_doubled[:, HEAD].abs().sum()), rel=1e-6)  # saw the replacement


def test_a_head_hook_replaces_only_its_head(minilm):
    name = f"layers.{LAYER}.attn.z"
    with minilm.hooks({f"{name}[{HEAD}]": lambda t, n: torch.zeros_like(t)}):
        tr = minilm.trace(TEXT, names=[name])
    clean = minilm.trace(TEXT, names=[name])
    z, z0 = tr[name], clean[name]
    assert z[:, HEAD].eq(0).all()
    others = [h for h in range(minilm.config.n_heads) if h != HEAD]
    assert torch.equal(z[:, others], z0[:, others])


def test_hooks_context_removes_hooks_even_on_error(minilm):
    before = minilm.run(TEXT)
    with pytest.raises(RuntimeError, match="boom"):
        with minilm.hooks({"layers.*.attn.out": lambda t, n: torch.zeros_like(t)}):
            assert not torch.allclose(minilm.run(TEXT), before)
            raise RuntimeError("boom")
    assert all(not getattr(m, "hooks", None) for m in minilm.modules() if hasattr(m, "add_hook"))
    assert torch.equal(minilm.run(TEXT), before)
    with pytest.raises(InputError, match=r"hooks: 'nowhere' matches no trace name"):
        with minilm.hooks({"nowhere": lambda t, n: None}):
            pass
    with pytest.raises(InputError, match=r"dir must be 'fwd' or 'bwd'"):
        _points(minilm)["embed.out"].add_hook(lambda t, n: None, dir="sideways")


def _hf_grad_of_weights(hf, batch, layer):
    """d(sum of last hidden state²)/d(attention weights of ``layer``), from transformers' graph."""
    out = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
             token_type_ids=batch.token_type_ids, output_attentions=True)
    loss = out.last_hidden_state.pow(2).sum()
    return torch.autograd.grad(loss, out.attentions[layer])[0]  # (B, H, L, L)


def test_gradient_with_respect_to_one_heads_weights(minilm, hf_models):
    """trace(grad=True) and a backward hook on weights[h] both give transformers' gradient."""
    hf = hf_models("minilm")
    batch = minilm.encode(TEXT)
    ref = _hf_grad_of_weights(hf, batch, LAYER)[:, HEAD]  # (B, L, L)

    name = f"layers.{LAYER}.attn.weights"
    tr = minilm.trace(batch, names=[name], grad=True)
    assert tr[name].requires_grad and tr.output.requires_grad
    (g,) = torch.autograd.grad(tr.output.pow(2).sum(), tr[name])
    torch.testing.assert_close(g[:, HEAD], ref, rtol=1e-4, atol=1e-5)

    grads = []
    with minilm.hooks(bwd={f"{name}[{HEAD}]": lambda g, n: grads.append((n, g.clone())) or None}):
        with torch.enable_grad():
            minilm(batch.input_ids, batch.attention_mask, batch.token_type_ids).pow(2).sum().backward()
    minilm.zero_grad(set_to_none=True)
    assert [n for n, _ in grads] == [f"{name}[{HEAD}]"]
    torch.testing.assert_close(grads[0][1], ref, rtol=1e-4, atol=1e-5)


def test_backward_hook_replaces_the_gradient(minilm):
    """Zeroing the gradient at embed.out zeroes every embedding's gradient and nothing above."""
    with minilm.hooks(bwd={"embed.out": lambda g, n: torch.zeros_like(g)}):
        with torch.enable_grad():
            minilm.run(TEXT).pow(2).sum().backward()
    try:
        assert minilm.embed.token_embedding.weight.grad.abs().max() == 0
        assert minilm.layers[0].attn.W_qkv.weight.grad.abs().max() > 0
    finally:
        minilm.zero_grad(set_to_none=True)


def test_grad_trace_of_a_language_model(tiny_models, hf_models):
    """GPT-2: the gradient of the LM loss with respect to one layer's z equals transformers'
    gradient with respect to that layer's attention weights pushed through v (z = w·v)."""
    model, hf = tiny_models["gpt2"], hf_models("gpt2")
    batch = model.encode(["a b c d e f"])
    tr = model.trace(batch, names=["layers.0.attn.weights", "layers.0.attn.v"], grad=True)
    loss = torch.nn.functional.cross_entropy(model.lm_logits(tr.output)[0, :-1], batch.input_ids[0, 1:])
    (gw,) = torch.autograd.grad(loss, tr["layers.0.attn.weights"])
    out = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.input_ids,
             output_attentions=True)
    (ref,) = torch.autograd.grad(out.loss, out.attentions[0])
    torch.testing.assert_close(gw, ref, rtol=1e-4, atol=1e-6)
    assert not hf_forward(hf, batch).attentions[0].requires_grad  # the reference helper runs without grad


def test_gradient_with_respect_to_a_traced_head(minilm, hf_models):
    """With grad=True a one-head name is the slice the output was computed from."""
    batch = minilm.encode(TEXT)
    ref = _hf_grad_of_weights(hf_models("minilm"), batch, LAYER)[:, HEAD]  # (B, L, L)
    name = f"layers.{LAYER}.attn.weights[{HEAD}]"
    tr = minilm.trace(batch, names=[name], grad=True)
    (g,) = torch.autograd.grad(tr.output.pow(2).sum(), tr[name])
    torch.testing.assert_close(g, ref, rtol=1e-4, atol=1e-5)


def test_gradient_with_respect_to_q_a_view_of_the_fused_projection(minilm):
    """q is a view of the fused W_qkv output; with grad=True the trace keeps that view, so its
    gradient exists and equals the one a hook-free autograd graph gives (q → scores → …)."""
    name = f"layers.{LAYER}.attn.q"
    tr = minilm.trace(TEXT, names=[name, f"{name}[{HEAD}]"], grad=True)
    (g_all,) = torch.autograd.grad(tr.output.pow(2).sum(), tr[name], retain_graph=True)
    (g_one,) = torch.autograd.grad(tr.output.pow(2).sum(), tr[f"{name}[{HEAD}]"])
    torch.testing.assert_close(g_one, g_all[:, HEAD], rtol=1e-5, atol=1e-7)
    eps = 1e-3  # a central finite difference along the gradient's direction, through a q hook
    probe = g_all / g_all.norm()
    with torch.no_grad(), minilm.hooks({name: lambda t, n: t + eps * probe}):
        up = minilm.run(TEXT).double().pow(2).sum()
    with torch.no_grad(), minilm.hooks({name: lambda t, n: t - eps * probe}):
        down = minilm.run(TEXT).double().pow(2).sum()
    assert float((up - down) / (2 * eps)) == pytest.approx(float(g_all.norm()), rel=2e-2)


def test_add_hook_names_a_replacement_of_another_dtype(minilm):
    """HookPoint.add_hook itself (no trace): float64 for a float32 step is named, not a torch
    RuntimeError from the next matmul."""
    hp = _points(minilm)[f"layers.{LAYER}.attn.q"]
    with hp.add_hook(lambda t, name: t.double()):
        with pytest.raises(InputError, match=rf"hook on 'layers\.{LAYER}\.attn\.q' must return a tensor of dtype "
                                             r"torch\.float32 on cpu \(as it was given\), got torch\.float64 on cpu"):
            minilm.run(TEXT)
    assert not hp.hooks


def test_backward_hooks_without_grad_are_one_sentence(minilm):
    """Without grad=True the pass runs under no_grad: the backward hooks were accepted and never
    called, and the output's backward() failed in torch ('does not require grad')."""
    seen = []
    with pytest.raises(InputError, match=r"bwd_hooks .* pass grad=True"):
        minilm.trace(TEXT, names=[], bwd_hooks={f"layers.{LAYER}.attn.weights": lambda g, n: seen.append(n)})
    assert not seen and all(not m.hooks for m in minilm.modules() if hasattr(m, "add_hook"))
