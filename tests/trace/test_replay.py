"""A full trace keeps each layer's steps but its attention matrices and output as the layer's call
and runs the layer again on read (attnscope.trace.replay): every name of every family reads back
bit for bit (torch.equal) what a trace that kept every tensor holds, in padded batches too; the
bytes held drop to about the matrices and the residual stream; save/load, hooks and gradients
keep working; replay=True with hooks is refused in one sentence."""

import pytest
import torch

import attnscope
from attnscope.errors import InputError
from attnscope.trace.replay import Replayed

TEXTS = ["The cat sat on the mat, and then it looked at the dog for a long while.", "Attention, please!"]
SOURCE = ["The quick brown fox jumps over the lazy dog.", "Hi"]
TARGET = ["A fox jumped.", "Hello there, friend"]


def same_trace(model, *args):
    """A replayed trace and one that keeps every tensor, of the same texts: every name equal."""
    lazy = model.trace(*args)
    kept = model.trace(*args, replay=False)
    assert lazy.names == kept.names
    replayed = [n for n in lazy.names if isinstance(lazy._tensors[n], Replayed)]
    assert replayed, "nothing was replayed"
    for n in reversed(lazy.names):  # out of order: each read may replay a layer again
        a, b = lazy[n], kept[n]
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), n
    return lazy, kept


def test_every_encoder_name_reads_back_the_same_bits(tiny_models):
    for model in tiny_models.values():
        same_trace(model, TEXTS)
        same_trace(model, TEXTS[0])


def test_every_decoder_name_reads_back_the_same_bits(decoders):
    for name, model in decoders.items():
        lazy, kept = same_trace(model, TEXTS)
        assert lazy.nbytes < kept.nbytes, name


def test_encoder_decoder_names_read_back_the_same_bits(seq2seq):
    for name, model in seq2seq.items():
        lazy = model.trace(SOURCE, target=TARGET)
        kept = model.trace(SOURCE, target=TARGET, names=list(lazy.names))
        assert any(isinstance(t, Replayed) for t in lazy._tensors.values()), name
        for n in lazy.names:
            assert torch.equal(lazy[n], kept[n]), (name, n)


def test_memory_held_is_matrices_and_stream(decoders):
    model = decoders["llama_gqa"] if "llama_gqa" in decoders else next(iter(decoders.values()))
    lazy = model.trace(TEXTS)
    kept = model.trace(TEXTS, replay=False)
    # what stays: per layer the scores (B, H, L, L) and the stream; the rest is replayed
    B, L = lazy.input_ids.shape
    c = model.config
    matrices = c.n_layers * B * c.n_heads * L * L * 4
    assert matrices <= lazy.nbytes < kept.nbytes
    assert lazy.nbytes < matrices + (2 * c.n_layers + 8) * B * L * max(c.d_model, c.d_ff or 0) * 4


def test_save_load_of_a_replayed_trace(tiny_models, tmp_path):
    model = tiny_models["bert"]
    lazy = model.trace(TEXTS)
    back = attnscope.Trace.load(lazy.save(tmp_path / "t"))
    kept = model.trace(TEXTS, replay=False)
    for n in kept.names:
        assert torch.equal(back[n], kept[n]), n


def test_hooks_and_grad_keep_tensors(tiny_models):
    model = tiny_models["gpt2"]
    tr = model.trace(TEXTS, hooks={"layers.0.attn.z": lambda t, n: t * 2})
    assert not any(isinstance(t, Replayed) for t in tr._tensors.values())
    tr = model.trace(TEXTS[0], grad=True)
    assert not any(isinstance(t, Replayed) for t in tr._tensors.values())
    tr = model.trace(TEXTS[0], names=["layers.*.ffn.out"])
    assert not any(isinstance(t, Replayed) for t in tr._tensors.values())
    tr = model.trace(TEXTS[0], names=["layers.*.ffn.out"], replay=True)
    assert all(isinstance(t, Replayed) for t in tr._tensors.values())
    # the same pass as a trace of those names alone (no L×S matrix asked: the fused path)
    assert torch.equal(tr["layers.1.ffn.out"], model.trace(TEXTS[0], names=["layers.*.ffn.out"])["layers.1.ffn.out"])


def test_replay_with_hooks_is_one_sentence(tiny_models):
    model = tiny_models["gpt2"]
    with pytest.raises(InputError, match="replay=True .* cannot be combined with hooks"):
        model.trace(TEXTS, hooks={"layers.0.attn.z": lambda t, n: None}, replay=True)
    with pytest.raises(InputError, match="grad=True"):
        model.trace(TEXTS, grad=True, replay=True)


def test_hooks_attached_after_the_trace_do_not_change_what_it_reads(tiny_models):
    model = tiny_models["gpt2"]
    kept = model.trace(TEXTS, replay=False)
    lazy = model.trace(TEXTS)
    with model.hooks({"layers.*.attn.z": lambda t, n: t * 0}):
        assert torch.equal(lazy["layers.1.ffn.out"], kept["layers.1.ffn.out"])
        assert torch.equal(lazy["layers.0.attn.z"], kept["layers.0.attn.z"])
    assert torch.equal(lazy["layers.0.attn.merged"], kept["layers.0.attn.merged"])


def test_weights_changed_after_the_trace_are_one_sentence(tiny_dirs):
    model = attnscope.load(tiny_dirs["gpt2"])
    lazy = model.trace(TEXTS)
    q0 = lazy["layers.0.attn.q"]
    with torch.no_grad():
        next(model.layers[1].parameters()).mul_(2)  # in place: its version counter moves
    assert torch.equal(lazy["layers.0.attn.q"], q0)  # layer 0 is as it was
    with pytest.raises(InputError, match="weights of layers.1 changed"):
        lazy["layers.1.attn.q"]


def test_a_full_trace_inside_a_hooks_block_reads_what_the_hooked_pass_computed(tiny_models):
    """A hook attached outside the call (``model.hooks``) changes the pass, so the layers cannot be
    run again on read without it: a full trace inside the block keeps its tensors. The replay ran
    the layer with the block's hooks set aside, so z showed the unhooked head (and every later step
    of that layer the unhooked values), while the output had the hook."""
    model = tiny_models["gpt2"]

    def zero(t, n):
        return torch.zeros_like(t)
    expected = model.trace(TEXTS, hooks={"layers.0.attn.z[1]": zero})  # the hooks given to the call
    with model.hooks({"layers.0.attn.z[1]": zero}):
        inside = model.trace(TEXTS)
        assert not any(isinstance(t, Replayed) for t in inside._tensors.values())
        with pytest.raises(InputError, match="replay=True .* cannot be combined with hooks"):
            model.trace(TEXTS, replay=True)
    assert torch.count_nonzero(inside["layers.0.attn.z"][:, 1]) == 0
    for n in expected.names:
        assert torch.equal(inside[n], expected[n]), n


def test_a_torch_hook_inside_a_layer_keeps_the_tensors(minilm):
    """A torch forward hook on a module inside a layer (nnsight's way, ``layers.2.attn``) changes
    the pass as a hook point's hook does: a full trace that replayed layer 2 on read showed, once the
    hook was removed, the unhooked layer (MiniLM's attn_resid off by 1.17, ffn.out by 2.28)."""
    handle = minilm.layers[2].attn.register_forward_hook(lambda module, args, out: out * 0)
    try:
        tr = minilm.trace(TEXTS)
        kept = minilm.trace(TEXTS, replay=False)
        with pytest.raises(InputError, match="replay=True .* cannot be combined with hooks"):
            minilm.trace(TEXTS, replay=True)
    finally:
        handle.remove()
    assert not any(isinstance(t, Replayed) for t in tr._tensors.values())
    for n in ("layers.2.attn.out", "layers.2.attn_resid", "layers.2.ffn.out"):
        assert torch.equal(tr[n], kept[n]), n
    assert minilm.trace(TEXTS).replays  # without the hook: replayed again
