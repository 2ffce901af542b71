"""The read API of a Trace: q/k/v and steps by layer and head, weights recorded or computed on
demand from q and k (blockwise), masks, and text selection — checked against the recorded tensors
and against transformers' eager weights."""

import pytest
import torch

from attnscope import InputError
from tests.models.fixtures import hf_forward

TEXTS = ["The cat sat on the mat.", "Attention, please!"]


def test_qkv_and_steps_by_head_and_text(minilm):
    tr = minilm.trace(TEXTS, names="layers.2.attn.*")
    q, k, v = tr.qkv(2)
    assert q.shape == (2, 12, tr.input_ids.shape[1], 32)
    n = tr.length(1)
    q1, k1, v1 = tr.qkv(2, head=5, text=1)
    assert q1.shape == (n, 32)
    assert torch.equal(q1, tr["layers.2.attn.q"][1, 5, :n]) and torch.equal(v1, tr["layers.2.attn.v"][1, 5, :n])
    w = tr.step(2, "weights", 5, text=1)
    assert w.shape == (n, n) and torch.equal(w, tr["layers.2.attn.weights"][1, 5, :n, :n])
    assert tr.text_tokens(1) == tr.tokens[1] and tr.n_layers == 6 and tr.n_heads == 12


def test_one_head_traces_are_found_by_the_same_calls(minilm):
    tr = minilm.trace(TEXTS, names=["layers.1.attn.q[4]", "layers.1.attn.k[4]", "layers.1.attn.weights[4]"])
    full = minilm.trace(TEXTS, names=["layers.1.attn.weights"])
    assert torch.equal(tr.step(1, "q", 4), tr["layers.1.attn.q[4]"])
    torch.testing.assert_close(tr.weights(1, heads=4), full["layers.1.attn.weights"][:, 4], rtol=0, atol=2e-6)
    with pytest.raises(InputError, match=r"the trace has no layers\.1\.attn\.q or layers\.1\.attn\.q\[3\]"):
        tr.step(1, "q", 3)


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_weights_on_demand_equal_transformers(which, minilm, tiny_models, hf_models):
    """Only q and k traced: the weights the read API computes are transformers' eager weights
    (padding and, for GPT-2, causality applied)."""
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    tr = model.trace(TEXTS, names=["layers.1.attn.q", "layers.1.attn.k"])
    ref = hf_forward(hf_models(which), model.encode(TEXTS)).attentions[1]  # (B, H, L, L)
    got = tr.weights(1, heads=[2, 0], queries=slice(1, 4))
    for b, n in enumerate(tr.lengths):
        torch.testing.assert_close(got[b, :, :, :n], ref[b, [2, 0], 1:4, :n], rtol=0, atol=2e-6)
        assert got[b, :, :, n:].eq(0).all()  # keys at padding
        one = tr.weights(1, heads=0, queries=2, text=b)
        assert one.shape == (n,)
        torch.testing.assert_close(one, ref[b, 0, 2, :n], rtol=0, atol=2e-6)


def test_mask_is_where_the_model_put_minus_infinity(tiny_models):
    model = tiny_models["gpt2"]
    tr = model.trace(TEXTS, names=["layers.0.attn.masked"])
    blocked = torch.isneginf(tr["layers.0.attn.masked"])  # (B, H, L, L)
    assert torch.equal(tr.mask(0).expand_as(blocked), ~blocked)
    n = tr.length(1)
    assert torch.equal(tr.mask(0, text=1)[0], torch.ones(n, n, dtype=torch.bool).tril())


def test_indices_are_checked(minilm):
    tr = minilm.trace(TEXTS, names=["layers.0.attn.q", "layers.0.attn.k"])
    with pytest.raises(InputError, match=r"layer 6 is out of range: there are 6 layers \(0\.\.5\)"):
        tr.qkv(6)
    with pytest.raises(InputError, match=r"head 12 is out of range"):
        tr.weights(0, heads=12)
    with pytest.raises(InputError, match=r"text 2 is out of range: there are 2 texts"):
        tr.weights(0, text=2)
    with pytest.raises(InputError, match=r"layer must be an integer, got '0'"):
        tr.qkv("0")
    with pytest.raises(InputError, match=r"the trace has no layers\.3\.attn\.q"):
        tr.weights(3)


@pytest.mark.parametrize("kind", ["decoder", "seq2seq"])
def test_mask_and_weights_on_demand_are_the_models_at_every_padded_position(kind, decoders, seq2seq):
    """The decoders' stacks (and an encoder–decoder's causal self-attention) let a padded query see
    itself, so that no row is empty: trace.mask(layer) left that diagonal out, and the weights
    computed from q and k spread such a row over the real keys only, where the model put part of it
    on the query's own key (tiny Llama: up to 0.27 of a row). Checked against the mask and weights
    the model recorded, every position of a padded batch."""
    if kind == "decoder":
        model, args, att = decoders["llama_gqa"], (TEXTS,), None
    else:
        model, att = seq2seq["t5"], "self"
        args = (["The quick brown fox jumps over the lazy dog.", "Hi"], ["A fox jumped.", "Hello there, friend"])
    block = "layers.1.attn" if kind == "decoder" else "decoder.layers.1.self_attn"
    full = model.trace(*args, names=[f"{block}.masked", f"{block}.weights"])
    qk = model.trace(*args, names=[f"{block}.q", f"{block}.k"] + ([f"{block}.bias"] if kind == "seq2seq" else []))
    used = ~torch.isneginf(full[f"{block}.masked"])  # (B, H, L, S): where the model let a query see a key
    assert not used.all()  # padded, so the mask matters
    assert torch.equal(full.mask(1, attention=att).expand_as(used), used)
    torch.testing.assert_close(qk.weights(1, attention=att), full[f"{block}.weights"], rtol=0, atol=2e-6)
